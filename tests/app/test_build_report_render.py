"""The build report shows the graph's tables, not kgviz's internal bookkeeping (Meta), and times
its stages with one clock."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from test_app_pages import _button, new_app


def _report_page() -> None:
    from kgviz.index.params import BuildReport
    from kgviz.ui import render

    render.build_report(BuildReport(counts={"Document": 3, "Chunk": 5, "Meta": 4, "MENTIONS": 9}))


def test_meta_table_is_hidden_from_the_build_report() -> None:
    at = AppTest.from_function(_report_page).run()
    assert not at.exception, at.exception
    table = next(df.value for df in at.dataframe if "table" in df.value.columns)
    assert list(table["table"]) == ["Document", "Chunk", "MENTIONS"]


def test_build_report_has_one_clock(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page("pages/build.py").run()
    at.radio[0].set_value("Sample corpus").run()
    _button(at, "Build").click().run()
    assert not at.exception, at.exception
    table = next(df.value for df in at.dataframe if "wall-clock seconds" in df.value.columns)
    assert "seconds" not in table.columns  # no second, summed-latency clock beside it
    stages = list(table["stage"])
    assert stages[:3] == ["chunk", "knn", "extract"] and stages[-1] == "total"
    secs = table.set_index("stage")["wall-clock seconds"]
    assert secs["total"] == pytest.approx(secs.drop("total").sum(), abs=0.01)
    assert int(table.set_index("stage").loc["embed", "calls"]) > 0  # usage sits beside its stage's time
    assert not [m for m in at.markdown if m.value in ("**Usage by stage**", "**Seconds per stage**")]


def test_stage_table_shows_the_stage_clock_not_summed_call_latency() -> None:
    """The issue's case: 0.10 s of model calls inside a 1.8 s stage read as two clocks."""
    from kgviz.index.params import BuildReport
    from kgviz.types import Usage
    from kgviz.ui.render import stage_frame

    report = BuildReport(seconds_by_stage={"chunk": 0.05, "extract": 1.8, "embed": 0.4},
                         usage_by_stage={"extract": Usage(1200, 300, 12, 2, latency_s=0.10, cost_usd=0.002),
                                         "embed": Usage(calls=3, latency_s=0.25)}, mode="openai:x")
    rows = stage_frame(report).set_index("stage")
    assert list(rows.index) == ["chunk", "extract", "embed", "total"]
    assert list(rows["wall-clock seconds"]) == [0.05, 1.8, 0.4, 2.25]
    assert list(rows["calls"]) == [0, 12, 3, 15] and rows.loc["extract", "cached"] == 2
    assert rows.loc["total", "input tokens"] == 1200 and rows.loc["total", "$"] == 0.002
    assert 0.10 not in rows.to_numpy().ravel().tolist()  # the summed latency is nowhere
def _ungrounded_report_page() -> None:
    from kgviz.index.params import BuildReport
    from kgviz.ui import render

    render.build_report(BuildReport(
        counts={"Document": 1, "Chunk": 2}, extracted_chunks=2, failed_chunks=0, facts_accepted=1,
        facts_ungrounded=27, facts_prompt_examples=26, ungrounded_chunks=2, not_following_prompt=True,
        n_malformed_lines=1,
        chunk_facts=[{"chunk_id": "doc:a#c0", "accepted": 0, "ungrounded": 26, "prompt_examples": 26, "malformed": 0},
                     {"chunk_id": "doc:a#c1", "accepted": 1, "ungrounded": 1, "prompt_examples": 0, "malformed": 1}],
        rejected_facts=[("doc:a#c0", "(Ana Pell; was born in; Dorrow)", "'Ana Pell' is a name from the prompt's examples")]))


def test_the_report_counts_facts_per_chunk_and_says_the_model_is_not_following_the_prompt() -> None:
    """Issue 23: accepted / not in the text / malformed per chunk, the facts left out, and an error
    when most chunks' facts were not in their text."""
    at = AppTest.from_function(_ungrounded_report_page).run()
    assert not at.exception, at.exception
    assert any("not following the prompt" in e.value and "26 copy the prompt's examples" in e.value for e in at.error)
    per_chunk = next(df.value for df in at.dataframe if "not in the text" in df.value.columns)
    assert list(per_chunk["accepted"]) == [0, 1] and list(per_chunk["not in the text"]) == [26, 1]
    left_out = next(df.value for df in at.dataframe if "fact left out" in df.value.columns)
    assert list(left_out["fact left out"]) == ["(Ana Pell; was born in; Dorrow)"]
    assert any("chunks extracted: 2, failed: 0" in c.value for c in at.caption)
