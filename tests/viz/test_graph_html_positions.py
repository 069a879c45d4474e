"""graph_html(positions=...): a fixed picture (no physics) whose view is the box of all positions."""
from __future__ import annotations

import json

import pytest

from kgviz.errors import KgvizError
from kgviz.viz.graph_html import VizEdge, VizNode, graph_html

NODES = [VizNode("a", "Alpha"), VizNode("b", "Beta", "Triple")]
EDGES = [VizEdge("b", "a", "", width=1, role="chosen"), VizEdge("a", "b", "r", role="chosen")]


def _data(page: str, name: str) -> list[dict]:
    return json.loads(page.split(f"{name} = new vis.DataSet(", 1)[1].split(");", 1)[0])


def _options(page: str) -> dict:
    return json.loads(page.split("var options = ", 1)[1].split(";\n", 1)[0])


def test_positions_place_every_node_and_switch_physics_off() -> None:
    page = graph_html(NODES, EDGES, positions={"a": (10, 20), "b": (300.5, -40), "unused": (500, 400)})
    drawn = [(n["label"], n["x"], n["y"]) for n in _data(page, "nodes")]
    assert drawn == [("Alpha", 10.0, 20.0), ("Beta", 300.5, -40.0)]
    opts = _options(page)
    assert opts["physics"] == {"enabled": False} and opts["edges"]["smooth"]["type"] == "continuous"
    # the view covers every given position (also the undrawn one), padded for labels
    box = [float(v) for v in page.split("kgvizView(network, container, [", 1)[1].split("]", 1)[0].split(",")]
    assert box[0] < 10 and box[1] < -40 and box[2] > 500 and box[3] > 400
    assert "stabilizationIterationsDone" not in page.split("kgvizView(network, container, [", 1)[1]
    # an explicit width wins over the role's thick line
    assert [e["width"] for e in _data(page, "edges")] == [1, 3]


def test_default_page_is_unchanged_by_the_new_parameter() -> None:
    assert graph_html(NODES, EDGES) == graph_html(NODES, EDGES, positions=None)
    opts = _options(graph_html(NODES, EDGES))
    assert opts["physics"]["enabled"] is True and "x" not in _data(graph_html(NODES, EDGES), "nodes")[0]


def test_positions_must_cover_the_drawn_nodes_and_be_finite() -> None:
    with pytest.raises(KgvizError, match="no position"):
        graph_html(NODES, EDGES, positions={"a": (0, 0)})
    with pytest.raises(KgvizError, match="non-finite"):
        graph_html(NODES, EDGES, positions={"a": (0, 0), "b": (float("nan"), 1)})
    with pytest.raises(KgvizError, match="empty"):
        graph_html([], [], positions={})
