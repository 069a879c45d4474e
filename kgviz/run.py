"""One method run on one question: retrieval with a trace, then the shared answer step.

A method that fails returns a ``Run`` with its partial trace and a readable ``error`` instead of
raising, so one broken method never takes the others down in a comparison. Invalid input (unknown
method, preset or parameter, empty question) still raises: nothing has run yet.

One budget per run. A method whose context is filled under a token budget names that param in a
``budget_param`` class attribute (KET's λ ``context_limit``, kg-rag's ``max_context_tokens``,
text-rag's ``budget_tokens``). The answer step uses that budget unchanged, so the context a preset
asks for is the context the answer sees (KET's 'paper' preset, λ = 12,000, used to lose its keyword
channel to a fixed 4,000-token answer cut, undoing the θ split). An explicit ``budget_tokens``
(``kgviz ask/eval --budget-tokens``, the Compare page) overrides it for every method; a method
without a budget param gets ``kgviz.answer.DEFAULT_BUDGET_TOKENS``. ``answer_budget`` resolves the
request's budget once into a ``Budget`` (tokens and which of the three applied); the answer step
uses it, and the ``Run`` keeps it with the step's cut (``answer_cut``: what was kept, the tokens
used, the rule), so the funnel and the evaluation read them instead of re-deriving them.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from kgviz.answer import DEFAULT_BUDGET_TOKENS, Budget, BudgetCut, answer_with_cut
from kgviz.errors import ConfigError, KgvizError
from kgviz.methods import algorithm_lines
from kgviz.methods.base import Method, MethodContext, RetrievedContext, TraceStep, Tracer, params_to_dict
from kgviz.methods.registry import get_method
from kgviz.types import Usage


@dataclass
class Run:
    method: str
    question: str
    params: dict[str, Any]
    context: RetrievedContext
    answer: str
    trace: list[TraceStep]
    usage: Usage  # total; per step in trace[i].usage
    mode: str  # "offline" or "provider:model"
    error: str = ""  # empty when the run succeeded
    seconds: float = 0.0  # retrieval + answer, wall clock
    retrieval_seconds: float = 0.0  # retrieval only (no answer step)
    preset: str = ""
    budget: Budget | None = None  # the answer step's budget, resolved once (answer_budget)
    answer_cut: BudgetCut | None = None  # what the answer step kept; None when it did not run to the end

    @property
    def ok(self) -> bool:
        return not self.error

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method, "question": self.question, "params": dict(self.params),
            "preset": self.preset, "context": self.context.to_dict(), "answer": self.answer,
            "trace": [s.to_dict() for s in self.trace], "usage": self.usage.to_dict(), "mode": self.mode,
            "error": self.error, "seconds": self.seconds, "retrieval_seconds": self.retrieval_seconds,
            "budget": None if self.budget is None else self.budget._asdict(),
            "answer_cut": None if self.answer_cut is None else self.answer_cut.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Run":
        return cls(
            method=d["method"], question=d["question"], params=dict(d.get("params", {})),
            context=RetrievedContext.from_dict(d.get("context", {})), answer=d.get("answer", ""),
            trace=[TraceStep.from_dict(s) for s in d.get("trace", [])], usage=Usage.from_dict(d.get("usage", {})),
            mode=d.get("mode", ""), error=d.get("error", ""), seconds=float(d.get("seconds", 0.0)),
            retrieval_seconds=float(d.get("retrieval_seconds", 0.0)), preset=d.get("preset", ""),
            budget=Budget(int(d["budget"]["tokens"]), str(d["budget"]["source"])) if d.get("budget") else None,
            answer_cut=BudgetCut.from_dict(d["answer_cut"]) if d.get("answer_cut") else None,
        )


def preset_name(method: Method, preset: str | None) -> str:
    """The preset's own name: an old name the method still accepts (``preset_aliases``, e.g.
    kg-rag's 'paper' for 'reconstruction') is read as the name it now has; "" for none."""
    return getattr(method, "preset_aliases", {}).get(preset, preset) if preset else ""


def resolve_params(method: Method, params: Any = None, preset: str | None = None) -> Any:
    """The method's Params: a preset (or the defaults), with ``params`` applied on top.

    ``params`` may be a Params instance (used as is), a dict of field overrides (values given as
    strings, e.g. from the CLI, are converted to the field's type) or None.
    """
    preset = preset_name(method, preset)
    if preset:
        if preset not in method.presets:
            raise ConfigError(f"{method.name} has no preset {preset!r}; "
                              f"presets: {', '.join(method.presets) or '(none)'}")
        base = method.presets[preset]
    else:
        base = method.Params()
    if params is None:
        return base
    if isinstance(params, method.Params):
        return params
    if not isinstance(params, Mapping):
        raise ConfigError(f"params for {method.name} must be {method.Params.__name__} or a dict, "
                          f"not {type(params).__name__}")
    known = {f.name: f for f in dataclasses.fields(method.Params)}
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ConfigError(f"{method.name} has no parameter {', '.join(unknown)}; "
                          f"parameters: {', '.join(known) or '(none)'}")
    changes = {k: _coerce(method.name, k, v, getattr(base, k)) for k, v in params.items()}
    return dataclasses.replace(base, **changes)


def _coerce(method: str, key: str, value: Any, default: Any) -> Any:
    if not isinstance(value, str) or isinstance(default, str):
        return value
    try:
        if isinstance(default, bool):
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
    except ValueError:
        raise ConfigError(f"{method}.{key} must be a {type(default).__name__}, got {value!r}") from None
    return value


def context_budget(method: Method, params: Any) -> tuple[int, str] | None:
    """(tokens, param name) of the budget the method's own params give its context, or None when
    the method declares no ``budget_param`` or its value is 0 (kg-infused: 0 = stop at the note, as
    in the paper)."""
    name = getattr(method, "budget_param", None)
    if not name:
        return None
    value = getattr(params, name, None)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{method.name} names {name!r} as its context budget, but its params have no "
                          f"integer {name!r}")
    return (value, name) if value > 0 else None


def answer_budget(method: Method, params: Any, budget_tokens: int | None) -> Budget:
    """The answer step's budget: an explicit ``budget_tokens`` wins, else the method's own context
    budget, else DEFAULT_BUDGET_TOKENS (``source`` says which)."""
    if budget_tokens is not None:
        return Budget(int(budget_tokens), "explicit")
    own = context_budget(method, params)
    if own is not None:
        return Budget(own[0], f"param:{own[1]}")
    return Budget(DEFAULT_BUDGET_TOKENS, "default")


def run_method(name: str, question: str, ctx: MethodContext, params: Any = None, *,
               preset: str | None = None, budget_tokens: int | None = None) -> Run:
    """Retrieve with ``name`` and answer with the shared answer step. Never raises for a failure
    inside the method or the answer step: the Run carries the error and the partial trace.
    ``budget_tokens`` None: the answer step uses the method's own context budget (module doc)."""
    if not question.strip():
        raise ConfigError("the question is empty")
    method = get_method(name)
    p = resolve_params(method, params, preset)
    budget = answer_budget(method, p, budget_tokens)
    tracer = Tracer(ctx.reasoner)
    context = RetrievedContext()
    cut: BudgetCut | None = None
    text = ""
    error = ""
    t0 = time.perf_counter()
    t_retrieved: float | None = None  # stays None when retrieval itself failed
    try:
        context = method.retrieve(question, ctx, p, tracer)
        t_retrieved = time.perf_counter() - t0
        text, cut = answer_with_cut(question, context, ctx.reasoner, tracer, budget, no_context=method.no_context)
    except KgvizError as exc:
        error = exc.user_message()
    except Exception as exc:  # an unexpected bug in one method must not stop the comparison
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - t0
    if error and not (tracer.steps and tracer.steps[-1].kind == "error"):
        tracer.step("error", f"{name} failed", error)
    algorithm_lines.annotate(name, tracer.steps)  # each step names its line of the paper's algorithm
    return Run(method=name, question=question, params=params_to_dict(p), context=context, answer=text,
               trace=tracer.steps, usage=tracer.usage, mode=ctx.reasoner.mode, error=error,
               seconds=seconds, retrieval_seconds=seconds if t_retrieved is None else t_retrieved,
               preset=preset_name(method, preset), budget=budget, answer_cut=cut)


def run_methods(names: Sequence[str], question: str, ctx: MethodContext,
                params: Mapping[str, Any] | None = None, *, presets: Mapping[str, str] | None = None,
                budget_tokens: int | None = None) -> list[Run]:
    """``run_method`` for each name in order. ``params`` / ``presets`` map method name -> value.
    Every name and parameter is validated before the first method runs."""
    params = params or {}
    presets = presets or {}
    for n in list(params) + list(presets):
        if n not in names:
            raise ConfigError(f"params or preset given for {n!r}, which is not among the methods run: "
                              f"{', '.join(names)}")
    for n in names:  # fail fast on typos before spending any LLM calls
        resolve_params(get_method(n), params.get(n), presets.get(n))
    return [run_method(n, question, ctx, params.get(n), preset=presets.get(n), budget_tokens=budget_tokens)
            for n in names]
