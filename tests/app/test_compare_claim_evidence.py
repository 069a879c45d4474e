"""Compare, claim -> evidence and human labels (AppTest, offline, sample data): clicking a claim
shows the passage its verdict rests on with the quoted span marked, highlights the cited nodes on
the overlay, and the claim, the answer and a context item can be labelled; the labels come back
in a new session and go into the case file."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kgviz import compare as cmp
from kgviz.evaluate import labels as lb
from kgviz.ui import claim_evidence as uce

from test_compare_page import button, sample_built_compare_page

QUESTION = "Who was born first, Agnes Vohl or Tomas Aldric?"  # the sample's offline kg-infused: contradicted


def _compare(at: AppTest, methods: tuple[str, ...]) -> AppTest:
    for cb in at.checkbox:
        if cb.key and cb.key.startswith("kgviz_cmp_m_"):
            cb.set_value(cb.key.removeprefix("kgviz_cmp_m_") in methods)
    at.text_input(key="kgviz_cmp_question").set_value(QUESTION)
    at.text_input(key="kgviz_cmp_gold").set_value("Tomas Aldric").run()
    button(at, "Compare").click().run()
    assert not at.exception, at.exception
    return at


def _evidence(at: AppTest) -> str:
    found = [h.value for h in at.get("html") if "kgviz-evidence" in h.value]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.slow
def test_a_clicked_claim_shows_its_span_highlights_its_nodes_and_takes_labels(app_env: Path) -> None:
    at = _compare(sample_built_compare_page(), ("kg-infused", "text-rag"))
    radio = at.radio(key=uce.K_CLAIM)
    assert radio.value is None and not [h for h in at.get("html") if "kgviz-evidence" in h.value]
    options = {o: radio.options[n] for n, o in enumerate(radio.options)}
    contradicted = next(o for o in options if o.startswith("kg-infused") and "contradicted" in o)
    key = next(k for k, v in uce._options(at.session_state["kgviz_comparison"][0]).items()
               if v.replace("\\", "") == contradicted.replace("\\", ""))
    radio.set_value(key).run()
    assert not at.exception, at.exception

    html = _evidence(at)
    # the contradicting sentence is marked in red in the source passage, its decisive words in bold
    span = re.search(r'<mark class="kgviz-span span-contradicted"[^>]*>(.*?)</mark>', html, re.S)
    assert span is not None, html
    assert "1895" in span.group(1) and '<b class="kgviz-word">' in span.group(1)
    assert "contradicting span marked" in html
    caption = next(c.value for c in at.caption if c.value.startswith("Claim → evidence:"))
    shown, total = (int(x) for x in re.findall(r"\d+", caption)[:2])
    assert 1 <= shown <= total, caption
    page = str(at.get("iframe")[0].proto.srcdoc)
    assert page.count("#b71c1c") >= shown  # the cited nodes' red border, drawn on the overlay

    # label the answer wrong, the claim's verdict wrong, the first cited item relevant
    at.radio(key=uce.K + "run").set_value("wrong").run()
    at.text_input(key=uce.K + "run_note").set_value("picked the wrong person").run()
    [b for b in at.button if b.label == "Save"][0].click().run()
    at.radio(key=uce.K + "claim_label").set_value("wrong").run()
    [b for b in at.button if b.label == "Save"][1].click().run()
    item = at.selectbox(key=uce.K + "item").value
    at.radio(key=uce.K + "item_label").set_value("relevant").run()
    [b for b in at.button if b.label == "Save"][2].click().run()
    assert not at.exception, at.exception

    saved = lb.load_labels(app_env)
    comparison = at.session_state["kgviz_comparison"][0]
    kg_inf = next(r for r in comparison.results if r.method == "kg-infused")
    mine = lb.for_run(saved, QUESTION, "kg-infused", kg_inf.run.answer, [c.text for c in kg_inf.verdict.claims])
    assert mine.run == lb.RunLabel(False, "picked the wrong person")
    assert [c.right for c in mine.claims.values()] == [False]
    assert mine.items == {item: lb.ItemLabel(True, "")}
    assert item in next(c.evidence for c in kg_inf.verdict.claims if c.label == "contradicted")  # cited first
    assert "you: relevant" in _evidence(at)  # the cited item's label beside it
    # the run's labels above the claims, the claim's own on its option
    line = next(c.value.replace("\\", "") for c in at.caption if c.value.startswith("Your labels:"))
    assert "kg-infused: answer wrong (picked the wrong person), 1 context items relevant, 0 irrelevant" in line
    assert at.radio(key=uce.K_CLAIM).value == key
    assert "you: verdict wrong" in uce._options(comparison, cmp.run_labels(comparison, saved))[key]

    # the case file carries each claim's evidence and the labels
    case = cmp.case_file_html(comparison, None, labels=saved)
    assert "picked the wrong person" in case and "span-contradicted" in case
    assert 'class="kgviz-claim-link"' in case and 'id="kgviz-overlay"' in case
    doc = json.loads(cmp.case_file_json(comparison, None, labels=saved))
    kg_json = next(r for r in doc["results"] if r["run"]["method"] == "kg-infused")
    assert kg_json["human_labels"]["run"] == {"right": False, "note": "picked the wrong person"}
    cited = next(e for e in kg_json["claim_evidence"] if e["label"] == "contradicted")["items"][0]
    assert "1895" in cited["passage"][cited["span"][0]: cited["span"][1]]

    # Trace shows the same run with its labels
    button_trace = next(b for b in at.button if b.key == "kgviz_cmp_trace_kg-infused")
    button_trace.click().run()
    assert not at.exception, at.exception
    said = [c.value.replace("\\", "") for c in at.caption if c.value.startswith("Your labels")]
    assert said and "this answer wrong — picked the wrong person" in said[0], said
    assert "wrong on 1 of its claims" in said[0]
