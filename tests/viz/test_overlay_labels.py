"""The Compare overlay labels documents and chunks for people, and starts with a few methods."""
from __future__ import annotations

from typing import Any, Mapping

from kgviz.methods.base import ContextItem, RetrievedContext
from kgviz.run import Run
from kgviz.types import Usage
from kgviz.viz.overlay import build_overlay, default_methods, facet


class _Store:
    def query(self, cypher: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        ids = set(params.get("ids", [])) | ({params["id"]} if "id" in params else set())  # a list, or one key
        rows: list[dict[str, Any]] = []
        if "Document" in cypher:
            rows = [{"id": "doc:1", "title": "tidewell_line", "label": "tidewell_line",
                     "text": "# Tidewell Line\n\nThe Tidewell Line is a shipping company."}]
        elif "Chunk" in cypher:
            rows = [{"id": "doc:1#c0", "text": "# Tidewell Line\n\nThe Tidewell Line is a shipping company.",
                     "label": "# Tidewell Line The Tidewell Line is a shipping company."}]
        return [r for r in rows if r["id"] in ids]


def _run(method: str, ids: list[str]) -> Run:
    items = [ContextItem(i, "chunk" if "#" in i else "document", "text") for i in ids]
    return Run(method, "q", {}, RetrievedContext(items=items, node_ids=ids), "a", [], Usage(), "offline")


def test_overlay_uses_human_labels_and_facets_split_shared_evidence() -> None:
    ov = build_overlay([_run("kg-rag", ["doc:1#c0"]), _run("text-rag", ["doc:1#c0", "doc:1"])], _Store())
    labels = {n.id: n.label for n in ov.graph.nodes}
    assert labels["doc:1#c0"] == "Tidewell Line: The Tidewell Line is… ×2"
    assert labels["doc:1"] == "Tidewell Line"
    shared = next(n for n in ov.graph.nodes if n.id == "doc:1#c0")
    assert shared.border == ov.colours["kg-rag"]  # the first method's colour rings the shared node
    own, _ = facet(ov, "text-rag")
    colours = {n.id: n.colour for n in own}
    assert colours["doc:1"] == ov.colours["text-rag"] and colours["doc:1#c0"] != ov.colours["text-rag"]


def test_default_methods_are_a_few_graph_methods() -> None:
    ran = ["kg-rag", "kg-retriever", "kg-infused", "ket-rag", "text-rag", "no-retrieval"]
    assert default_methods(ran) == ["kg-rag", "kg-retriever", "ket-rag"]
    assert default_methods(["text-rag", "no-retrieval"]) == ["text-rag"]
    assert default_methods(["no-retrieval"]) == ["no-retrieval"]


def test_a_node_naming_the_gold_answer_is_marked() -> None:
    from kgviz.viz.overlay import GOLD_BORDER, GOLD_MARK, names_gold

    assert names_gold("The Tidewell Line", ["tidewell line"]) and names_gold("founded in 1921.", ["1921"])
    assert not names_gold("19210 tons", ["1921"]) and not names_gold("Tidewell", [])
    ov = build_overlay([_run("kg-rag", ["doc:1#c0"]), _run("text-rag", ["doc:1"])], _Store(),
                       golds=["Tidewell Line"])
    by_id = {n.id: n for n in ov.graph.nodes}
    assert by_id["doc:1"].label == f"{GOLD_MARK}: Tidewell Line" and by_id["doc:1"].border == GOLD_BORDER
    plain = build_overlay([_run("text-rag", ["doc:1"])], _Store())
    assert not plain.graph.nodes[0].label.startswith(GOLD_MARK)


def test_the_overlay_legend_names_every_method_even_one_with_only_shared_finds() -> None:
    from kgviz.viz.overlay import overlay_html

    ov = build_overlay([_run("kg-rag", ["doc:1#c0"]), _run("text-rag", ["doc:1#c0", "doc:1"])], _Store())
    assert all(n.role != "kg-rag" for n in ov.graph.nodes)  # kg-rag's one find is shared
    legend = overlay_html(ov).split('id="kgviz-legend">', 1)[1].split("</div>", 1)[0]
    assert "kg-rag" in legend and "text-rag" in legend and "shared by 2 methods" in legend


def test_key_nodes_are_gold_then_each_methods_top_then_the_most_shared() -> None:
    from kgviz.viz.overlay import key_nodes

    by_node = {"s": ["a", "b"], **{f"a{i}": ["a"] for i in range(10)}, **{f"b{i}": ["b"] for i in range(10)}}
    order = ["s", *(f"a{i}" for i in range(10)), *(f"b{i}" for i in range(10))]
    ranked = {"a": [f"a{i}" for i in range(10)], "b": [f"b{i}" for i in range(10)]}
    keys = key_nodes(order, by_node, ranked, {"b9"}, top=1, limit=6)
    # gold first, then in turns each method's ranking (limit // 2 // 2 methods = 1 each), then shared
    assert keys == {"b9", "a0", "b0", "s"}
    assert len(key_nodes(order, by_node, ranked, set(), top=5, limit=4)) == 4  # never above the limit
    small = {"x": ["a"], "y": ["a"]}
    assert key_nodes(["x", "y"], small, {"a": ["x"]}, set(), top=1, limit=6) == {"x", "y"}  # few: all


def test_only_key_nodes_draw_labels_and_a_cited_node_is_labelled() -> None:
    from kgviz.viz.overlay import MAX_LABELS, highlight, overlay_html

    ids = [f"doc:{i}" for i in range(40)]
    ov = build_overlay([_run("kg-rag", ids), _run("text-rag", ids[:3] + ids[39:])])
    quiet = {n.id for n in ov.graph.nodes if n.quiet}
    loud = {n.id for n in ov.graph.nodes} - quiet
    assert len(loud) <= MAX_LABELS and {"doc:0", "doc:1", "doc:2", "doc:39"} <= loud  # shared + top
    assert "doc:30" in quiet
    lit, on = highlight(ov, ["doc:30"])
    assert on == ["doc:30"] and not next(n for n in lit.graph.nodes if n.id == "doc:30").quiet
    page = overlay_html(ov, listen=True)
    assert "kgvizFixedLabels(network, nodes, 15.0)" in page and "kgvizOverlay.reveal(keys)" in page
    # a quiet node keeps its label for a reveal; a key node too, for when a zoom makes room for it
    assert page.count('"kgviz_full"') == len(quiet) + len(loud)
    assert page.count('"kgviz_rank"') == len(loud)  # key nodes are labelled in their order of priority
    # a facet is one method's nodes: every one labelled
    assert not any(n.quiet for n in facet(ov, "kg-rag")[0])
