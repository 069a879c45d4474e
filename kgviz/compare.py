"""Compare one question across methods: runs, claim verdicts, metrics, the gold funnel and the
overlap of their evidence; plus the exportable case file (HTML rendered by
kgviz.verify.case_file, and JSON).

``compare`` runs the methods (reusing runs the caller already has, e.g. cached in the session),
then verifies every answer against its own retrieved context with the same Reasoner.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Mapping, Sequence

from kgviz.errors import ConfigError
from kgviz.methods.base import MethodContext
from kgviz.run import Run, run_methods
from kgviz.types import Usage
from kgviz.verify.funnel import FunnelParams, FunnelRow, GoldPresence, funnel_row, gold_presence
from kgviz.verify.judge import HALLUCINATION_DEFINITION, Verdict, verify_run
from kgviz.verify.metrics import Metrics, score
from kgviz.viz.overlay import evidence_nodes


@dataclass
class MethodResult:
    run: Run
    verdict: Verdict
    metrics: Metrics | None = None  # only with gold answers
    funnel: FunnelRow | None = None  # only with gold answers and a store

    @property
    def method(self) -> str:
        return self.run.method

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run.to_dict(), "verdict": self.verdict.to_dict(),
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
        return {"methods": len(self.results),
                "hallucinated": sum(r.verdict.hallucinated for r in answered),
                "abstained": sum(r.verdict.abstained for r in answered),
                "hallucination_rate": (sum(r.verdict.hallucinated for r in answered) / n) if n else 0.0,
                "failed": len(self.results) - n}

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "golds": list(self.golds), "mode": self.mode, "judge": self.judge,
                "hallucination_definition": self.definition, "summary": self.summary(),
                "presence": self.presence.to_dict() if self.presence else None,
                "results": [r.to_dict() for r in self.results],
                "overlap": [o.to_dict() for o in self.overlap],
                "verification_usage": self.verification_usage.to_dict()}


def overlap(runs: Sequence[Run]) -> list[OverlapRow]:
    """Pairwise shared evidence (graph node ids the contexts came from) and its Jaccard index."""
    sets = {r.method: set(evidence_nodes(r)) for r in runs}
    return [OverlapRow(a, b, len(sets[a] & sets[b]), len(sets[a] | sets[b])) for a, b in combinations(sets, 2)]


def overlap_matrix(comparison: "Comparison") -> tuple[list[str], list[list[str]]]:
    """(methods, rows) of a symmetric table: "Jaccard (shared)" per pair, "-" on the diagonal."""
    methods = [r.method for r in comparison.results]
    cell = {}
    for o in comparison.overlap:
        cell[(o.a, o.b)] = cell[(o.b, o.a)] = f"{o.jaccard:.2f} ({o.shared})"
    return methods, [[a] + ["-" if a == b else cell.get((a, b), "") for b in methods] for a in methods]


def assess(runs: Sequence[Run], ctx: MethodContext, golds: Sequence[str] = (), *,
           funnel_params: FunnelParams = FunnelParams()) -> Comparison:
    """Verify existing runs (claims, metrics, funnel, overlap) without running any method."""
    if not runs:
        raise ConfigError("nothing to compare: no run was given", hint="choose at least one method")
    golds = [g.strip() for g in golds if g and g.strip()]
    presence = gold_presence(ctx.store, golds, funnel_params) if golds and ctx.store is not None else None
    results: list[MethodResult] = []
    for run in runs:
        res = MethodResult(run, verify_run(run, ctx.reasoner))
        if golds:
            res.metrics = score("" if run.error else run.answer,
                                "\n".join(i.text for i in run.context.items), golds)
            if presence is not None:
                res.funnel = funnel_row(run, presence)
        results.append(res)
    return Comparison(runs[0].question, golds, results, ctx.reasoner.mode, results[0].verdict.judge,
                      presence, overlap(runs))


def compare(question: str, methods: Sequence[str], ctx: MethodContext, golds: Sequence[str] = (), *,
            cached: Mapping[str, Run] | None = None, params: Mapping[str, Any] | None = None,
            presets: Mapping[str, str] | None = None, budget_tokens: int | None = None,
            funnel_params: FunnelParams = FunnelParams()) -> Comparison:
    """Run ``methods`` on ``question`` (methods found in ``cached`` are not re-run) and assess
    them together. Names and params are validated before anything runs."""
    cached = dict(cached or {})
    todo = [m for m in methods if m not in cached]
    fresh: dict[str, Run] = {}
    if todo:
        sub_params = {k: v for k, v in (params or {}).items() if k in todo}
        sub_presets = {k: v for k, v in (presets or {}).items() if k in todo}
        fresh = {r.method: r for r in run_methods(todo, question, ctx, sub_params, presets=sub_presets,
                                                  budget_tokens=budget_tokens)}
    runs = [cached[m] if m in cached else fresh[m] for m in methods]
    return assess(runs, ctx, golds, funnel_params=funnel_params)


def case_file_html(comparison: Comparison, store: Any = None, *, include_graph: bool = True) -> str:
    """The self-contained HTML case file (inline CSS, no external reference, all text escaped)."""
    from kgviz.verify.case_file import render_case_file

    return render_case_file(comparison, store, include_graph=include_graph)


def case_file_json(comparison: Comparison) -> str:
    import json

    return json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False, default=str)
