"""Plotly figure builders."""
from __future__ import annotations

import plotly.graph_objects as go

from kgviz.viz.charts import counts_bar, degree_distribution, grouped_bar, histogram


def test_counts_bar_groups_and_values() -> None:
    fig = counts_bar({"Entity": 5, "Chunk": 3, "RELATED": 9},
                     groups={"Entity": "node table", "Chunk": "node table", "RELATED": "rel table"})
    assert isinstance(fig, go.Figure)
    assert [t.name for t in fig.data] == ["node table", "rel table"]
    assert list(fig.data[0].y) == [5, 3] and list(fig.data[1].x) == ["RELATED"]


def test_counts_bar_escapes_category_names() -> None:
    fig = counts_bar({"<b onmouseover=x>": 1})
    assert fig.data[0].x[0] == "&lt;b onmouseover=x&gt;"


def test_degree_distribution_is_log_log_and_drops_zero() -> None:
    fig = degree_distribution([0, 0, 1, 1, 1, 2, 5])
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert list(fig.data[0].x) == [1, 2, 5] and list(fig.data[0].y) == [3, 1, 1]
    assert "2 isolated" in fig.layout.title.text


def test_grouped_bar_and_histogram() -> None:
    fig = grouped_bar({"kg-rag": {"EM": 0.5, "F1": 0.6}, "text-rag": {"EM": 0.4, "F1": 0.5}}, title="m",
                      errors={"kg-rag": {"EM": (0.4, 0.7)}})
    assert len(fig.data) == 2 and fig.layout.barmode == "group"
    assert abs(fig.data[0].error_y.array[0] - 0.2) < 1e-9 and abs(fig.data[0].error_y.arrayminus[0] - 0.1) < 1e-9
    assert len(histogram([1, 2, 3], title="h", x_title="x").data) == 1
