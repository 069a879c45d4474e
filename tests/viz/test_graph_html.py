"""The pyvis builder: offline, escaped, capped, deterministic."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from kgviz.errors import KgvizError
from kgviz.viz.graph_html import (
    EXTERNAL_REF,
    ROLE_COLOURS,
    VizEdge,
    VizNode,
    cap_graph,
    graph_html,
    strip_external,
)

HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "</script><script>alert(2)</script>",
    "javascript:alert(3)",
    "a href b",  # pyvis switches to an innerHTML tooltip when a title contains "href"
]


def _graph(n: int = 5) -> tuple[list[VizNode], list[VizEdge]]:
    nodes = [VizNode(f"ent:{i}", f"Entity {i}", title=f"tooltip {i}") for i in range(n)]
    edges = [VizEdge(f"ent:{i}", f"ent:{i + 1}", "next") for i in range(n - 1)]
    return nodes, edges


def test_no_external_resources_and_vis_inlined() -> None:
    page = graph_html(*_graph())
    assert not re.search(r"(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//", page, re.I)
    assert "cdn.jsdelivr" not in page and "bootstrap.min" not in page
    assert "vis.Network" in page and "new vis.DataSet" in page  # library is inside the page
    assert "<h1>" not in page  # pyvis' empty headings are dropped


class _Tags(HTMLParser):
    """Collects every element and attribute the browser would build from the page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(name for name, _ in attrs)


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_labels_and_titles_are_escaped(text: str) -> None:
    nodes = [VizNode(text, text, title=text), VizNode("ent:b", "B", title=text, role="chosen")]
    edges = [VizEdge(text, "ent:b", label=text, title=text)]
    page = graph_html(nodes, edges)
    parser = _Tags()
    parser.feed(page)
    # no element or event handler came from the text: only the template's own tags
    assert "img" not in parser.tags
    assert not [a for a in parser.attrs if a.startswith("on")]
    assert set(parser.tags) <= {"html", "head", "meta", "script", "style", "body", "div", "span"}
    assert parser.tags.count("script") == 4  # utils.js, vis-network, our glue, the graph data
    if "<" in text:
        assert text not in page  # the raw markup never appears ...
        assert "\\u0026lt;" in page  # ... only html-escaped, then JSON-escaped by pyvis
    # document ids never reach the page: nodes are n0, n1, ...
    assert '"id": "n0"' in page and '"id": "n1"' in page
    # no tooltip string is handed to pyvis as `title`, so its innerHTML tooltip mode stays off
    assert "popup.innerHTML" not in page


def test_hostile_text_survives_only_as_escaped_data() -> None:
    page = graph_html([VizNode("x", '"><img src=x onerror=alert(1)>')], [])
    # find the one data occurrence and check it is fully escaped
    idx = page.index("onerror=alert(1)")
    window = page[idx - 40: idx]
    assert "\\u0026lt;img" in window and "\\u0026quot;" in window


def test_roles_colour_nodes_and_legend_lists_them() -> None:
    nodes = [VizNode("a", "A", role="seed"), VizNode("b", "B", role="rejected"), VizNode("c", "C", kind="Chunk")]
    page = graph_html(nodes, [VizEdge("a", "b", "r", role="chosen")])
    assert ROLE_COLOURS["seed"] in page and ROLE_COLOURS["rejected"] in page
    legend = re.search(r'<div class="kgviz-legend".*?</div>', page, re.S)
    assert legend is not None
    for word in ("seed", "rejected", "chosen", "Entity", "Chunk"):
        assert word in legend.group(0)
    assert "candidate" not in legend.group(0)  # only roles that occur
    page2 = graph_html(nodes, [], role_colours={"seed": "#010203", "rejected": "#040506"})
    assert "#010203" in page2 and "#040506" in page2


def test_no_legend_when_disabled() -> None:
    assert "kgviz-legend\" id" not in graph_html(*_graph(), legend=False)


def test_deterministic_and_seeded() -> None:
    nodes, edges = _graph()
    a = graph_html(nodes, edges, seed=11)
    assert a == graph_html(nodes, edges, seed=11)
    assert '"randomSeed": 11' in a
    assert '"randomSeed": 12' in graph_html(nodes, edges, seed=12)
    assert "stabilizationIterationsDone" in a and "physics: false" in a


def test_edges_with_unknown_ends_dropped_and_duplicates_once() -> None:
    nodes = [VizNode("a", "A"), VizNode("a", "A again"), VizNode("b", "B")]
    page = graph_html(nodes, [VizEdge("a", "b", "ok"), VizEdge("a", "zzz", "dangling")])
    assert page.count('"from": "n0"') == 1
    assert "dangling" not in page and "A again" not in page


def test_cap_graph_counts_and_keeps_order() -> None:
    nodes, edges = _graph(10)
    capped = cap_graph(nodes, edges, 4)
    assert [n.id for n in capped.nodes] == ["ent:0", "ent:1", "ent:2", "ent:3"]
    assert capped.total_nodes == 10 and capped.shown_nodes == 4
    assert capped.caption() == "showing 4 of 10 nodes"
    assert all(e.source in {n.id for n in capped.nodes} and e.target in {n.id for n in capped.nodes}
               for e in capped.edges)
    assert len(capped.edges) == 3
    assert cap_graph(nodes, edges, 100).shown_nodes == 10
    with pytest.raises(KgvizError):
        cap_graph(nodes, edges, 0)


def test_strip_external_removes_links_and_fails_on_leftovers() -> None:
    page = ('<head><link href="https://cdn.example/x.css" rel="stylesheet" />'
            '<script src="http://cdn.example/x.js" integrity="abc"\n></script></head>')
    assert EXTERNAL_REF.search(strip_external(page)) is None
    with pytest.raises(KgvizError):
        strip_external('<img src="https://tracker.example/p.gif">')


def test_label_px_fixes_screen_size_and_quiet_nodes_draw_no_label() -> None:
    import pytest as _pytest

    from kgviz.errors import KgvizError as _Err
    from kgviz.viz.graph_html import VizNode as _Node, graph_html as _page

    page = _page([_Node("a", "Alpha"), _Node("b", "Beta", quiet=True)], [], label_px=16)
    assert "kgvizFixedLabels(network, nodes, 16.0)" in page
    assert '"label": "Alpha"' in page and '"label": "Beta"' not in page and '"kgviz_full": "Beta"' in page
    assert not re.search(r"kgvizFixedLabels\(network, nodes, \d", _page([_Node("a", "Alpha")], []))  # no call
    with _pytest.raises(_Err):
        _page([_Node("a", "Alpha")], [], label_px=0)
