"""One method run on one question: retrieval with a trace, then the shared answer step.

A method that fails returns a ``Run`` with its partial trace and a readable ``error`` instead of
raising, so one broken method never takes the others down in a comparison. Invalid input (unknown
method, preset or parameter, empty question) still raises: nothing has run yet.

One budget per run. A method whose context is filled under a token budget names that param in a
``budget_param`` class attribute (KET's λ ``context_limit``, kg-rag's ``max_context_tokens``,
text-rag's ``budget_tokens``). The answer step uses that budget unchanged, so the context a preset
asks for is the context the answer sees (KET's 'paper' preset, λ = 12,000, used to lose its keyword
channel to a fixed 4,000-token answer cut, undoing the θ split). An explicit ``budget_tokens``
(``kgviz ask --budget-tokens``, the Compare page) overrides it for every method; a method
without a budget param gets ``kgviz.answer.DEFAULT_BUDGET_TOKENS``. The equal-budget evaluation
(``kgviz eval --budget-tokens``) asks for more with ``equal_budget``: the budget is each method's
own context budget too (its ``budget_param`` field reads it), so the caller never writes it into
params. ``resolve_run`` resolves a request once into the Params and a ``Budget`` (tokens and which
of the three applied); the answer step
uses it, and the ``Run`` keeps it with the step's cut (``answer_cut``: what was kept, the tokens
used, the rule), so the funnel and the evaluation read them instead of re-deriving them.

Several methods on one question (``run_methods``, ``iter_runs``) run in a thread pool: each run
has its own Tracer, the store hands every thread its own Kùzu connection and the usage ledger is
locked, so they share the MethodContext (as batch evaluation does). They also share read-only
work through ``shared_work``: an embedding asked for by several methods (the question's, above
all) is computed once per call. A run's result never depends on the others or on the order they
finish in: a test compares concurrent and sequential runs field by field.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

import numpy as np

from kgviz.answer import DEFAULT_BUDGET_TOKENS, Budget, BudgetCut, answer_with_cut
from kgviz.errors import ConfigError, KgvizError
from kgviz.methods import algorithm_lines
from kgviz.methods.base import Method, MethodContext, RetrievedContext, TraceStep, Tracer, params_to_dict
from kgviz.methods.registry import get_method
from kgviz.reasoning import Reasoner
from kgviz.types import Usage

# Methods run at once by run_methods / iter_runs (ours). Offline, most of a method is Python
# holding the GIL, so more threads mostly interleave; Kùzu queries, numpy and provider calls
# release it, and with a remote LLM the runs wait on the network side by side.
RUN_WORKERS = 4


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


def equal_budget_params(method: Method, params: object, resolved: Any, tokens: int) -> Any:
    """``resolved`` (the method's Params from ``params`` and its preset) with its ``budget_param``
    reading ``tokens``; unchanged for a method that stops on its own. An override in ``params``
    naming the budget field with another value contradicts the equal budget: ConfigError rather
    than one method silently measured at another size."""
    name = getattr(method, "budget_param", None)
    if name is None:
        return resolved
    if isinstance(params, Mapping) and name in params and str(params[name]) != str(tokens):
        raise ConfigError(f"{method.name}.{name}={params[name]} contradicts the equal context budget {tokens}",
                          hint=f"drop the {name} override, or run without --budget-tokens")
    return dataclasses.replace(resolved, **{name: tokens})


def resolve_run(method: Method, params: object = None, preset: str | None = None, budget_tokens: int | None = None,
                *, equal_budget: bool = False) -> tuple[Any, Budget]:
    """A run request resolved once: the method's Params and the answer step's Budget. With
    ``equal_budget`` (the equal-budget evaluation) ``budget_tokens`` is the method's own context
    budget too (``equal_budget_params``); otherwise it caps the answer step only (module doc)."""
    p = resolve_params(method, params, preset)
    if equal_budget:
        if budget_tokens is None:
            raise ConfigError("an equal context budget needs its number of tokens")
        p = equal_budget_params(method, params, p, budget_tokens)
    return p, answer_budget(method, p, budget_tokens)


def run_method(name: str, question: str, ctx: MethodContext, params: Any = None, *,
               preset: str | None = None, budget_tokens: int | None = None, equal_budget: bool = False) -> Run:
    """Retrieve with ``name`` and answer with the shared answer step. Never raises for a failure
    inside the method or the answer step: the Run carries the error and the partial trace.
    ``budget_tokens`` None: the answer step uses the method's own context budget; ``equal_budget``:
    ``budget_tokens`` is the method's context budget as well (``resolve_run``, module doc)."""
    if not question.strip():
        raise ConfigError("the question is empty")
    method = get_method(name)
    p, budget = resolve_run(method, params, preset, budget_tokens, equal_budget=equal_budget)
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


class SharedEmbedder:
    """An embedder that remembers what it embedded for the runs of one call, so the question's
    vector (embedded by kg-infused, kg-retriever, KET, text-rag, the offline answerer, ...) is
    computed once. Keyed on the whole list of texts: a text embedded inside another batch is not
    reused, since a neural embedder's vector can depend on its batch (padding). Hands out
    copies, so a method that changes its array in place cannot change another's."""

    MAX_ENTRIES = 256  # ours: a comparison embeds a few dozen distinct batches; cap the rest

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.id = inner.id
        self.dim = inner.dim
        self._memo: dict[tuple[str, ...], np.ndarray] = {}
        self._lock = threading.Lock()
        self.hits = 0

    def __repr__(self) -> str:
        return f"SharedEmbedder({self.inner!r})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        key = tuple(texts)
        with self._lock:
            found = self._memo.get(key)
            if found is not None:
                self.hits += 1
                return found.copy()
        vectors = np.asarray(self.inner.embed(texts))
        with self._lock:
            if len(self._memo) < self.MAX_ENTRIES:
                self._memo[key] = vectors.copy()
        return vectors


def shared_work(ctx: MethodContext) -> MethodContext:
    """``ctx`` with an embedder shared by the runs of one call (SharedEmbedder); the store, LLM,
    ledger and prices are the same objects. A context that already shares is returned as is."""
    r = ctx.reasoner
    if isinstance(r.embedder, SharedEmbedder):
        return ctx
    return MethodContext(ctx.store, Reasoner(r.llm, SharedEmbedder(r.embedder), ledger=r.ledger, prices=r.prices))


def validate_names(names: Sequence[str], params: Mapping[str, Any], presets: Mapping[str, str]) -> None:
    """Every method, preset and parameter exists (a ConfigError naming the first that does not)."""
    for n in list(params) + list(presets):
        if n not in names:
            raise ConfigError(f"params or preset given for {n!r}, which is not among the methods run: "
                              f"{', '.join(names)}")
    for n in names:  # fail fast on typos before spending any LLM calls
        resolve_params(get_method(n), params.get(n), presets.get(n))


def iter_runs(names: Sequence[str], question: str, ctx: MethodContext,
              params: Mapping[str, Any] | None = None, *, presets: Mapping[str, str] | None = None,
              budget_tokens: int | None = None, workers: int = RUN_WORKERS) -> Iterator[tuple[int, Run]]:
    """(position in ``names``, Run) for each method, in the order they finish; ``workers`` at a
    time (1: one after another, in order). Everything is validated before the first method runs.
    A failing method yields its failed Run like any other; leaving the loop early cancels the
    runs not yet started (those already running finish in the background)."""
    params = params or {}
    presets = presets or {}
    validate_names(names, params, presets)
    if not question.strip():
        raise ConfigError("the question is empty")
    ctx = shared_work(ctx)

    def one(i: int) -> Run:
        n = names[i]
        return run_method(n, question, ctx, params.get(n), preset=presets.get(n), budget_tokens=budget_tokens)

    yield from as_finished(one, len(names), workers)


T = TypeVar("T")


def as_finished(work: Callable[[int], T], count: int, workers: int = RUN_WORKERS) -> Iterator[tuple[int, T]]:
    """(i, work(i)) for i in range(count), in the order they finish, ``workers`` threads at a time
    (1: in order, in the calling thread). An exception from ``work`` is raised here, in the
    caller's thread. Leaving the loop early cancels the work not yet started."""
    if workers <= 1 or count <= 1:
        for i in range(count):
            yield i, work(i)
        return
    pool = ThreadPoolExecutor(max_workers=min(workers, count), thread_name_prefix="kgviz-run")
    try:
        futures: dict[Future[T], int] = {pool.submit(work, i): i for i in range(count)}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def run_methods(names: Sequence[str], question: str, ctx: MethodContext,
                params: Mapping[str, Any] | None = None, *, presets: Mapping[str, str] | None = None,
                budget_tokens: int | None = None, workers: int = RUN_WORKERS) -> list[Run]:
    """``run_method`` for each name, ``workers`` at a time (``iter_runs``); the runs are returned
    in the order of ``names``. ``params`` / ``presets`` map method name -> value. Every name and
    parameter is validated before the first method runs."""
    runs: list[Run | None] = [None] * len(names)
    for i, run in iter_runs(names, question, ctx, params, presets=presets, budget_tokens=budget_tokens,
                            workers=workers):
        runs[i] = run
    return [r for r in runs if r is not None]
