"""Score one Run against its gold answers: metrics, claim verdict, gold funnel (kgviz.verify).

The batch runner calls a ``Scorer``; ``VerifyScorer`` is the default. Tests pass their own scorer
to exercise the runner in isolation.

Coverage is measured on the context the shared answer step actually saw, i.e. after the context
budget cut (kgviz.verify.funnel.kept_text), so methods compared at equal budgets are compared on
equal evidence. The no-context baseline has no context: coverage 0.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from kgviz.evaluate.qa import QAItem
from kgviz.methods.base import MethodContext
from kgviz.methods.registry import get_method
from kgviz.run import Run
from kgviz.verify.funnel import GoldPresence, funnel_row, gold_presence, kept_text
from kgviz.verify.judge import verify_run
from kgviz.verify.metrics import score

METRICS = ("em", "f1", "acc", "coverage")


@dataclass
class Scored:
    metrics: dict[str, float]
    hallucinated: bool
    abstained: bool
    verdict: dict[str, Any] = field(default_factory=dict)
    funnel: dict[str, Any] = field(default_factory=dict)


# (run, item, method context, context budget) -> Scored
Scorer = Callable[[Run, QAItem, MethodContext, "int | None"], Scored]


def answered_text(run: Run) -> str:
    """The context text the answer step kept ("" for a no-context method or a failed retrieval)."""
    if get_method(run.method).no_context:
        return ""
    return kept_text(run)


def metrics_for(run: Run, item: QAItem) -> dict[str, float]:
    return score("" if run.error else run.answer, answered_text(run), list(item.answers)).to_dict()


class VerifyScorer:
    """Metrics, the claim verdict (verify_run through the run's reasoner: an LLM judge, or the
    offline check) and the gold funnel. The gold's presence in the corpus and graph is computed
    once per question and shared by every method. A failed run has no metrics at all (not zeros:
    kgviz.evaluate.report leaves it out of every mean and counts it as a failure with its error)."""

    def __init__(self) -> None:
        self._presence: dict[str, GoldPresence] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def presence(self, item: QAItem, ctx: MethodContext) -> GoldPresence:
        with self._guard:
            lock = self._locks.setdefault(item.id, threading.Lock())
        with lock:  # two methods of one question must not both scan the graph
            if item.id not in self._presence:
                self._presence[item.id] = gold_presence(ctx.store, list(item.answers))
            return self._presence[item.id]

    def __call__(self, run: Run, item: QAItem, ctx: MethodContext, budget_tokens: int | None = None) -> Scored:
        verdict = verify_run(run, ctx.reasoner)
        row = funnel_row(run, self.presence(item, ctx))
        return Scored(metrics={} if run.error else metrics_for(run, item), hallucinated=verdict.hallucinated,
                      abstained=verdict.abstained, verdict=verdict.to_dict(), funnel=row.to_dict())
