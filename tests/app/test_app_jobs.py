"""kgviz.ui.jobs.run_build: progress from worker threads reaches the page; errors come back."""
from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

import kgviz.index.pipeline as pipeline
from kgviz.errors import BuildError
from kgviz.index.params import BuildParams, BuildReport, ProgressEvent
from kgviz.types import Usage


def _page() -> None:
    import streamlit as st

    from kgviz.index.params import BuildParams
    from kgviz.ui import error_boundary
    from kgviz.ui.jobs import run_build

    with error_boundary("Build"):
        report = run_build([], store=None, reasoner=None, params=BuildParams(), label="Test build")  # type: ignore[arg-type]
        st.write(f"report mode {report.mode}")


def _fake_build(fail: bool) -> Any:
    def build(documents: list, store: Any, reasoner: Any, params: BuildParams, *, progress: Any,
              cancel: threading.Event | None = None) -> BuildReport:
        def emit() -> None:  # like the pipeline's worker pool: callbacks from another thread
            for i in range(1, 4):
                progress(ProgressEvent("extract", i, 3, f"chunk {i}", Usage(calls=i, input_tokens=10 * i)))
            progress(ProgressEvent("index", 1, 1))

        t = threading.Thread(target=emit)
        t.start()
        t.join()
        if fail:
            raise BuildError("extraction failed at chunk 2", hint="check the provider")
        return BuildReport(mode="offline")

    return build


def test_progress_bars_and_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "build", _fake_build(False))
    at = AppTest.from_function(_page).run(timeout=30)
    assert not at.exception, at.exception
    bars = at.get("progress")
    texts = [b.proto.text for b in bars]
    assert any(t.startswith("extract: 3/3 — chunk 3") and "3 calls" in t for t in texts), texts
    assert any(t.startswith("index: 1/1") for t in texts)
    assert [m.value for m in at.markdown] == ["report mode offline"]
    assert at.status[0].label.startswith("Test build: done in")


def test_build_error_is_shown_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "build", _fake_build(True))
    at = AppTest.from_function(_page).run(timeout=30)
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == ["Build: extraction failed at chunk 2 — check the provider"]
    assert at.status[0].label == "Test build: failed"


# --- issue 15: a build with failed chunks is never shown as a plain success ---------------------
_FAILURES = [("doc:a#c0", "the reply was empty", ""), ("doc:a#c1", "the server returned HTML, not an API reply", "<html>"),
             ("doc:b#c0", "the reply contained no triple", "lorem"), ("doc:b#c1", "timeout", "")]


def test_status_line_says_built_with_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    def build(documents: list, store: Any, reasoner: Any, params: BuildParams, *, progress: Any,
              cancel: threading.Event | None = None) -> BuildReport:
        return BuildReport(mode="openai-compatible:qwen", failures=list(_FAILURES))

    monkeypatch.setattr(pipeline, "build", build)
    at = AppTest.from_function(_page).run(timeout=30)
    assert not at.exception, at.exception
    assert at.status[0].label.startswith("Test build: built with 4 failed chunk(s)")


def _report_page(failures: list) -> None:
    from kgviz.index.params import BuildReport
    from kgviz.ui.render import build_report

    build_report(BuildReport(mode="openai-compatible:qwen", failures=[tuple(f) for f in failures],
                             n_malformed_lines=2, counts={"Document": 2, "Triple": 5}))


def test_report_warns_with_the_first_reasons() -> None:
    at = AppTest.from_function(_report_page, args=(_FAILURES,)).run(timeout=30)
    assert not at.exception, at.exception
    (warning,) = [re.sub(r"\\(.)", r"\1", w.value) for w in at.warning]  # md_text escapes markdown
    assert warning.startswith("Built with failures: 4 chunk(s) could not be extracted")
    assert "the reply was empty" in warning and "HTML" in warning and "(and 1 more)" in warning
    assert "timeout" not in warning  # only the first three reasons; the table lists all
    table = next(df.value for df in at.dataframe if "error" in df.value.columns)
    assert list(table["chunk"]) == [c for c, _, _ in _FAILURES]
