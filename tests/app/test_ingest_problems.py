"""What the Build page says about upload problems: rejected files and skipped .jsonl lines are
counted apart, every row says what to do, and "the others proceed" only when something does.

Regression: one .jsonl with a broken line gave "3 file(s) rejected — nothing was written for
them; the others proceed" next to "N document(s) ready", an empty "what to do" and the reason
"Unterminated string starting at at column 29".
"""
from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from kgviz.ingest import load_uploads
from kgviz.ui.render import ingest_problem_rows, ingest_summary

GOOD = "\n".join(json.dumps({"id": f"r{i}", "title": f"Row {i}", "text": f"Row number {i} is fine."})
                 for i in range(3))
BROKEN = (GOOD + '\n{"id": "r9", "text": "a string that never ends}\n').encode()


def test_one_broken_line_is_a_skipped_line_not_a_rejected_file() -> None:
    result = load_uploads([("broken.jsonl", BROKEN)])
    assert len(result.documents) == 3 and len(result.errors) == 1
    summary = ingest_summary(result)
    assert summary.startswith("1 line skipped in broken.jsonl.")
    assert "rejected" not in summary and "the other 3 documents proceed" in summary
    [row] = ingest_problem_rows(result)
    assert row["line"] == "4" and row["problem"] == "line skipped"
    assert "at at" not in row["reason"] and "Unterminated string starting at column" in row["reason"]
    assert "JSON object" in row["what to do"]


def test_rejected_files_and_skipped_lines_are_counted_apart() -> None:
    result = load_uploads([("broken.jsonl", BROKEN), ("empty.txt", b"   \n"), ("good.txt", b"Some text.")])
    summary = ingest_summary(result)
    assert summary.startswith("1 file rejected; 1 line skipped in broken.jsonl.")
    assert "the other 4 documents proceed" in summary
    rows = ingest_problem_rows(result)
    assert {r["problem"] for r in rows} == {"file rejected", "line skipped"}
    assert all(r["what to do"] for r in rows)


def test_nothing_proceeds_when_every_file_is_rejected() -> None:
    result = load_uploads([("empty.txt", b""), ("bad.jsonl", b"{oops\n[1]\n")])
    assert not result.documents
    summary = ingest_summary(result)
    assert summary.startswith("2 files rejected.") and "proceed" not in summary
    assert "nothing is left to build" in summary
    assert ingest_summary(load_uploads([("good.txt", b"Fine.")])) == ""


def _page(path: str) -> None:
    from pathlib import Path as P

    import streamlit as st

    from kgviz.ingest import load_uploads as load
    from kgviz.ui.render import ingest_problems

    result = load([("broken.jsonl", P(path).read_bytes())])
    ingest_problems(result)
    st.write(f"{len(result.documents)} document(s) ready.")


def test_build_page_banner_agrees_with_ready_documents(app_env: Path, tmp_path: Path) -> None:
    upload = tmp_path / "broken.jsonl"
    upload.write_bytes(BROKEN)
    at = AppTest.from_function(_page, args=(str(upload),)).run(timeout=30)
    assert not at.exception
    [banner] = [e.value for e in at.error]
    assert "1 line skipped in broken.jsonl" in banner and "rejected" not in banner
    table = at.dataframe[0].value
    assert list(table["what to do"]) and all(table["what to do"].astype(bool))
    assert "3 document(s) ready." in [m.value for m in at.markdown]


def _sample_page(folder: str) -> None:
    from kgviz.ingest import load_paths
    from kgviz.ui.render import ingest_problems

    ingest_problems(load_paths([folder]))


def test_build_page_lists_duplicates_with_both_sources_and_skipped_files(app_env: Path) -> None:
    from kgviz.ui.render import ingest_left_out_rows

    sample = Path(__file__).resolve().parents[2] / "sample_data"
    at = AppTest.from_function(_sample_page, args=(str(sample),)).run(timeout=30)
    assert not at.exception and not at.error
    [info] = [i.value for i in at.info]
    assert info.startswith("Left out or flagged: 18 ")
    table = at.dataframe[0].value
    rows = table.to_dict("records")
    assert {"file": "corpus.jsonl#tarrow", "what": "duplicate, built once",
            "why": "same text as corpus/tarrow.txt"} in rows
    assert {"file": "README.md", "what": "skipped", "why": "project documentation, not corpus"} in rows
    words = " ".join(f"w{i}" for i in range(100)).encode()
    near = load_uploads([("a.txt", words), ("b.txt", words + b" end")])
    [row] = ingest_left_out_rows(near)
    assert row["file"] == "b.txt" and row["what"] == "near-duplicate, kept" and "overlap with a.txt" in row["why"]
