"""AppTest fixtures: every test gets its own KGVIZ_HOME / KGVIZ_DB, offline mode, the hashing
embedder, and an empty st.cache_resource (it is process-wide, shared by all AppTests)."""
from __future__ import annotations

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
