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
