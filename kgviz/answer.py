"""The shared answer step: every method's retrieved context is answered with the same prompt
(kgviz.prompts.answer.ANSWER) under the same budget rule, so methods differ only in what they
retrieve.

Budget rule: context items are taken in the order the method ranked them, counted with
``kgviz.text.count_tokens`` (item text only); the first item that does not fit is cut to the room
left (when at least ``MIN_CUT_TOKENS`` remain) and every later item is dropped. The answer step in
the trace records what was kept, cut and dropped, and where the budget came from: ``kgviz.run``
passes the method's own context budget (its ``budget_param``) unless a budget is given explicitly,
so a method's context reaches the answer unchanged.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping, NamedTuple

from kgviz.methods.base import ContextItem, NodeRef, RetrievedContext, TraceStep, Tracer
from kgviz.methods.budget import cut_at_first_overflow
from kgviz.prompts.answer import INSUFFICIENT
from kgviz.reasoning import Reasoner
from kgviz.text import count_tokens, token_spans

# ours: the budget of a method that declares none (kg-retriever caps T triples) or sets its own to 0
# (kg-infused by default hands over a note); the others bring their own (kgviz.run.answer_budget)
DEFAULT_BUDGET_TOKENS = 4000
MIN_CUT_TOKENS = 16  # ours: a shorter cut-off fragment is noise rather than evidence

_KIND_TABLE = {"chunk": "Chunk", "subchunk": "SubChunk", "triple": "Triple", "entity": "Entity",
               "document": "Document", "keyword": "Keyword"}


# the budget rule, as a Run's answer cut names it (the module docstring says it in full)
CUT_POLICY = f"first overflow cut to the room left (at least {MIN_CUT_TOKENS} tokens), later items dropped"


class Budget(NamedTuple):
    """The answer step's context budget for one run, resolved once by ``kgviz.run.answer_budget``:
    ``tokens``, and ``source`` "explicit" (given for every method), "param:<name>" (the method's
    own context budget) or "default" (DEFAULT_BUDGET_TOKENS)."""

    tokens: int
    source: str


@dataclass
class BudgetCut:
    """What the answer step kept of a context: ``items`` (the last one possibly cut short),
    ``used_tokens`` of ``budget_tokens``, the ids cut short and dropped, and the rule applied.
    ``kgviz.run.Run.answer_cut`` keeps it, so nothing re-derives it from the trace."""

    items: list[ContextItem]
    budget_tokens: int
    used_tokens: int = 0
    truncated: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    budget_from: str = ""  # "explicit" | "param:<name>" | "default" (kgviz.run.answer_budget)
    policy: str = CUT_POLICY

    def to_data(self) -> dict[str, Any]:
        """The answer step's trace data (ids only; the kept texts are in ``to_dict``)."""
        return {"budget_tokens": self.budget_tokens, "budget_from": self.budget_from, "used_tokens": self.used_tokens,
                "kept": [i.id for i in self.items], "truncated": self.truncated, "dropped": self.dropped}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BudgetCut":
        return cls(items=[ContextItem(**i) for i in d.get("items", [])], budget_tokens=int(d["budget_tokens"]),
                   used_tokens=int(d.get("used_tokens", 0)), truncated=list(d.get("truncated", [])),
                   dropped=list(d.get("dropped", [])), budget_from=str(d.get("budget_from", "")),
                   policy=str(d.get("policy", CUT_POLICY)))


def truncate_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` with at most ``max_tokens`` tokens, cut at a token boundary."""
    if max_tokens <= 0:
        return ""
    spans = token_spans(text)
    return text if len(spans) <= max_tokens else text[: spans[max_tokens - 1][1]]


def fit_budget(items: list[ContextItem], budget_tokens: int) -> BudgetCut:
    """The context the answer step sees: items in order while they fit; the first that overflows
    is cut to the room left (when at least MIN_CUT_TOKENS), everything after it is dropped."""
    def shorten(item: ContextItem, room: int) -> tuple[ContextItem, int]:
        text = truncate_tokens(item.text, room)
        n = count_tokens(text)
        return replace(item, text=text, n_tokens=n), n

    sized = [(replace(i, n_tokens=n), n) for i, n in ((i, count_tokens(i.text)) for i in items)]
    fit = cut_at_first_overflow(sized, budget_tokens, MIN_CUT_TOKENS, shorten)
    return BudgetCut(fit.kept, budget_tokens, fit.used, truncated=[i.id for i in fit.cut],
                     dropped=[i.id for i in fit.over])


def answer(question: str, context: RetrievedContext, reasoner: Reasoner, tracer: Tracer,
           budget_tokens: int | None = None, *, no_context: bool = False, budget_from: str = "") -> str:
    """Answer ``question`` from ``context`` and record one "answer" step on ``tracer``.

    ``no_context`` (the no-retrieval baseline) asks the model from its own memory (NO_CONTEXT);
    offline that always abstains, because heuristics have no memory. ``budget_from`` says where
    ``budget_tokens`` came from ("explicit", "param:<name>", "default"; see kgviz.run), for the trace.
    """
    budget = Budget(DEFAULT_BUDGET_TOKENS if budget_tokens is None else int(budget_tokens),
                    budget_from or ("default" if budget_tokens is None else "explicit"))
    return answer_with_cut(question, context, reasoner, tracer, budget, no_context=no_context)[0]


def answer_with_cut(question: str, context: RetrievedContext, reasoner: Reasoner, tracer: Tracer, budget: Budget, *,
                    no_context: bool = False) -> tuple[str, BudgetCut]:
    """``answer``, with the run's resolved ``budget``, returning the answer and what the step kept."""
    cut = fit_budget([] if no_context else context.items, budget.tokens)
    cut.budget_from = budget.source
    if not no_context and not cut.items:
        # nothing retrieved: real models asked over "(no context)" invent an answer rather than
        # abstain, so the step abstains by rule and asks no model (ours)
        step = tracer.step("answer", "Answer", "the context is empty: abstained without asking the model",
                           data=cut.to_data())
        step.data["abstained"] = True
        step.data["rule"] = "empty context"
        return INSUFFICIENT, cut
    rendered = RetrievedContext(items=cut.items).render()
    inputs: dict[str, Any] = {"question": question, "context": rendered,
                              "passages": [i.text for i in cut.items], "no_context": no_context}
    try:
        res = reasoner.run("answer", step="answer", **inputs)
    except Exception as exc:
        # keep the raw reply (if any) in the trace before the run reports the failure
        tracer.step("error", "Answer failed", str(exc), llm=getattr(exc, "call", None), data=cut.to_data())
        raise
    if no_context:
        res.call.prompt_name = "NO_CONTEXT"
    nodes = [NodeRef(i.id, _KIND_TABLE[i.kind], "chosen", label=i.source, score=i.score)
             for i in cut.items if i.kind in _KIND_TABLE]
    step = tracer.step("answer", "Answer", _describe(cut, no_context, res.value), llm=res.call,
                       nodes=nodes, data=cut.to_data())
    step.data["abstained"] = res.value == INSUFFICIENT
    return str(res.value), cut


def _describe(cut: BudgetCut, no_context: bool, value: Any) -> str:
    if no_context:
        return "no retrieval: the model answers from its own memory (prompt NO_CONTEXT)"
    source = {"explicit": "a budget given for every method", "default": "the default budget"}.get(
        cut.budget_from, f"the method's own {cut.budget_from.partition(':')[2]}")
    text = f"{len(cut.items)} context items, {cut.used_tokens}/{cut.budget_tokens} tokens ({source})"
    if cut.truncated:
        text += f"; cut to fit: {', '.join(cut.truncated)}"
    if cut.dropped:
        text += f"; dropped over budget: {len(cut.dropped)}"
    return text + ("; answer: insufficient information" if value == INSUFFICIENT else "")
