"""AppTest fixtures: every test gets its own KGVIZ_HOME / KGVIZ_DB, offline mode, the hashing
embedder, and an empty st.cache_resource (it is process-wide, shared by all AppTests)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterator

import pytest
import streamlit as st


@pytest.fixture
def app_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    db = home / "workspaces" / "default"
    monkeypatch.setenv("KGVIZ_HOME", str(home))
    monkeypatch.setenv("KGVIZ_DB", str(db))
    monkeypatch.setenv("KGVIZ_LLM", "offline")
    monkeypatch.setenv("KGVIZ_EMBEDDER", "hashing")
    monkeypatch.setenv("KGVIZ_WORKERS", "2")
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    st.cache_resource.clear()
    yield db
    st.cache_resource.clear()


@pytest.fixture(autouse=True)
def _no_absorbed_bugs(request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """The pages' error boundary turns a bug into a message instead of an exception, so
    ``not at.exception`` alone would no longer see one: fail any AppTest whose page logged an
    unexpected error, unless the test is about the boundary itself (``allow_ui_bugs``)."""
    caplog.set_level(logging.ERROR, logger="kgviz.ui")
    yield
    if request.node.get_closest_marker("allow_ui_bugs"):
        return
    bugs = [r for r in caplog.get_records("call") if r.name == "kgviz.ui" and r.levelno >= logging.ERROR]
    assert not bugs, "a page absorbed a bug: " + "; ".join(
        f"{r.getMessage()}: {r.exc_info[1]!r}" if r.exc_info else r.getMessage() for r in bugs)
