"""Claim -> evidence drawn: the marked span (escaped), the overlay's highlighted nodes, and the
case file's claim links that select the cited nodes in its overlay frame."""
from __future__ import annotations

import re

from kgviz.verify.evidence import CitedItem, ClaimEvidence
from kgviz.viz.claim_evidence import evidence_html
from kgviz.viz.graph_html import CappedGraph, VizNode, opaque_keys
from kgviz.viz.overlay import FADED, HIGHLIGHT_BORDERS, Overlay, highlight, node_keys, overlay_html

EVIL = '<img src=x onerror="alert(1)">'


def _ev(label: str = "contradicted") -> ClaimEvidence:
    passage = f"{EVIL} It opened in 1998. Then it closed."
    a = passage.index("It opened")
    item = CitedItem("doc:x#c0", "chunk", passage, "Doc", passage, "doc:x#c0", (a, a + 18),
                     ((a + 13, a + 17),), "the judge's quote")
    return ClaimEvidence("kg-rag", f"It opened in 2001 {EVIL}", label, "states 1998", "It opened in 1998.", ("1998",),
                         (item,), ("tri:gone",), ("doc:x#c0",))


def test_the_span_is_marked_the_word_bold_and_every_text_escaped() -> None:
    html = evidence_html(_ev(), {"doc:x#c0": (False, f"off topic {EVIL}")})
    assert "<img" not in html and "&lt;img" in html
    mark = re.search(r'<mark class="kgviz-span span-contradicted"[^>]*>(.*?)</mark>', html).group(1)
    assert mark == 'It opened in <b class="kgviz-word">1998</b>.'
    assert "contradicting span marked" in html and "you: irrelevant — off topic" in html
    assert "cited but not in this run" in html and "tri:gone" in html


def _overlay() -> Overlay:
    nodes = [VizNode(f"n:{i}", f"node {i}", "Chunk", role="kg-rag") for i in range(4)]
    return Overlay(CappedGraph(nodes, [], 4), {"kg-rag": "#123456"}, {n.id: ["kg-rag"] for n in nodes})


def test_highlight_borders_the_cited_nodes_and_fades_the_rest() -> None:
    ov, on = highlight(_overlay(), ["n:2", "n:9"], "contradicted")
    assert on == ["n:2"]  # n:9 is not on the graph: counted out, not drawn
    by = {n.id: n for n in ov.graph.nodes}
    assert by["n:2"].border == HIGHLIGHT_BORDERS["contradicted"] and by["n:2"].colour is None
    assert {by[i].colour for i in ("n:0", "n:1", "n:3")} == {FADED}
    assert node_keys(ov, ["n:2", "n:9"]) == [opaque_keys(ov.graph.nodes)["n:2"]] == ["n2"]


def test_the_case_file_overlay_listens_for_page_keys_only() -> None:
    page = overlay_html(_overlay(), listen=True)
    assert "kgvizHighlight" in page and "network.selectNodes" in page
    assert "kgvizHighlight" not in overlay_html(_overlay())
