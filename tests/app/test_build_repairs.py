"""The Build page reports an index an interrupted build left half made, and repairs it (issue 28).
The interruption is staged: a full-text index dropped with its step's mark left set, the state a
kill leaves before Kùzu's first commit (the kill itself is tests/index/test_index_kill_steps.py)."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from kgviz.graph.store import GraphStore
from kgviz.index.steps import MARK_PREFIX

ROOT = Path(__file__).resolve().parents[2]


def test_the_build_page_says_it_repaired_the_full_text_index(app_env: Path) -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    at.switch_page("pages/build.py").run()
    at.radio[0].set_value("Sample corpus").run()
    next(b for b in at.button if b.label == "Build").click().run()
    assert not at.exception, at.exception
    assert not [w for w in at.warning if "repaired" in str(w.value)]
    with GraphStore.open(app_env) as store:  # the app's store shares this process's Database
        store.execute("CALL DROP_FTS_INDEX('Chunk', 'chunk_fts')")
        store.set_meta(MARK_PREFIX + "fts_index", "1")
    next(b for b in at.button if b.label == "Build").click().run()
    assert not at.exception, at.exception
    shown = [str(w.value).replace("\\", "") for w in at.warning]
    assert any("repaired the full-text index on Chunk: an earlier build was interrupted" in w for w in shown), shown
    with GraphStore.open(app_env) as store:
        assert store.fts_search("Tidewell Line", 1) and store.get_meta(MARK_PREFIX + "fts_index") is None
