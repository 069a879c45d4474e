"""A build killed inside any index step (document layer, KNN graph + PageRank, keyword layer,
vector index, full-text index) is repaired by the next build: it ends equal to a clean build,
reports the repair, and every method answers (issue 28).

The child process builds the sample corpus offline and SIGKILLs itself inside the chosen step:
after one of the step's own statements for the steps kgviz writes statement by statement, and
inside Kùzu's CREATE_*_INDEX call (at the first write it makes to the WAL) for the indexes Kùzu
builds in one call (or, for the vector index, just after the call returned: the index is whole
but the step's mark is still set). Vector indexes are forced on (pipeline.EXACT_MAX_ROWS = 0) so the sample's
small tables get one; searches stay exact either way.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import kgviz.index.pipeline as pipeline
from kgviz.graph import search
from kgviz.graph.store import GraphStore
from kgviz.index import ket_plan
from kgviz.index.steps import MARK_PREFIX, label
from kgviz.ingest import load_paths
from kgviz.methods.base import MethodContext
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from tests.support.golden import canonical, first_difference

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")]

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "sample_data" / "corpus"
QUESTIONS = ["In what year was the Tidewell Line founded?",
             "Who designed the bridge that Mira Tesk said was unsafe?"]

# case -> (step, the statement the child waits for, kill "after" it or "inside" it)
KILL_POINTS = {
    "doc_layer": ("doc_layer", "COPY SIMILAR_DOC", "after"),
    "ket_core": ("ket_core", "COPY KNN", "after"),
    "keywords": ("keywords", "COPY SubChunk", "after"),
    "vector_index:Document": ("vector_index:Document", "CREATE_VECTOR_INDEX", "inside"),
    # the call returned (its checkpoint done) but the step's mark is still set: a whole index
    "vector_index:Document-returned": ("vector_index:Document", "CREATE_VECTOR_INDEX", "after"),
    "fts_index": ("fts_index", "CREATE_FTS_INDEX", "inside"),
    "fts_index-returned": ("fts_index", "CREATE_FTS_INDEX", "after"),  # likewise: a whole index
}

CHILD = textwrap.dedent(
    """
    import os, signal, sys, threading
    sys.path.insert(0, {root!r})
    import kgviz.index.pipeline as pipeline
    from kgviz.graph.store import GraphStore
    from kgviz.ingest import load_paths
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.providers.offline import OfflineLLM
    from kgviz.reasoning import Reasoner

    pipeline.EXACT_MAX_ROWS = {exact_max_rows}  # 0: every vector index is built
    marker, how = {marker!r}, {how!r}
    original = GraphStore._statement

    def die(where):
        print("killed", where, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    def watch(shadow, stop, gate):
        # the statement's first checkpoint begins (Kùzu creates the shadow file): what it has
        # committed so far is in the WAL, and more is to come (both CREATE_*_INDEX calls
        # checkpoint before they finish). The watcher kills holding the gate, which the statement's
        # thread takes as soon as the call returns: a watcher the scheduler held back past the
        # checkpoint's end still kills before any later statement runs (never in the drop below).
        while not stop.is_set():
            if os.path.exists(shadow):
                with gate:
                    if not stop.is_set():
                        die("inside " + marker)

    def hooked(self, cypher, params, *, write, fetch):
        if not (write and marker in cypher):
            return original(self, cypher, params, write=write, fetch=fetch)
        if how == "after":
            original(self, cypher, params, write=write, fetch=fetch)
            die("after " + marker)
        shadow = str(self.db_file) + ".shadow"
        for _ in range(50):  # a watcher that missed the checkpoint: drop the index and try again
            stop, gate = threading.Event(), threading.Lock()
            threading.Thread(target=watch, args=(shadow, stop, gate), daemon=True).start()
            original(self, cypher, params, write=write, fetch=fetch)
            with gate:
                stop.set()
            table, name = cypher.split("(", 1)[1].split(",")[:2]
            drop = "DROP_FTS_INDEX" if "FTS" in cypher else "DROP_VECTOR_INDEX"
            original(self, f"CALL {{drop}}({{table}}, {{name}})", None, write=True, fetch="none")
        print("never landed inside", flush=True)
        sys.exit(3)

    GraphStore._statement = hooked
    emb = HashingEmbedder()
    store = GraphStore.open({db!r}, embedder_id=emb.id, dim=emb.dim)
    pipeline.build(load_paths([{corpus!r}]).documents, store, Reasoner(OfflineLLM(), emb),
                   pipeline.BuildParams(workers=1))
    print("finished", flush=True)
    """
)


def _build(db: Path) -> tuple[GraphStore, Any]:
    emb = HashingEmbedder()
    store = GraphStore.open(db, embedder_id=emb.id, dim=emb.dim)
    report = pipeline.build(load_paths([CORPUS]).documents, store, Reasoner(OfflineLLM(), emb),
                            pipeline.BuildParams(workers=1))
    return store, report


def _state(store: GraphStore) -> dict[str, Any]:
    """What a build leaves: row counts, Meta, which indexes exist, every method's canonical
    runs on the questions (index names aside: a repaired full-text index has another name)."""
    from kgviz.methods.registry import list_methods
    from kgviz.run import run_method

    meta = {r["k"]: r["v"] for r in store.query("MATCH (m:Meta) RETURN m.key AS k, m.value AS v")}
    indexes = sorted((r["table_name"], r["index_type"], list(r["property_names"]))
                     for r in store.query("CALL show_indexes() RETURN *"))
    ctx = MethodContext(store, Reasoner(OfflineLLM(), HashingEmbedder()))
    runs = {f"{m} | {q}": run_method(m, q, ctx).to_dict() for q in QUESTIONS for m in list_methods()}
    return {"counts": store.counts(), "meta": meta, "indexes": indexes, "runs": canonical(runs)}


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline, "EXACT_MAX_ROWS", 0)
        store, report = _build(tmp_path_factory.mktemp("clean") / "db")
        try:
            assert report.repairs == []
            return _state(store)
        finally:
            store.close()


@pytest.mark.parametrize("case", list(KILL_POINTS))
def test_kill_inside_an_index_step_is_repaired_by_the_next_build(
    case: str, clean: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "killed"
    step, marker, how = KILL_POINTS[case]
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(root=str(ROOT), db=str(db), corpus=str(CORPUS), marker=marker, how=how,
                                   exact_max_rows=0))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr
    assert f"killed {how} {marker}" in proc.stdout

    monkeypatch.setattr(pipeline, "EXACT_MAX_ROWS", 0)
    emb = HashingEmbedder()
    with GraphStore.open(db, embedder_id=emb.id, dim=emb.dim) as store:
        assert store.get_meta(MARK_PREFIX + step) == "1"  # the kill landed inside the step
        opened, whole = store.take_repairs(), store.has_vector_index("Document")
        dropped = ["dropped the vector index on Document, which an interrupted build left half made (searches "
                   "rank Document exactly without it; a build creates it again where the table needs one)"]
        if not step.startswith("vector_index"):
            assert opened == []
        elif how == "after":
            assert (opened, whole) == ([], True)  # the call committed and checkpointed a whole index
        else:
            # The kill lands somewhere in the call's checkpoint, which the watcher cannot pin:
            # before Kùzu logs the checkpoint to the WAL, the index is listed without its data
            # (kept, it would make every later open of the file fail an assertion) and is dropped;
            # after, the open replays the checkpoint and the index is whole, so nothing is dropped.
            assert (opened, whole) in [(dropped, False), ([], True)], (opened, whole)
    with GraphStore.open(db, embedder_id=emb.id, dim=emb.dim) as store:  # and it opens again
        assert store.take_repairs() == []
    store, report = _build(db)
    try:
        # a whole index is kept (nothing to repair); a dropped or half-made one is created again
        if step.startswith("vector_index"):
            repaired = not whole
        elif step == "fts_index":
            # killed before CREATE_FTS_INDEX returned, Kùzu left the hidden tables of its half-made
            # index: the repair took the next name; killed after (how == "after", or a watcher the
            # scheduler held back past the call's end), the index is whole and kept
            repaired = bool(report.repairs)
            assert search.fts_index_of(store, "Chunk")[0] == ("chunk_fts_1" if repaired else "chunk_fts")
            assert not (repaired and how == "after")
        else:
            repaired = True
        assert report.repairs == ([f"repaired {label(step)}: an earlier build was interrupted while writing it"]
                                  if repaired else [])
        assert report.ket["plan"] == ket_plan.REUSED  # kept by the killed build's knn stage: not computed again
        assert set(report.repairs) <= set(report.warnings)  # shown where warnings are shown
        state = _state(store)
        assert not [k for k in state["meta"] if k.startswith(MARK_PREFIX)]  # every step finished
        for key in ("counts", "meta", "indexes"):
            assert state[key] == clean[key], key
        errors = {k: run["error"] for k, run in state["runs"].items() if run.get("error")}
        assert errors == {}  # every method answers
        assert first_difference(state["runs"], clean["runs"]) is None
        again = pipeline.build(load_paths([CORPUS]).documents, store, Reasoner(OfflineLLM(), emb),
                               pipeline.BuildParams(workers=1))
        assert again.repairs == []  # repaired once, for good
    finally:
        store.close()


def test_a_build_killed_in_its_write_stage_resumes_with_the_kept_plan(
    clean: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after the write stage's first Triple COPY: its documents are written again by the
    next build, whose chunks are those the killed build planned, so the kept plan is reused, and
    the graph ends equal to a clean build's."""
    db = tmp_path / "killed"
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(root=str(ROOT), db=str(db), corpus=str(CORPUS), marker="COPY Triple FROM",
                                   how="after", exact_max_rows=0))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert proc.returncode == -signal.SIGKILL and "killed after COPY Triple FROM" in proc.stdout, proc.stdout + proc.stderr
    assert (ket_plan.folder(db) / "key.json").exists()

    monkeypatch.setattr(pipeline, "EXACT_MAX_ROWS", 0)
    store, report = _build(db)
    try:
        assert report.ket["plan"] == ket_plan.REUSED and report.resumed_documents > 0
        assert any("stopped in its write stage" in w for w in report.warnings)
        state = _state(store)
        for key in ("counts", "meta", "indexes"):
            assert state[key] == clean[key], key
        assert first_difference(state["runs"], clean["runs"]) is None
    finally:
        store.close()
