"""A build SIGKILLed after its write stage and before its index stage, in a workspace that keeps
its entity and fact vectors in the vector files only (kgviz.graph.vector_home): the vectors were
in the killed build's spill and nowhere else (the document and chunk vectors are stored after
the write stage). A question then says they are not stored yet, and the next build writes the
documents again and ends equal to a clean build (issue 29)."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kgviz.errors import GraphStoreError
from kgviz.graph import vector_home
from kgviz.graph.store import GraphStore
from kgviz.index import pipeline
from kgviz.providers.embedders import HashingEmbedder
from tests.index.test_index_kill_steps import CHILD, CORPUS, ROOT, _build, _state
from tests.support.golden import first_difference

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")]

def _vectors(store: GraphStore, table: str) -> dict[str, bytes]:
    ids = [r["id"] for r in store.query(f"MATCH (n:{table}) RETURN n.id AS id")]
    return {i: v.tobytes() for i, v in store.get_embeddings(table, ids).items()}


def test_a_build_killed_before_storing_the_vectors_is_redone_by_the_next(tmp_path: Path) -> None:
    db = tmp_path / "killed"
    script = tmp_path / "child.py"
    # killed right after the doc_layer stage's COPY: the write stage is done, the index stage (which
    # stores the entity and fact vectors) has not run; searched exactly, so the vectors are in files
    script.write_text(CHILD.format(root=str(ROOT), db=str(db), corpus=str(CORPUS), marker="COPY SIMILAR_DOC",
                                   how="after", exact_max_rows="float('inf')"))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert proc.returncode == -signal.SIGKILL and "killed after COPY SIMILAR_DOC" in proc.stdout, proc.stdout + proc.stderr

    emb = HashingEmbedder()
    with GraphStore.open(db, embedder_id=emb.id, dim=emb.dim) as store:
        for table in vector_home.TABLES:  # the document and chunk vectors were stored after the write stage
            state = vector_home.state(store, table)
            assert (state or "").startswith(vector_home.FILES_PREFIX) if table in pipeline.READ_BEFORE_INDEX \
                else state == vector_home.PENDING
        assert store.get_meta("pending_documents") not in (None, "[]")  # the documents count as unbuilt
        with pytest.raises(GraphStoreError, match="not stored yet"):
            store.vector_search("Entity", emb.embed(["Tidewell Line"])[0], 3)

    store, report = _build(db)
    clean_store, _ = _build(tmp_path / "clean")
    try:
        assert report.resumed_documents > 0 or report.new_documents > 0
        assert any("stopped in its doc_layer stage" in w for w in report.warnings)
        state, clean = _state(store), _state(clean_store)
        for key in ("counts", "meta", "indexes"):
            assert state[key] == clean[key], key
        assert {k: r["error"] for k, r in state["runs"].items() if r.get("error")} == {}
        assert first_difference(state["runs"], clean["runs"]) is None
        for table in vector_home.TABLES:
            assert _vectors(store, table) == _vectors(clean_store, table)
    finally:
        store.close()
        clean_store.close()
