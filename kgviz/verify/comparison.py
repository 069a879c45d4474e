"""What a comparison of methods on one question holds: each method's run with its claim verdicts,
metrics and gold funnel, plus the pairwise overlap of their evidence. Plain data, shared by
``kgviz.compare`` (which builds it) and ``kgviz.viz.case_file`` (which renders it); it lives
here, below both, so neither has to import the other."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgviz.run import Run
from kgviz.types import Usage
from kgviz.verify.funnel import FunnelRow, GoldPresence
from kgviz.verify.judge import HALLUCINATION_DEFINITION, Verdict
from kgviz.verify.metrics import Metrics
from kgviz.verify.outcome import Outcome, of_verdict


@dataclass
class MethodResult:
    run: Run
    verdict: Verdict
    metrics: Metrics | None = None  # only with gold answers
    funnel: FunnelRow | None = None  # only with gold answers and a store

    @property
    def method(self) -> str:
        return self.run.method

    @property
    def outcome(self) -> Outcome:
        """Right (with a gold answer) x grounded, abstained or failed: one label and colour."""
        return of_verdict(self.verdict, self.metrics)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run.to_dict(), "verdict": self.verdict.to_dict(), "outcome": self.outcome.to_dict(),
                "metrics": self.metrics.to_dict() if self.metrics else None,
                "funnel": self.funnel.to_dict() if self.funnel else None}


@dataclass(frozen=True)
class OverlapRow:
    a: str
    b: str
    shared: int
    union: int

    @property
    def jaccard(self) -> float:
        return self.shared / self.union if self.union else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "shared": self.shared, "union": self.union,
                "jaccard": round(self.jaccard, 4)}


@dataclass
class Comparison:
    question: str
    golds: list[str]
    results: list[MethodResult]
    mode: str  # the reasoner's mode: "offline" or "provider:model"
    judge: str
    presence: GoldPresence | None = None
    overlap: list[OverlapRow] = field(default_factory=list)
    definition: str = HALLUCINATION_DEFINITION

    @property
    def verification_usage(self) -> Usage:
        total = Usage()
        for r in self.results:
            total = total + r.verdict.usage
        return total

    def summary(self) -> dict[str, Any]:
        answered = [r for r in self.results if not r.verdict.failed]
        n = len(answered)
        # a rate over no answering method is None ("n/a"), never 0
        return {"methods": len(self.results),
                "hallucinated": sum(r.verdict.hallucinated for r in answered),
                "abstained": sum(r.verdict.abstained for r in answered),
                "hallucination_rate": (sum(r.verdict.hallucinated for r in answered) / n) if n else None,
                "failed": len(self.results) - n,
                "right": sum(bool(r.outcome.correct and r.outcome.correct.ok) for r in answered)
                if self.golds else None,
                "outcomes": {k: sum(r.outcome.kind == k for r in self.results)
                             for k in dict.fromkeys(r.outcome.kind for r in self.results)}}

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "golds": list(self.golds), "mode": self.mode, "judge": self.judge,
                "hallucination_definition": self.definition, "summary": self.summary(),
                "presence": self.presence.to_dict() if self.presence else None,
                "results": [r.to_dict() for r in self.results],
                "overlap": [o.to_dict() for o in self.overlap],
                "verification_usage": self.verification_usage.to_dict()}


def overlap_matrix(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """(methods, rows) of a symmetric table: "Jaccard (shared)" per pair, "-" on the diagonal."""
    methods = [r.method for r in comparison.results]
    cell = {}
    for o in comparison.overlap:
        cell[(o.a, o.b)] = cell[(o.b, o.a)] = f"{o.jaccard:.2f} ({o.shared})"
    return methods, [[a] + ["-" if a == b else cell.get((a, b), "") for b in methods] for a in methods]
