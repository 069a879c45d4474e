"""The build report shows the graph's tables, not kgviz's internal bookkeeping (Meta)."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _report_page() -> None:
    from kgviz.index.params import BuildReport
    from kgviz.ui import render

    render.build_report(BuildReport(counts={"Document": 3, "Chunk": 5, "Meta": 4, "MENTIONS": 9}))


def test_meta_table_is_hidden_from_the_build_report() -> None:
    at = AppTest.from_function(_report_page).run()
    assert not at.exception, at.exception
    table = next(df.value for df in at.dataframe if "table" in df.value.columns)
    assert list(table["table"]) == ["Document", "Chunk", "MENTIONS"]


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
