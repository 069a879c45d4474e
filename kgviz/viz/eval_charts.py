"""Plotly figures of a batch evaluation (no streamlit import): metric bars with CI error bars,
quality vs cost, hallucination vs coverage, coverage against the context tokens each method used
(and against the budget, when the results hold several), a method x question heatmap, and the failure taxonomy
(where each method's answers were lost).

Question texts and method names are escaped: plotly renders a small HTML subset in labels and
hover text.
"""
from __future__ import annotations

import html
from typing import Mapping, Sequence

import plotly.graph_objects as go

from kgviz.evaluate.failures import FAILURE_STAGES, MethodTaxonomy
from kgviz.evaluate.report import RATE_METRICS, SUMMARY_METRICS, EvalSummary
from kgviz.evaluate.runner import EvalRecord
from kgviz.viz import charts
from kgviz.safe_text import safe_text
from kgviz.viz.palette import method_colours

_LAYOUT = dict(margin=dict(l=50, r=20, t=50, b=50), height=380, template="plotly_white")
_LABEL = {k: label for k, label, _h in SUMMARY_METRICS}
QUALITY_BARS = ("em", "f1", "acc", "coverage", "hallucination", "abstention")
# one marker per method in the scatters; colours come from kgviz.viz.palette (shared by every page)
METHOD_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "triangle-down", "star", "cross")


def _esc(text: object) -> str:
    # safe_text first: bidi overrides in a question or answer would display it reversed
    return html.escape(safe_text(text), quote=False)


def _scale(metric: str) -> float:
    return 100.0 if metric in RATE_METRICS else 1.0


def _unit(metric: str) -> str:
    return f"{_LABEL[metric]} (%)" if metric in RATE_METRICS else _LABEL[metric]


def metric_bars(summary: EvalSummary, metrics: Sequence[str] = QUALITY_BARS) -> go.Figure:
    """Grouped bars: one group per metric, one bar per method, 95% bootstrap CI as error bars."""
    table: dict[str, dict[str, float]] = {}
    errors: dict[str, dict[str, tuple[float, float]]] = {}
    for m, s in summary.methods.items():
        if s.n_ok == 0:  # every run failed: no bar at all (a bar at 0 would read as a score)
            continue
        table[m] = {_LABEL[k]: 100 * s.estimates[k].mean for k in metrics}
        errors[m] = {_LABEL[k]: (100 * s.estimates[k].lo, 100 * s.estimates[k].hi) for k in metrics}
    fig = charts.grouped_bar(table, title="Metrics per method (95% bootstrap CI)", unit="%", errors=errors,
                             colours=method_colours(table))
    fig.update_yaxes(range=[0, 105])  # a bar at 100 % with its CI stays inside the plot
    fig.update_layout(height=420)
    return fig


def _axis(metric: str) -> dict[str, object]:
    # a rate lives in 0-100 %: without a fixed range plotly centres all-zero rates on -1..1
    # ... and a little room past both ends, so a point at 0 % or 100 % is not cut at the edge
    return dict(range=[-5, 105], ticksuffix="%", tickvals=[0, 25, 50, 75, 100]) if metric in RATE_METRICS \
        else dict(rangemode="tozero")


def _scatter(summary: EvalSummary, x: str, y: str, title: str) -> go.Figure:
    """One marker per method, told apart by colour and symbol in a legend: methods often land on
    the same point (every rate 0), where text labels beside the markers would overprint."""
    fig = go.Figure()
    sx, sy = _scale(x), _scale(y)
    shown = [(m, s) for m, s in summary.methods.items() if s.n_ok > 0]  # failed runs are no point
    colours = method_colours([m for m, _s in shown])
    for i, (m, s) in enumerate(shown):
        ex, ey = s.estimates[x], s.estimates[y]
        fig.add_scatter(
            x=[sx * ex.mean], y=[sy * ey.mean], mode="markers", name=_esc(m), cliponaxis=False,
            marker=dict(size=12, color=colours[m],
                        symbol=METHOD_SYMBOLS[i % len(METHOD_SYMBOLS)], line=dict(width=1, color="white")),
            error_x=dict(type="data", symmetric=False, array=[sx * (ex.hi - ex.mean)], arrayminus=[sx * (ex.mean - ex.lo)]),
            error_y=dict(type="data", symmetric=False, array=[sy * (ey.hi - ey.mean)], arrayminus=[sy * (ey.mean - ey.lo)]),
            hovertemplate=f"{_esc(m)}<br>{_esc(_unit(x))}: %{{x:.3g}}<br>{_esc(_unit(y))}: %{{y:.3g}}<extra></extra>",
        )
    fig.update_layout(title=_esc(title), xaxis_title=_esc(_unit(x)), yaxis_title=_esc(_unit(y)), showlegend=True,
                      legend=dict(title="method"), **_LAYOUT)
    fig.update_xaxes(**_axis(x))
    fig.update_yaxes(**_axis(y))
    return fig


def quality_vs_cost(summary: EvalSummary, *, quality: str = "f1", cost: str = "tokens") -> go.Figure:
    """One point per method: mean quality against mean cost (tokens, $ or latency), with CIs."""
    return _scatter(summary, cost, quality, f"{_LABEL[quality]} vs {_LABEL[cost]}")


def hallucination_vs_coverage(summary: EvalSummary) -> go.Figure:
    """Does more evidence in the context come with fewer unsupported answers?"""
    return _scatter(summary, "coverage", "hallucination", "Hallucination rate vs coverage")


def coverage_vs_context(summary: EvalSummary) -> go.Figure:
    """One point per method: coverage (95% CI) against the median context tokens its answer step
    saw. At an equal budget B (a dashed line) the passage baselines sit near B; a method left of
    them used less context, so its coverage is read against what it spent."""
    fig = go.Figure()
    shown = [(m, s) for m, s in summary.methods.items() if s.n_ok > 0 and s.median_context_tokens is not None]
    colours = method_colours([m for m, _s in shown])
    for i, (m, s) in enumerate(shown):
        e = s.estimates["coverage"]
        fig.add_scatter(
            x=[s.median_context_tokens], y=[100 * e.mean], mode="markers", name=_esc(m), cliponaxis=False,
            marker=dict(size=12, color=colours[m], symbol=METHOD_SYMBOLS[i % len(METHOD_SYMBOLS)],
                        line=dict(width=1, color="white")),
            error_y=dict(type="data", symmetric=False, array=[100 * (e.hi - e.mean)],
                         arrayminus=[100 * (e.mean - e.lo)]),
            hovertemplate=f"{_esc(m)}<br>median context tokens: %{{x:.0f}}<br>Coverage: %{{y:.1f}}%<extra></extra>",
        )
    budget = summary.settings.get("budget_tokens")
    if budget:
        # the label sits above the plot area: inside it, it covered the points near B (the baselines)
        fig.add_vline(x=float(budget), line_dash="dash", line_color="#7f7f7f",
                      annotation=dict(text=f"budget {int(budget)}", yref="y domain", y=1.0, yanchor="bottom",
                                      xanchor="center", showarrow=False))
    fig.update_layout(title="Coverage vs context tokens (median per method)", xaxis_title="context tokens (median)",
                      yaxis_title=_esc(_unit("coverage")), showlegend=True, legend=dict(title="method"), **_LAYOUT)
    fig.update_xaxes(rangemode="tozero")
    fig.update_yaxes(**_axis("coverage"))
    return fig


def coverage_by_budget(records: Sequence[EvalRecord], methods: Sequence[str]) -> go.Figure | None:
    """Mean coverage per method at each context budget the records hold (one line per method);
    None when they hold fewer than two budgets. Only questions answered at every budget count, so
    the points of a line are comparable."""
    latest: dict[tuple[str, str, int], EvalRecord] = {}
    for r in records:
        if r.budget_tokens is not None and r.method in methods and not r.error:  # a failure is no value
            latest[(r.method, r.qid, int(r.budget_tokens))] = r  # a later line (a re-run) wins
    budgets = sorted({b for _m, _q, b in latest})
    if len(budgets) < 2:
        return None
    fig = go.Figure()
    colours = method_colours(methods)
    for i, m in enumerate(methods):
        qids = set.intersection(*[{q for mm, q, bb in latest if mm == m and bb == b} for b in budgets])
        if not qids:
            continue
        ys = [100 * sum(latest[(m, q, b)].metrics.get("coverage", 0.0) for q in qids) / len(qids) for b in budgets]
        fig.add_scatter(x=budgets, y=ys, mode="lines+markers", name=_esc(m),
                        line=dict(color=colours[m]), marker=dict(symbol=METHOD_SYMBOLS[i % len(METHOD_SYMBOLS)]),
                        hovertemplate=f"{_esc(m)} ({len(qids)} questions)<br>budget %{{x}}<br>"
                                      "Coverage: %{y:.1f}%<extra></extra>")
    fig.update_layout(title="Coverage by context budget", xaxis_title="context budget (tokens)",
                      yaxis_title=_esc(_unit("coverage")), showlegend=True, legend=dict(title="method"), **_LAYOUT)
    fig.update_yaxes(**_axis("coverage"))
    return fig


ABSTAINED_CELL = -0.5  # the heatmap's value for an abstention that scored 0
FAILED_CELL = -1.0  # its value for a failed run: the grey "failed" category, marked ×, never a score


def question_heatmap(records: Sequence[EvalRecord], methods: Sequence[str], *, metric: str = "acc",
                     max_questions: int = 200) -> go.Figure:
    """Methods (rows) x questions (columns): green = correct on ``metric``, red = not, amber = the
    method abstained ("insufficient information": not a wrong claim), grey = failed run. Hover shows
    the question, the gold answer and the method's answer."""
    qids = list(dict.fromkeys(r.qid for r in records))[:max_questions]
    by = {(r.method, r.qid): r for r in records}
    z: list[list[float | None]] = []
    hover: list[list[str]] = []
    marks: list[list[str]] = []  # "×" on a failed run's cell: a category, not a score
    for m in methods:
        row: list[float | None] = []
        tips: list[str] = []
        cells: list[str] = []
        for q in qids:
            r = by.get((m, q))
            if r is None:
                row.append(None)
                tips.append("not run")
                cells.append("")
                continue
            value = FAILED_CELL if r.error else float(r.metrics.get(metric, 0.0))
            row.append(value if r.error else ABSTAINED_CELL if r.abstained and value == 0.0 else value)
            answer = f"failed, no score: {r.error}" if r.error else r.answer
            tips.append(f"{_esc(q)}: {_esc(r.question[:120])}<br>gold: {_esc(' | '.join(r.answers)[:80])}"
                        f"<br>{_esc(m)}: {_esc(answer[:120])}")
            cells.append("×" if r.error else "")
        z.append(row)
        hover.append(tips)
        marks.append(cells)
    # z -1 failed (grey), -0.5 abstained (amber), 0 .. 0.34 wrong (red), above: correct (green)
    colours = [[0.0, "#9e9e9e"], [0.2, "#9e9e9e"], [0.2, "#ffb74d"], [0.4, "#ffb74d"], [0.4, "#e57373"],
               [0.67, "#e57373"], [0.67, "#66bb6a"], [1.0, "#2e7d32"]]
    fig = go.Figure(go.Heatmap(
        z=z, x=[_esc(q) for q in qids], y=[_esc(m) for m in methods], zmin=-1, zmax=1, colorscale=colours,
        showscale=False, customdata=hover, hovertemplate="%{customdata}<extra></extra>", xgap=1, ygap=1,
        text=marks, texttemplate="%{text}", textfont=dict(color="white"),
    ))
    title = f"Per question: {_LABEL.get(metric, metric)} (green correct, red wrong, amber abstained, grey failed)"
    fig.update_layout(title=_esc(title), **{**_LAYOUT, "height": max(260, 40 * len(methods) + 120)})
    fig.update_xaxes(showticklabels=len(qids) <= 40, title="question")
    return fig


def failure_taxonomy(tax: Mapping[str, MethodTaxonomy]) -> go.Figure:
    """Grouped bars: one group per failure stage (kgviz.evaluate.failures, pipeline order; only
    stages some method has), one bar per method: the stage's share of the method's runs with its
    95% bootstrap CI."""
    present = [s for s in FAILURE_STAGES if any(t.stages.get(s) for t in tax.values())]
    table = {m: {s.stage: 100 * s.share for s in t.shares if s.stage in present} for m, t in tax.items()}
    errors = {m: {s.stage: (100 * s.lo, 100 * s.hi) for s in t.shares if s.stage in present}
              for m, t in tax.items()}
    fig = charts.grouped_bar(table, title="Where the answers were lost: share of each method's runs (95% bootstrap CI)",
                             unit="% of runs", errors=errors, colours=method_colours(table))
    fig.update_yaxes(range=[0, 105])
    fig.update_layout(height=420)
    return fig
