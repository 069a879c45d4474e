"""kgviz.safe_text and its use by the HTML/figure builders: control and bidi characters from
documents or models are shown escaped, never passed on raw."""
from __future__ import annotations

import json

import pytest

from kgviz.safe_text import BIDI_CONTROLS, has_unsafe, safe_text
from kgviz.viz import charts
from kgviz.viz.graph_html import VizEdge, VizNode, graph_html

SPOOF = "invoice\u202egpj.exe"  # displays as "invoiceexe.jpg" when the override is honoured


def test_controls_and_bidi_are_escaped_newline_and_tab_kept() -> None:
    text = "a\x1b[31mred\x1b]0;title\x07\x00\r\x7f\x85\x9b\u2028" + "".join(sorted(BIDI_CONTROLS)) + "\n\tok é 中"
    out = safe_text(text)
    assert out == ("a\\x1b[31mred\\x1b]0;title\\x07\\x00\\x0d\\x7f\\x85\\x9b\\u2028"
                   "\\u061c\\u200e\\u200f\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069\n\tok é 中")
    assert not has_unsafe(out) and has_unsafe(text)
    assert safe_text(42) == "42"


@pytest.mark.parametrize("ch", sorted(BIDI_CONTROLS))
def test_each_bidi_control_is_listed(ch: str) -> None:
    assert safe_text(f"x{ch}y") == f"x\\u{ord(ch):04x}y"


def _data(page: str, name: str) -> list[dict]:
    # what the browser's JavaScript sees: the JSON pyvis wrote, decoded
    return json.loads(page.split(f"{name} = new vis.DataSet(", 1)[1].split(");", 1)[0])


def test_graph_html_labels_and_tooltips_show_bidi_escaped() -> None:
    nodes = [VizNode("e:1", SPOOF, title=f"{SPOOF}\nsecond line \x1b[2J"), VizNode("e:2", "plain")]
    edges = [VizEdge("e:1", "e:2", "pays\u2067 to", title="rel\u202d")]
    page = graph_html(nodes, edges, legend=False)
    drawn = _data(page, "nodes") + _data(page, "edges")
    decoded = json.dumps(drawn, ensure_ascii=False)
    assert not any(ch in decoded for ch in BIDI_CONTROLS) and "\x1b" not in decoded
    node = next(n for n in drawn if n.get("label", "").startswith("invoice"))
    assert node["label"] == "invoice\\u202egpj.exe"
    assert node["kgviz_tip"] == "invoice\\u202egpj.exe\nsecond line \\x1b[2J"  # newline kept for the tooltip
    edge = next(e for e in drawn if "pays" in e.get("label", ""))
    assert edge["label"] == "pays\\u2067 to" and edge["kgviz_tip"] == "rel\\u202d"


def test_plotly_category_names_show_bidi_escaped() -> None:
    fig = charts.counts_bar({SPOOF: 3, "Entity": 5}, title=f"Rows \u202e{SPOOF}")
    assert list(fig.data[0].x) == ["invoice\\u202egpj.exe", "Entity"]
    assert fig.layout.title.text == "Rows \\u202einvoice\\u202egpj.exe"


def test_safe_strings_escapes_every_string_of_nested_data() -> None:
    from kgviz.safe_text import safe_strings

    data = {"label": "\u202eEvil Corp", "rows": [["Jon\x85Dee", 0.5], ("\x1b[31m", None)], "\u2066k": True}
    assert safe_strings(data) == {"label": "\\u202eEvil Corp", "rows": [["Jon\\x85Dee", 0.5], ["\\x1b[31m", None]],
                                  "\\u2066k": True}
    assert safe_strings("line\none\ttab") == "line\none\ttab"
