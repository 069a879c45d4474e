"""The sidebar says what the ``auto`` embedder became, and why when it is the hashing fallback."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kgviz.graph.store import GraphStore

ROOT = Path(__file__).resolve().parents[2]


def _run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> AppTest:
    monkeypatch.setenv("KGVIZ_EMBEDDER", "auto")
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "empty-fastembed-cache"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def test_auto_without_a_model_shows_hashing_and_why(app_env: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    at = _run(monkeypatch, tmp_path)
    assert any("Embedder: auto → hashing-768" in str(c.value) for c in at.sidebar.caption)
    warnings = [str(w.value) for w in at.sidebar.warning]
    assert len(warnings) == 1 and "is a fallback: no neural embedder loaded" in warnings[0], warnings  # short
    why = [str(c.value) for e in at.sidebar.expander for c in e.caption]  # the reason, folded
    assert any("hashing embedder" in w and "found no local model" in w and "KGVIZ\\_EMBEDDER\\_DIR" in w
               for w in why), why
    # Home does not repeat it: the warning is shown once
    assert not [w for w in at.main.warning if "embedder" in str(w.value).lower()]
    assert any("a fallback: see the sidebar" in str(c.value) for c in at.main.caption)


def test_auto_on_a_built_workspace_uses_the_embedder_it_was_built_with(app_env: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    GraphStore.open(app_env, embedder_id="hashing-64", dim=64).close()
    at = _run(monkeypatch, tmp_path)
    captions = [str(c.value) for c in at.sidebar.caption]  # markdown-escaped: "\\(64 dims\\)"
    assert any("Embedder: auto → hashing-64" in c and "64 dims" in c for c in captions), captions
    assert not [w for w in at.sidebar.warning if "embedder" in str(w.value).lower()]
