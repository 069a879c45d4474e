"""The shared answer step: every method's retrieved context is answered with the same prompt
(kgviz.prompts.answer.ANSWER) under the same budget rule, so methods differ only in what they
retrieve.

Budget rule: context items are taken in the order the method ranked them, counted with
``kgviz.text.count_tokens`` (item text only); the first item that does not fit is cut to the room
left (when at least ``MIN_CUT_TOKENS`` remain) and every later item is dropped. The answer step in
the trace records what was kept, cut and dropped.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kgviz.methods.base import ContextItem, NodeRef, RetrievedContext, TraceStep, Tracer
from kgviz.prompts.answer import INSUFFICIENT
from kgviz.reasoning import Reasoner
from kgviz.text import count_tokens, token_spans

DEFAULT_BUDGET_TOKENS = 4000  # ours: above every method's default context, so defaults never cut
MIN_CUT_TOKENS = 16  # ours: a shorter cut-off fragment is noise rather than evidence

_KIND_TABLE = {"chunk": "Chunk", "subchunk": "SubChunk", "triple": "Triple", "entity": "Entity",
               "document": "Document", "keyword": "Keyword"}


@dataclass
class BudgetCut:
    items: list[ContextItem]
    budget_tokens: int
    used_tokens: int = 0
    truncated: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    def to_data(self) -> dict[str, Any]:
        return {"budget_tokens": self.budget_tokens, "used_tokens": self.used_tokens,
                "kept": [i.id for i in self.items], "truncated": self.truncated, "dropped": self.dropped}


def truncate_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` with at most ``max_tokens`` tokens, cut at a token boundary."""
    if max_tokens <= 0:
        return ""
    spans = token_spans(text)
    return text if len(spans) <= max_tokens else text[: spans[max_tokens - 1][1]]


def fit_budget(items: list[ContextItem], budget_tokens: int) -> BudgetCut:
    cut = BudgetCut([], budget_tokens)
    for pos, item in enumerate(items):
        n = count_tokens(item.text)
        if cut.used_tokens + n <= budget_tokens:
            cut.items.append(replace(item, n_tokens=n))
            cut.used_tokens += n
            continue
        room = budget_tokens - cut.used_tokens
        if room >= MIN_CUT_TOKENS:
            text = truncate_tokens(item.text, room)
            cut.items.append(replace(item, text=text, n_tokens=count_tokens(text)))
            cut.used_tokens += cut.items[-1].n_tokens
            cut.truncated.append(item.id)
        else:
            cut.dropped.append(item.id)
        cut.dropped.extend(i.id for i in items[pos + 1 :])
        break
    return cut


def answer(question: str, context: RetrievedContext, reasoner: Reasoner, tracer: Tracer,
           budget_tokens: int | None = None, *, no_context: bool = False) -> str:
    """Answer ``question`` from ``context`` and record one "answer" step on ``tracer``.

    ``no_context`` (the no-retrieval baseline) asks the model from its own memory (NO_CONTEXT);
    offline that always abstains, because heuristics have no memory.
    """
    budget = DEFAULT_BUDGET_TOKENS if budget_tokens is None else int(budget_tokens)
    cut = fit_budget([] if no_context else context.items, budget)
    if not no_context and not cut.items:
        # nothing retrieved: real models asked over "(no context)" invent an answer rather than
        # abstain, so the step abstains by rule and asks no model (ours)
        step = tracer.step("answer", "Answer", "the context is empty: abstained without asking the model",
                           data=cut.to_data())
        step.data["abstained"] = True
        step.data["rule"] = "empty context"
        return INSUFFICIENT
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
    step: TraceStep = tracer.step("answer", "Answer", _describe(cut, no_context, res.value), llm=res.call,
                                  nodes=nodes, data=cut.to_data())
    step.data["abstained"] = res.value == INSUFFICIENT
    return str(res.value)


def _describe(cut: BudgetCut, no_context: bool, value: Any) -> str:
    if no_context:
        return "no retrieval: the model answers from its own memory (prompt NO_CONTEXT)"
    text = f"{len(cut.items)} context items, {cut.used_tokens}/{cut.budget_tokens} tokens"
    if cut.truncated:
        text += f"; cut to fit: {', '.join(cut.truncated)}"
    if cut.dropped:
        text += f"; dropped over budget: {len(cut.dropped)}"
    return text + ("; answer: insufficient information" if value == INSUFFICIENT else "")
