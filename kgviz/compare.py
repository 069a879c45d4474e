"""Compare one question across methods: runs, claim verdicts, metrics, the gold funnel and the
overlap of their evidence; plus the exportable case file (HTML rendered by
kgviz.viz.case_file, and JSON). The result types live in kgviz.verify.comparison (re-exported
here) so the case-file renderer does not import this module back.

``compare`` runs the methods (reusing runs the caller already has, e.g. cached in the session),
then verifies every answer against its own retrieved context with the same Reasoner. Each
method's run and verification is one piece of work; the pieces run in a thread pool
(``kgviz.run.as_finished``), and ``on_result`` hears of each method as it is done, so a page can
draw its card without waiting for the slowest. Where the gold answers occur in the graph (the
funnel's shared part) is worked out once, beside them. The Comparison is the same whatever order
the methods finish in.
"""
from __future__ import annotations

from itertools import combinations
from typing import Any, Callable, Mapping, Sequence

from kgviz.errors import ConfigError
from kgviz.evaluate.labels import Labels, RunLabels, for_run
from kgviz.graph.protocol import GraphStore
from kgviz.methods.base import MethodContext
from kgviz.run import RUN_WORKERS, Run, as_finished, run_method, run_methods, shared_work, validate_names
from kgviz.verify.evidence import claim_evidence
from kgviz.verify.comparison import Comparison, MethodResult, OverlapRow, overlap_matrix
from kgviz.verify.funnel import FunnelParams, GoldPresence, funnel_row, gold_presence
from kgviz.verify.judge import verify_run
from kgviz.verify.metrics import score
from kgviz.viz.case_file import render_case_file
from kgviz.viz.overlay import evidence_nodes

__all__ = ["Comparison", "MethodResult", "OverlapRow", "assess", "case_file_html", "case_file_json", "compare",
           "overlap", "overlap_matrix"]


def overlap(runs: Sequence[Run]) -> list[OverlapRow]:
    """Pairwise shared evidence (graph node ids the contexts came from) and its Jaccard index."""
    sets = {r.method: set(evidence_nodes(r)) for r in runs}
    return [OverlapRow(a, b, len(sets[a] & sets[b]), len(sets[a] | sets[b])) for a, b in combinations(sets, 2)]


def _clean_golds(golds: Sequence[str]) -> list[str]:
    return [g.strip() for g in golds if g and g.strip()]


def assess_run(run: Run, ctx: MethodContext, golds: Sequence[str] = (),
               presence: GoldPresence | None = None) -> MethodResult:
    """One method's card: its claims judged against its own context, metrics when there is a
    gold answer, and its funnel row when ``presence`` is known (``with_funnel`` adds it later)."""
    res = MethodResult(run, verify_run(run, ctx.reasoner))
    if golds:
        res.metrics = score("" if run.error else run.answer, "\n".join(i.text for i in run.context.items), golds)
    if presence is not None:
        res.funnel = funnel_row(run, presence)
    return res


def _presence(ctx: MethodContext, golds: Sequence[str], funnel_params: FunnelParams) -> GoldPresence | None:
    return gold_presence(ctx.store, golds, funnel_params) if golds and ctx.store is not None else None


def _assemble(results: list[MethodResult], ctx: MethodContext, golds: list[str],
              presence: GoldPresence | None) -> Comparison:
    for res in results:
        if presence is not None and res.funnel is None:
            res.funnel = funnel_row(res.run, presence)
    runs = [r.run for r in results]
    return Comparison(runs[0].question, golds, results, ctx.reasoner.mode, results[0].verdict.judge,
                      presence, overlap(runs))


def assess(runs: Sequence[Run], ctx: MethodContext, golds: Sequence[str] = (), *,
           funnel_params: FunnelParams = FunnelParams()) -> Comparison:
    """Verify existing runs (claims, metrics, funnel, overlap) without running any method."""
    if not runs:
        raise ConfigError("nothing to compare: no run was given", hint="choose at least one method")
    golds = _clean_golds(golds)
    presence = _presence(ctx, golds, funnel_params)
    return _assemble([assess_run(run, ctx, golds, presence) for run in runs], ctx, golds, presence)


OnResult = Callable[[int, MethodResult], None]


def compare(question: str, methods: Sequence[str], ctx: MethodContext, golds: Sequence[str] = (), *,
            cached: Mapping[str, Run] | None = None, params: Mapping[str, Any] | None = None,
            presets: Mapping[str, str] | None = None, budget_tokens: int | None = None,
            funnel_params: FunnelParams = FunnelParams(), workers: int = RUN_WORKERS,
            on_result: OnResult | None = None) -> Comparison:
    """Run ``methods`` on ``question`` (methods found in ``cached`` are not re-run) and assess
    them together, ``workers`` methods at a time. Names and params are validated before anything
    runs. ``on_result(i, result)`` is called in the calling thread as method ``methods[i]`` is
    run and verified (its funnel row may come only in the returned Comparison)."""
    if not methods:
        raise ConfigError("nothing to compare: no method was given", hint="choose at least one method")
    cached = dict(cached or {})
    todo = [m for m in methods if m not in cached]
    sub_params = {k: v for k, v in (params or {}).items() if k in todo}
    sub_presets = {k: v for k, v in (presets or {}).items() if k in todo}
    validate_names(todo, sub_params, sub_presets)
    if todo and not question.strip():
        raise ConfigError("the question is empty")
    golds = _clean_golds(golds)
    ctx = shared_work(ctx)
    presence: list[GoldPresence | None] = [None]

    def work(i: int) -> MethodResult | None:
        if i == len(methods):  # the funnel's shared part, beside the methods
            presence[0] = _presence(ctx, golds, funnel_params)
            return None
        m = methods[i]
        run = cached[m] if m in cached else run_method(
            m, question, ctx, sub_params.get(m), preset=sub_presets.get(m), budget_tokens=budget_tokens)
        return assess_run(run, ctx, golds)

    results: list[MethodResult | None] = [None] * len(methods)
    # the presence scan goes first (index len(methods) listed first), so it never waits behind every method
    order = [len(methods), *range(len(methods))]
    for j, res in as_finished(lambda j: work(order[j]), len(order), workers):
        i = order[j]
        if res is None:
            continue
        results[i] = res
        if presence[0] is not None and golds:
            res.funnel = funnel_row(res.run, presence[0])
        if on_result is not None:
            on_result(i, res)
    return _assemble([r for r in results if r is not None], ctx, golds, presence[0])


def run_labels(comparison: Comparison, labels: Labels) -> list[RunLabels]:
    """Each result's human labels (kgviz.evaluate.labels): its answer, claims and context items."""
    return [for_run(labels, comparison.question, r.method, r.run.answer, [c.text for c in r.verdict.claims])
            for r in comparison.results]


def case_file_html(comparison: Comparison, store: GraphStore | None = None, *, include_graph: bool = True,
                   labels: Labels | None = None) -> str:
    """The self-contained HTML case file (inline CSS and script, no external reference, all text
    escaped): each claim opens its evidence, and with ``labels`` the human labels are shown."""
    return render_case_file(comparison, store, include_graph=include_graph,
                            labels=run_labels(comparison, labels) if labels is not None else None)


def case_file_json(comparison: Comparison, store: GraphStore | None = None, *, labels: Labels | None = None) -> str:
    """The comparison as JSON, each result with its claims' evidence (kgviz.verify.evidence) and,
    with ``labels``, its human labels."""
    import json

    doc = comparison.to_dict()
    marks = run_labels(comparison, labels) if labels is not None else [None] * len(comparison.results)
    for out, r, lab in zip(doc["results"], comparison.results, marks):
        out["claim_evidence"] = [claim_evidence(r.run, c, store).to_dict() for c in r.verdict.claims]
        out["human_labels"] = lab.to_dict() if lab is not None else None
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str)
