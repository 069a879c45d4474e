"""The Compare page driven headlessly (AppTest, offline, hashing embedder, temp workspace)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

import kgviz.compare
from kgviz.methods.registry import list_methods

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT = 180


def new_app() -> AppTest:
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=RUN_TIMEOUT)


def button(at: AppTest, label: str):  # noqa: ANN201 - AppTest element type
    return next(b for b in at.button if b.label == label)


@pytest.fixture
def counted_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of methods actually run by Compare (kgviz.compare calls run_method from its thread
    pool, so the names come in the order the runs start: compare them sorted)."""
    calls: list[str] = []
    real = kgviz.compare.run_method

    def spy(name: str, *a: Any, **kw: Any) -> Any:
        calls.append(name)
        return real(name, *a, **kw)

    monkeypatch.setattr(kgviz.compare, "run_method", spy)
    return calls


def sample_built_compare_page() -> AppTest:
    at = new_app().run()
    button(at, "Load sample data").click().run()
    assert not at.exception, at.exception
    at.switch_page("pages/compare.py").run()
    assert not at.exception, at.exception
    return at


def test_compare_without_graph_asks_to_build(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Compare methods"]
    assert any("no graph yet" in i.value for i in at.info)
    assert any("Hallucination = " in c.value for c in at.caption)  # the definition is stated


@pytest.mark.slow
def test_compare_page_end_to_end(app_env: Path, counted_runs: list[str]) -> None:
    """One session (one sample build: every Kùzu database this process opens stays mapped, so the
    AppTests keep their number small): a typed question on two methods, an uploaded question file,
    then every method on a sample question, cache reuse, and "Open in Trace"."""
    at = sample_built_compare_page()
    methods = list_methods()

    # typed question with two gold answers, two methods
    for m in methods:
        if m not in ("text-rag", "kg-rag"):
            at.checkbox(key=f"kgviz_cmp_m_{m}").uncheck()
    at.text_input(key="kgviz_cmp_question").set_value("In what year was the Tidewell Line founded?")
    at.text_input(key="kgviz_cmp_gold").set_value("1898 | eighteen ninety-eight").run()
    button(at, "Compare").click().run()
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader][:2] == ["kg-rag", "text-rag"]
    assert sorted(counted_runs) == ["kg-rag", "text-rag"]
    # kg-rag's steps of ours (every step but the shared answer: a reconstruction), listed with their
    # reason; text-rag has none, so it shows no such list
    ours = [e.label for e in at.expander if "marked ours" in e.label]
    assert len(ours) == 1 and re.fullmatch(r"(\d+) of (\d+) steps marked ours", ours[0])
    assert any("ours: reconstruction" in c.value for c in at.caption)
    # in one caption, a line per step (a caption each made a third of the cards' elements)
    kg_rag = next(r.run for r in at.session_state["kgviz_comparison"][0].results if r.method == "kg-rag")
    listed = next(c.value for c in at.caption if "ours: reconstruction" in c.value).split("  \n")
    assert [line.split(". ", 1)[0] for line in listed] == [str(s.index + 1) for s in kg_rag.trace if s.ours]
    frames = [d.value for d in at.dataframe]
    funnel = next(f for f in frames if "failure" in f.columns)
    assert list(funnel["method"]) == ["kg-rag", "text-rag"]
    overlap = next(f for f in frames if list(f.columns) == ["kg-rag", "text-rag"])
    assert overlap.loc["kg-rag", "kg-rag"] == "-"
    assert overlap.loc["kg-rag", "text-rag"] == overlap.loc["text-rag", "kg-rag"]
    first = {r.method: r.run for r in at.session_state["kgviz_comparison"][0].results}
    for m in methods:
        at.checkbox(key=f"kgviz_cmp_m_{m}").check()

    # an uploaded question file (and a broken one: an error message, not a traceback)
    at.radio(key="kgviz_cmp_source").set_value("Upload a JSONL file").run()
    rows = [{"id": "u1", "question": "Who founded the Ossel Marine Institute?", "answers": ["Agnes Vohl"]}]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    at.file_uploader(key="kgviz_cmp_upload").set_value(("mine.jsonl", data, "application/json")).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="kgviz_cmp_pick").value.question == rows[0]["question"]
    assert any("Gold: Agnes Vohl" in c.value for c in at.caption)
    at.file_uploader(key="kgviz_cmp_upload").set_value(("bad.jsonl", b"{not json", "application/json")).run()
    assert not at.exception
    assert any("bad line" in e.value for e in at.error)

    # every method on the first sample question (the same question typed above: its two
    # successful runs are reused from the shared run cache)
    at.radio(key="kgviz_cmp_source").set_value("Sample questions").run()
    question = at.selectbox(key="kgviz_cmp_pick").value.question
    assert question == "In what year was the Tidewell Line founded?"
    del counted_runs[:]
    button(at, "Compare").click().run()
    assert not at.exception, at.exception
    reused = {m for m, r in first.items() if not r.error}
    assert sorted(counted_runs) == sorted(m for m in methods if m not in reused)
    heads = [s.value for s in at.subheader]
    assert heads[: len(methods)] == methods  # one column per method
    assert {"Evidence overlay", "Gold funnel", "Export"} <= set(heads)
    badges = [h.value for h in at.get("html") if "kgviz-verdict" in h.value]
    assert len(badges) == len(methods)
    answers = [h.value for h in at.get("html") if "kgviz-answer" in h.value]
    assert answers and all("claim-" in a for a in answers if "</span>" in a)
    assert any(c.value.startswith("EM ") for c in at.caption)  # the sample question has a gold answer
    assert any("funnel: " in c.value for c in at.caption)
    assert any("Judge: offline check" in c.value for c in at.caption)
    assert any("method-legend" in h.value for h in at.get("html"))
    # the overlay starts with a few methods (nine colours on one graph are a grey blob) ...
    picked = at.multiselect(key="kgviz_cmp_overlay_methods")
    assert picked.value == ["kg-rag", "kg-retriever", "ket-rag"]
    assert len(at.get("iframe")) == 1
    # ... and facets draw one graph per picked method, at the same places
    at.radio(key="kgviz_cmp_overlay_view").set_value("One graph per method (same places)").run()
    assert not at.exception, at.exception
    facets = [str(f.proto.srcdoc) for f in at.get("iframe")]
    assert len(facets) == 3 and len(set(facets)) == 3
    at.multiselect(key="kgviz_cmp_overlay_methods").unselect("ket-rag").run()
    assert len(at.get("iframe")) == 2
    at.radio(key="kgviz_cmp_overlay_view").set_value("One graph, coloured by method").run()
    assert len(at.get("download_button")) == 2
    results = at.session_state["kgviz_comparison"][0].results
    assert [r.method for r in results] == methods
    assert all(results[i].run is first[m] for i, m in enumerate(methods) if m in reused)

    # a second comparison reuses every cached run; only failed runs (never cached) are retried
    failed = sorted(r.method for r in results if r.run.error)
    del counted_runs[:]
    button(at, "Compare").click().run()
    assert not at.exception
    assert sorted(counted_runs) == failed
    del counted_runs[:]

    # "Open in Trace" shows the same run on the Trace page, without running it again
    at.button(key="kgviz_cmp_trace_text-rag").click().run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Trace a method"]
    assert at.text_input(key="kgviz_trace_question").value == question
    assert at.selectbox(key="kgviz_trace_method").value == "text-rag"
    assert not any("Press Run" in i.value for i in at.info)
    assert counted_runs == []
    # ... and back: the Compare setup and its result are still there
    at.switch_page("pages/compare.py").run()
    assert not at.exception, at.exception
    assert at.radio(key="kgviz_cmp_source").value == "Sample questions"
    assert at.selectbox(key="kgviz_cmp_pick").value.question == question
    assert all(at.checkbox(key=f"kgviz_cmp_m_{m}").value for m in methods)
    assert [s.value for s in at.subheader][: len(methods)] == methods
    assert counted_runs == []


def test_claims_render_as_a_list_with_the_verdict_first_and_escaped() -> None:
    from kgviz.ui.compare import SHOWN_EVIDENCE, claims_html
    from kgviz.verify.judge import ClaimVerdict

    hostile = "<img src=x onerror=alert(1)>"
    claims = [ClaimVerdict(f"{hostile} built it", "contradicted", [f"e{i}" for i in range(SHOWN_EVIDENCE + 2)],
                           reason=f"the context says {hostile}"),
              ClaimVerdict("It opened in 1898", "supported")]
    out = claims_html(claims)
    assert hostile not in out and out.count("&lt;img") == 2
    items = out.split("<li")[1:]
    assert len(items) == 2
    first = items[0]
    # the badge comes before the claim text, in the verdict's colour
    assert first.index("contradicted") < first.index("built it") and "#ffcdd2" in first
    assert "+2 more" in first and f"e{SHOWN_EVIDENCE}" not in first
    assert "supported" in items[1] and "evidence" not in items[1]


def test_recorded_wrong_but_grounded_answers_are_not_green(app_env: Path) -> None:
    """The recorded sample's s03 (gold Tarrow): ket-rag and text-rag both answer "Ventholm",
    both supported by their contexts and both wrong: each badge says "grounded but
    wrong" beside a red "correct ✗" mark and a "grounded ✓" mark, in no green; the LLM judge's
    caution is shown with the verdicts."""
    from kgviz.verify.outcome import GREEN

    at = new_app().run()
    radio = at.radio[0]
    radio.set_value(next(o for o in radio.options if o.startswith("recorded from"))).run()
    button(at, "Load sample data").click().run()
    assert not at.exception, at.exception
    at.switch_page("pages/compare.py").run()
    for m in list_methods():
        if m not in ("ket-rag", "text-rag"):
            at.checkbox(key=f"kgviz_cmp_m_{m}").uncheck()
    at.radio(key="kgviz_cmp_source").set_value("Sample questions").run()
    item = next(q for q in at.selectbox(key="kgviz_cmp_pick").options if "Ossel Marine Institute born" in q)
    at.selectbox(key="kgviz_cmp_pick").set_value(item).run()
    button(at, "Compare").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    results = {r.method: r for r in at.session_state["kgviz_comparison"][0].results}
    assert results["ket-rag"].run.answer == "Ventholm" and results["text-rag"].run.answer == "Ventholm"
    badges = [h.value for h in at.get("html") if "kgviz-verdict" in h.value]
    assert len(badges) == 2
    for badge in badges:
        assert "grounded but wrong" in badge and "outcome-grounded_wrong" in badge
        assert GREEN not in badge  # neither the verdict nor its marks
        assert 'mark-correct" data-ok="False"' in badge and "does not match gold (EM 0" in badge
        assert 'mark-grounded" data-ok="True"' in badge
    assert any("judge generously" in i.value for i in at.info)
    assert any("Right: 0 of 2 methods that ran" in c.value for c in at.caption)
