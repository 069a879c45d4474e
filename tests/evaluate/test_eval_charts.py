"""Evaluation figures: CI error bars, one point per method, heatmap cells, escaped text."""
from __future__ import annotations

import pytest

from kgviz.evaluate.report import summarise
from kgviz.evaluate.runner import EvalRecord
from kgviz.viz import eval_charts

HOSTILE = "<img src=x onerror=alert(1)>"


def _rec(qid: str, method: str, acc: float, *, error: str = "", hall: bool = False) -> EvalRecord:
    return EvalRecord(qid=qid, question=f"{HOSTILE} question {qid}?", answers=["gold"], method=method,
                      params_hash="h", answer=f"{HOSTILE} answer", error=error,
                      metrics={"em": acc, "f1": acc, "acc": acc, "coverage": 1.0},
                      hallucinated=hall, abstained=False, tokens=100 + int(acc), cost_usd=0.001, latency_s=0.5)


RECORDS = [_rec(f"q{i}", "alpha", float(i % 2), hall=i == 0) for i in range(6)] + \
          [_rec(f"q{i}", HOSTILE, 1.0, error="boom" if i == 5 else "") for i in range(6)]
METHODS = ["alpha", HOSTILE]


def test_metric_bars_have_ci_error_bars() -> None:
    s = summarise(RECORDS, METHODS, n_boot=200)
    fig = eval_charts.metric_bars(s)
    names = [t.name for t in fig.data]
    assert names == ["alpha", "&lt;img src=x onerror=alert(1)&gt;"]
    alpha = fig.data[0]
    acc_pos = list(alpha.x).index("Acc")
    mean = alpha.y[acc_pos]
    assert mean == 50.0
    est = s.methods["alpha"].estimates["acc"]
    assert alpha.error_y.array[acc_pos] == 100 * est.hi - mean
    assert alpha.error_y.arrayminus[acc_pos] == mean - 100 * est.lo


def test_scatters_have_one_point_per_method() -> None:
    s = summarise(RECORDS, METHODS, n_boot=200)
    cost = eval_charts.quality_vs_cost(s, cost="tokens")
    assert len(cost.data) == 2 and cost.data[0].x[0] == s.methods["alpha"].estimates["tokens"].mean
    hall = eval_charts.hallucination_vs_coverage(s)
    assert hall.data[0].y[0] == 100 * (1 / 6)
    assert all(HOSTILE not in str(t.text) for t in hall.data)


def test_heatmap_cells_and_escaping() -> None:
    fig = eval_charts.question_heatmap(RECORDS, METHODS, metric="acc")
    z = fig.data[0].z
    assert list(z[0]) == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    assert list(z[1])[:5] == [1.0] * 5 and z[1][5] == -1.0  # the failed run is marked, not "wrong"
    hover = str(fig.data[0].customdata)
    assert HOSTILE not in hover and "&lt;img" in hover and "failed, no score: boom" in hover
    # an abstention that scored 0 gets its own colour, not "wrong"
    from dataclasses import replace
    quiet = [replace(r, abstained=True) if (r.method, r.qid) == (METHODS[0], RECORDS[0].qid) else r for r in RECORDS]
    z = eval_charts.question_heatmap(quiet, METHODS, metric="acc").data[0].z
    assert z[0][0] == eval_charts.ABSTAINED_CELL and list(z[0])[1:] == [1.0, 0.0, 1.0, 0.0, 1.0]
    assert HOSTILE not in str(fig.data[0].y)


def test_scatters_use_a_legend_not_overprinted_labels_and_rate_axes_show_0_to_100() -> None:
    # every rate 0 is the case that drew a -1..1 axis and stacked the method names on one point
    records = [_rec(f"q{i}", m, 1.0) for i in range(4) for m in ("alpha", "beta", "gamma")]
    for r in records:
        r.metrics["coverage"] = 0.0
    s = summarise(records, ["alpha", "beta", "gamma"], n_boot=100)
    hall = eval_charts.hallucination_vs_coverage(s)
    # 0-100 % with a margin past both ends, so a point at 0 or 100 % is not cut at the edge
    assert tuple(hall.layout.yaxis.range) == (-5, 105) and tuple(hall.layout.xaxis.range) == (-5, 105)
    assert tuple(hall.layout.yaxis.tickvals) == (0, 25, 50, 75, 100)
    assert [t.y[0] for t in hall.data] == [0.0, 0.0, 0.0]
    for fig in (hall, eval_charts.quality_vs_cost(s, cost="latency_s")):
        assert fig.layout.showlegend is True
        assert all("text" not in t.mode for t in fig.data)
        assert len({t.marker.color for t in fig.data}) == len(fig.data) == 3
    cost = eval_charts.quality_vs_cost(s, cost="latency_s")
    assert tuple(cost.layout.yaxis.range) == (-5, 105)  # F1 is a rate too
    assert cost.layout.xaxis.range is None and cost.layout.xaxis.rangemode == "tozero"


def _cov(qid: str, method: str, coverage: float, budget: int, tokens: int) -> EvalRecord:
    return EvalRecord(qid=qid, question="q?", answers=["gold"], method=method, params_hash=f"h{budget}", answer="a",
                      error="", metrics={"em": 0.0, "f1": 0.0, "acc": 0.0, "coverage": coverage},
                      hallucinated=False, abstained=False, context_tokens=tokens, budget_tokens=budget)


def test_coverage_vs_context_places_methods_at_their_median_tokens() -> None:
    recs = [_cov("q1", "bm25", 1.0, 300, 290), _cov("q2", "bm25", 0.0, 300, 280), _cov("q3", "bm25", 1.0, 300, 299),
            _cov("q1", HOSTILE, 0.0, 300, 40), _cov("q2", HOSTILE, 1.0, 300, 60), _cov("q3", HOSTILE, 0.0, 300, 50)]
    s = summarise(recs, ["bm25", HOSTILE], n_boot=200, settings={"budget_tokens": 300})
    fig = eval_charts.coverage_vs_context(s)
    points = {t.name: (t.x[0], t.y[0]) for t in fig.data}
    assert points["bm25"][0] == 290 and points["&lt;img src=x onerror=alert(1)&gt;"][0] == 50  # medians
    assert abs(points["bm25"][1] - 200 / 3) < 1e-9
    est = s.methods["bm25"].estimates["coverage"]
    assert fig.data[0].error_y.array[0] == 100 * (est.hi - est.mean)
    assert [sh.x0 for sh in fig.layout.shapes] == [300]  # the budget line
    label = fig.layout.annotations[-1]  # its label stands above the plot area, clear of the points
    assert label.text == "budget 300" and label.yref in ("paper", "y domain") and label.y >= 1.0 and label.yanchor == "bottom"
    assert "<img" not in fig.to_json()


def test_coverage_by_budget_needs_two_budgets_and_common_questions() -> None:
    one = [_cov("q1", "bm25", 1.0, 300, 290)]
    assert eval_charts.coverage_by_budget(one, ["bm25"]) is None
    recs = [_cov("q1", "bm25", 0.0, 300, 290), _cov("q2", "bm25", 1.0, 300, 280),
            _cov("q1", "bm25", 1.0, 600, 590), _cov("q2", "bm25", 1.0, 600, 580),
            _cov("q3", "bm25", 0.0, 600, 500),  # q3 ran at 600 only: left out of both points
            _cov("q1", "kg-rag", 1.0, 300, 20), _cov("q1", "kg-rag", 0.0, 600, 20)]
    fig = eval_charts.coverage_by_budget(recs, ["bm25", "kg-rag", "absent"])
    assert fig is not None
    lines = {t.name: (list(t.x), list(t.y)) for t in fig.data}
    assert lines == {"bm25": ([300, 600], [50.0, 100.0]), "kg-rag": ([300, 600], [100.0, 0.0])}


def test_a_failed_run_is_drawn_as_no_value() -> None:
    """A method whose runs all failed has no bar and no point; a failed run is no value on the
    coverage-by-budget line; its heatmap cell is the grey 'failed' category, its error in the hover."""
    broken = [_rec(f"q{i}", "broken", 0.0, error="RecordingMissError: no reply") for i in range(6)]
    s = summarise(RECORDS + broken, [*METHODS, "broken"], n_boot=100)
    assert "broken" not in [t.name for t in eval_charts.metric_bars(s).data]
    for fig in (eval_charts.quality_vs_cost(s), eval_charts.hallucination_vs_coverage(s),
                eval_charts.coverage_vs_context(s)):
        assert "broken" not in [t.name for t in fig.data]
    # HOSTILE's q5 failed: its 5 successes alone make its coverage 100 %, and the failure is no 0
    assert s.methods[HOSTILE].estimates["acc"].n == 5 and s.methods[HOSTILE].estimates["acc"].mean == 1.0
    at = {b: [_rec(f"q{i}", "m", 1.0, error="boom" if (b == 600 and i == 0) else "") for i in range(3)]
          for b in (300, 600)}
    for b, recs in at.items():
        for r in recs:
            r.budget_tokens = b
    lines = eval_charts.coverage_by_budget(at[300] + at[600], ["m"])
    assert lines is not None and "(2 questions)" in lines.data[0].hovertemplate  # q0 failed at 600: left out
    heat = eval_charts.question_heatmap(broken, ["broken"])
    assert list(heat.data[0].z[0]) == [-1.0] * 6 and list(heat.data[0].text[0]) == ["×"] * 6
    assert "failed, no score: RecordingMissError" in heat.data[0].customdata[0][0]


def test_failure_taxonomy_bars_are_stage_shares_with_cis() -> None:
    from kgviz.evaluate import failures as fx

    rows = fx.rows_of(RECORDS)
    fig = eval_charts.failure_taxonomy(fx.taxonomy(rows, n_boot=200))
    # alpha is wrong on q0, q2, q4 (their funnel recorded no stage: unclassified); the other
    # method failed once; stages no method has get no group
    by_name = {t.name: t for t in fig.data}
    alpha = by_name["alpha"]
    assert list(alpha.x) == ["run failed", "unclassified"]
    assert list(alpha.y) == [0.0, 50.0]
    lo, hi = alpha.error_y.arrayminus[1], alpha.error_y.array[1]
    assert 0 < lo and 0 < hi  # a real interval around 50 % from 6 runs
    hostile = by_name["&lt;img src=x onerror=alert(1)&gt;"]
    assert hostile.y[0] == pytest.approx(100 / 6)
