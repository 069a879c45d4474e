"""Plotly figures for the app (no streamlit import). Every function returns a ``go.Figure``.

Text from documents or LLMs that ends up in figures (category names, hover text) is escaped:
plotly renders a small HTML subset in labels and hover templates.
"""
from __future__ import annotations

import html
from collections import Counter
from typing import Iterable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from kgviz.safe_text import safe_text

_LAYOUT = dict(margin=dict(l=40, r=20, t=50, b=40), height=340, template="plotly_white")


def _esc(text: object) -> str:
    # safe_text first: bidi overrides in a category name would draw it reversed (spoofing)
    return html.escape(safe_text(text), quote=False)


def counts_bar(counts: Mapping[str, int], *, title: str = "Rows per table",
               groups: Mapping[str, str] | None = None) -> go.Figure:
    """Bar chart of counts (e.g. node/edge table -> rows). ``groups`` maps a key to a legend
    group ("node table" / "rel table") so the two kinds get different colours."""
    keys = list(counts)
    if groups:
        fig = go.Figure()
        for group in dict.fromkeys(groups.get(k, "other") for k in keys):
            ks = [k for k in keys if groups.get(k, "other") == group]
            fig.add_bar(x=[_esc(k) for k in ks], y=[int(counts[k]) for k in ks], name=_esc(group),
                        text=[int(counts[k]) for k in ks], textposition="outside")
    else:
        fig = go.Figure(go.Bar(x=[_esc(k) for k in keys], y=[int(counts[k]) for k in keys],
                               text=[int(counts[k]) for k in keys], textposition="outside"))
    fig.update_layout(title=_esc(title), yaxis_title="rows", **_LAYOUT)
    return fig


def degree_distribution(degrees: Iterable[int], *, title: str = "Entity degree distribution") -> go.Figure:
    """Log-log scatter of how many nodes have each degree (degree 0 cannot sit on a log axis and
    is reported in the title instead)."""
    hist = Counter(int(d) for d in degrees)
    zero = hist.pop(0, 0)
    xs = sorted(hist)
    ys = [hist[x] for x in xs]
    fig = go.Figure(go.Scatter(x=xs, y=ys, mode="markers", marker=dict(size=8),
                               hovertemplate="degree %{x}: %{y} nodes<extra></extra>"))
    suffix = f" ({zero} isolated nodes not shown)" if zero else ""
    fig.update_layout(title=_esc(title + suffix), **_LAYOUT)
    # dtick=1: one labelled tick per power of ten (the default labels every minor tick on short ranges)
    fig.update_xaxes(type="log", title="degree", dtick=1)
    fig.update_yaxes(type="log", title="number of nodes", dtick=1)
    return fig


def grouped_bar(table: Mapping[str, Mapping[str, float]], *, title: str, unit: str = "",
                errors: Mapping[str, Mapping[str, tuple[float, float]]] | None = None,
                colours: Mapping[str, str] | None = None) -> go.Figure:
    """Series -> (category -> value) as grouped bars, e.g. method -> metric -> score. ``errors``
    gives optional (low, high) intervals per series/category (bootstrap CIs); ``colours`` a fixed
    colour per series (kgviz.viz.palette for methods)."""
    fig = go.Figure()
    for series, row in table.items():
        cats = list(row)
        ys = [float(row[c]) for c in cats]
        err = None
        if errors and series in errors:
            lo = [ys[i] - errors[series].get(c, (ys[i], ys[i]))[0] for i, c in enumerate(cats)]
            hi = [errors[series].get(c, (ys[i], ys[i]))[1] - ys[i] for i, c in enumerate(cats)]
            err = dict(type="data", symmetric=False, array=hi, arrayminus=lo)
        colour = (colours or {}).get(series)
        fig.add_bar(name=_esc(series), x=[_esc(c) for c in cats], y=ys, error_y=err,
                    marker=dict(color=colour) if colour else None)
    fig.update_layout(barmode="group", title=_esc(title), yaxis_title=_esc(unit), **_LAYOUT)
    return fig


def histogram(values: Sequence[float], *, title: str, x_title: str, bins: int = 30) -> go.Figure:
    fig = go.Figure(go.Histogram(x=np.asarray(values, dtype=float), nbinsx=bins))
    fig.update_layout(title=_esc(title), xaxis_title=_esc(x_title), yaxis_title="count", **_LAYOUT)
    return fig
