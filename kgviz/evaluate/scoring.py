"""Score one Run against its gold answers: metrics, claim verdict, gold funnel.

The batch runner calls a ``Scorer``; the default one wires kgviz.verify (claims + judge, gold
funnel, SQuAD metrics). Tests pass their own scorer to exercise the runner in isolation.

Coverage is measured on the context the shared answer step actually saw, i.e. after the
context budget cut (kgviz.answer.fit_budget), so methods compared at equal budgets are compared
on equal evidence.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from kgviz.answer import DEFAULT_BUDGET_TOKENS, fit_budget
from kgviz.evaluate.qa import QAItem
from kgviz.methods.base import MethodContext, RetrievedContext
from kgviz.methods.registry import get_method
from kgviz.prompts.answer import INSUFFICIENT
from kgviz.run import Run
from kgviz.verify.metrics import score

METRICS = ("em", "f1", "acc", "coverage")


@dataclass
class Scored:
    metrics: dict[str, float]
    hallucinated: bool
    abstained: bool
    verdict: dict[str, Any] = field(default_factory=dict)
    funnel: dict[str, Any] = field(default_factory=dict)


Scorer = Callable[[Run, QAItem, MethodContext, "int | None"], Scored]  # last: the context budget


def answered_context(run: Run, budget_tokens: int | None) -> RetrievedContext:
    """The context items the answer step kept (none for a no-context method)."""
    if bool(getattr(get_method(run.method), "no_context", False)):
        return RetrievedContext()
    budget = DEFAULT_BUDGET_TOKENS if budget_tokens is None else int(budget_tokens)
    return RetrievedContext(items=fit_budget(list(run.context.items), budget).items)


def is_abstention(answer: str) -> bool:
    return answer.strip().lower().rstrip(".") == INSUFFICIENT


def metrics_for(run: Run, item: QAItem, budget_tokens: int | None) -> dict[str, float]:
    ctx_text = answered_context(run, budget_tokens).render()
    return score(run.answer, ctx_text, list(item.answers)).to_dict()


def default_scorer(run: Run, item: QAItem, ctx: MethodContext, budget_tokens: int | None = None) -> Scored:
    metrics = metrics_for(run, item, budget_tokens)
    abstained = is_abstention(run.answer) or not run.answer.strip()
    return Scored(metrics=metrics, hallucinated=False, abstained=abstained)
