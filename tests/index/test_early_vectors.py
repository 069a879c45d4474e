"""The exact search's vector files of a first build, made by a worker process while the doc_layer
and ket stages run (kgviz.index.early_vectors): byte for byte the files the index stage makes
itself; a build stopped while the worker writes leaves no temporary file and the next build
repairs; an error in the worker is raised by the build."""
from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import worker_tasks
from tests.support.proc import child_pids
from kgviz.errors import DiskFullError
from kgviz.graph import vector_file, vector_home
from kgviz.graph.store import GraphStore
from kgviz.index import early_vectors, pipeline
from kgviz.index.ket_build import KetBuild
from kgviz.index.pipeline import BuildParams, build
from kgviz.index.spill import SPILL_PREFIX
from kgviz.ingest import document_from_text
from kgviz.providers.embedders import HashingEmbedder, usable_cores
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.types import Document

pytestmark = [
    pytest.mark.slow,  # a few builds of ~600 documents, with worker processes
    pytest.mark.skipif(usable_cores() < 2, reason="the worker runs only beside a second core"),
]

ROOT = Path(__file__).resolve().parents[2]
PARAMS = dict(chunk_tokens=64, chunk_overlap=0, workers=2, similar_docs_k=2, ket_descriptions=False)
DIM = 256
_SYLLABLES = ["Bar", "Cel", "Dor", "Fen", "Gal", "Hur", "Ist", "Jor", "Kel", "Lom", "Mar", "Nov", "Pel", "Rud"]
_NAMES = [a + b.lower() for a, b in itertools.product(_SYLLABLES, _SYLLABLES)]


def _corpus(n: int = 640) -> list[Document]:
    """``n`` documents of four pattern sentences each: over 4,096 facts, so the Triple table's
    by-column copy is stored too (kgviz.graph.search.SPARSE_SEARCH_MIN_ROWS)."""
    rng = random.Random(29)
    docs = []
    for i in range(n):
        a, b, c, d, e, f, g = rng.sample(_NAMES, 7)
        text = (f"{a} {b} founded {c} Works in {1800 + i % 200}. {d} was born in {e} in {1850 + i % 150}. "
                f"{f} works for the {g} Courier. {a} married {e} in {1900 + i % 90}.")
        docs.append(document_from_text(text, title=f"Doc {i}", source=f"doc{i}.txt"))
    return docs


def _build(db: Path, docs: list[Document]) -> Any:
    emb = HashingEmbedder(DIM)
    store = GraphStore.open(db, embedder_id=emb.id, dim=emb.dim)
    try:
        return build(docs, store, Reasoner(OfflineLLM(), emb), BuildParams(**PARAMS))  # type: ignore[arg-type]
    finally:
        store.close()


def _files(db: Path) -> dict[str, bytes]:
    folder = db / vector_file.VECTOR_DIR
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _left_behind(db: Path) -> list[str]:
    return [p.name for p in (db / vector_file.VECTOR_DIR).glob("*.tmp*")] + [p.name for p in db.glob(SPILL_PREFIX + "*")]


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return _corpus()


@pytest.fixture(scope="module")
def late_files(tmp_path_factory: pytest.TempPathFactory, docs: list[Document]) -> dict[str, bytes]:
    """The files the index stage makes itself (no worker: its threshold out of reach)."""
    db = tmp_path_factory.mktemp("late") / "db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline, "EARLY_MIN_ROWS", float("inf"), raising=False)
        _build(db, docs)
    files = _files(db)
    assert "Triple.csc.indices.npy" in files and "Entity.emb.npy" in files
    return files


def test_files_made_beside_the_graph_writes_equal_the_index_stages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[Document], late_files: dict[str, bytes]) -> None:
    monkeypatch.setattr(pipeline, "EARLY_MIN_ROWS", 0, raising=False)
    written_here: list[str] = []
    write = vector_file.write

    def recorded(workspace: Path, table: str, *args: Any, **kw: Any) -> Any:
        written_here.append(table)
        return write(workspace, table, *args, **kw)

    monkeypatch.setattr(vector_file, "write", recorded)
    adopted: list[set[str]] = []
    wait = early_vectors.EarlyVectorFiles.wait

    def waited(self: early_vectors.EarlyVectorFiles) -> set[str]:
        adopted.append(wait(self))
        return adopted[-1]

    monkeypatch.setattr(early_vectors.EarlyVectorFiles, "wait", waited)
    report = _build(tmp_path / "db", docs)
    assert adopted == [{"Entity", "Triple"}]  # made by the worker
    # the document and chunk files by the build's own process, after its write stage: its
    # doc_layer and ket stages may read them (pipeline._read_before_index)
    assert sorted(written_here) == sorted(pipeline.READ_BEFORE_INDEX)
    assert _files(tmp_path / "db") == late_files  # byte for byte
    assert report.counts["Triple"] > 4096 and _left_behind(tmp_path / "db") == []
    assert not any(_worker_pids())  # the worker ended with the build


def _worker_pids() -> list[int]:
    """This process's child interpreters running kgviz.index.processes."""
    me, kids = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmd = (entry / "cmdline").read_bytes()
            except (OSError, IndexError):
                continue
            if int(stat[1]) == me and stat[0] != "Z" and b"kgviz.index.processes" in cmd:
                kids.append(int(entry.name))
    return kids


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_build_stopped_while_the_worker_writes_leaves_no_temporary_and_the_next_build_repairs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[Document], late_files: dict[str, bytes]) -> None:
    monkeypatch.setattr(pipeline, "EARLY_MIN_ROWS", 0, raising=False)
    monkeypatch.setattr(early_vectors, "write_from_spill", worker_tasks.slow_vector_files)
    db = tmp_path / "db"
    seen: dict[str, Any] = {}

    def stopped(self: KetBuild) -> None:  # the ket stage fails while the worker's temporaries are on disk
        until = time.monotonic() + 60
        while not list((db / vector_file.VECTOR_DIR).glob("*.tmp*")) and time.monotonic() < until:
            time.sleep(0.01)
        seen["temporaries"] = [p.name for p in (db / vector_file.VECTOR_DIR).glob("*.tmp*")]
        seen["workers"] = _worker_pids()
        raise RuntimeError("the ket stage broke")

    monkeypatch.setattr(KetBuild, "write_stage", stopped)
    with pytest.raises(RuntimeError, match="ket stage broke"):
        _build(db, docs)
    assert seen["temporaries"] and seen["workers"]  # stopped mid-write
    assert _left_behind(db) == []
    assert not any(_worker_pids())

    monkeypatch.undo()
    resumed = _build(db, docs)
    assert _files(db) == late_files
    # the Entity and Triple vectors were to be kept in the files only (kgviz.graph.vector_home) and
    # never got there: their documents stayed pending, and the next build wrote them again
    assert resumed.new_documents == len(docs) and _left_behind(db) == []


def test_a_full_disk_in_the_worker_is_the_builds_disk_full_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[Document], late_files: dict[str, bytes]) -> None:
    monkeypatch.setattr(pipeline, "EARLY_MIN_ROWS", 0, raising=False)
    monkeypatch.setattr(early_vectors, "write_from_spill", worker_tasks.vector_files_on_a_full_disk)
    db = tmp_path / "db"
    with pytest.raises(DiskFullError, match="disk is full") as err:
        _build(db, docs)
    assert "free some disk space" in err.value.hint
    assert _left_behind(db) == [] and not any(_worker_pids())

    monkeypatch.undo()
    _build(db, docs)  # the disk has room again
    assert _files(db) == late_files


CHILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})  # a plain script: tests and kgviz from the checkout
    from tests.index.test_early_vectors import PARAMS, _build, _corpus
    from tests.support import worker_tasks
    from kgviz.index import early_vectors, pipeline

    pipeline.EARLY_MIN_ROWS = 0
    early_vectors.write_from_spill = worker_tasks.slow_vector_files
    _build(__import__("pathlib").Path({db!r}), _corpus())
    print("finished", flush=True)
    """
)


def _children(pid: int) -> list[int]:
    return child_pids(pid, zombies=False)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL and /proc")
def test_a_killed_builds_worker_removes_its_temporaries_and_ends(tmp_path: Path) -> None:
    db = tmp_path / "db"
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(root=str(ROOT), db=str(db)))
    proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT)
    until = time.monotonic() + 120
    while not list((db / vector_file.VECTOR_DIR).glob("Triple.emb.npy.tmp*")):  # its largest table
        assert proc.poll() is None and time.monotonic() < until
        time.sleep(0.01)
    workers = _children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert workers  # the build's worker process was writing
    until = time.monotonic() + 5  # its table alone would take it ~15 s more (0.2 s a gather)
    while any(_running(w) for w in workers) and time.monotonic() < until:
        time.sleep(0.1)
    assert not any(_running(w) for w in workers)  # it saw its build gone and ended
    assert not list((db / vector_file.VECTOR_DIR).glob("*.tmp*"))  # having removed its temporaries


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _stored(store: GraphStore, table: str) -> dict[str, bytes]:
    ids = [r["id"] for r in store.query(f"MATCH (n:{table}) RETURN n.id AS id")]
    return {i: v.tobytes() for i, v in store.get_embeddings(table, ids).items()}


def test_a_build_run_inside_one_whose_worker_writes_ends_with_every_vector(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[Document]) -> None:
    """Build B runs to the end inside build A (same thread: the re-entrant build lock lets it in)
    while A's worker is still writing A's entity and fact files. Each build stores what it
    loaded and merges into what the other stored: the workspace ends with every vector, bit for
    bit, that the two builds run one after the other store (an entity or fact the first build
    wrote keeps its vector)."""
    monkeypatch.setattr(pipeline, "EARLY_MIN_ROWS", 0, raising=False)
    monkeypatch.setattr(early_vectors, "write_from_spill", worker_tasks.slow_vector_files)
    emb = HashingEmbedder(DIM)
    first, second = docs[: len(docs) // 2], docs[len(docs) // 2:]
    store = GraphStore.open(tmp_path / "db", embedder_id=emb.id, dim=emb.dim)
    nested: dict[str, Any] = {}

    def on_a(ev: Any) -> None:
        if ev.stage == "write" and ev.done == ev.total and not nested:
            nested["workers"] = _worker_pids()  # A's worker is writing
            nested["b"] = build(second, store, Reasoner(OfflineLLM(), emb), BuildParams(**PARAMS))  # type: ignore[arg-type]

    try:
        build(first, store, Reasoner(OfflineLLM(), emb), BuildParams(**PARAMS), progress=on_a)  # type: ignore[arg-type]
        assert nested["workers"] and nested["b"].new_documents == len(second)
        union = GraphStore.open(tmp_path / "union", embedder_id=emb.id, dim=emb.dim)
        try:
            for part in (first, second):
                build(part, union, Reasoner(OfflineLLM(), emb), BuildParams(**PARAMS))  # type: ignore[arg-type]
            for table in vector_home.TABLES:
                got = _stored(store, table)
                assert got and got == _stored(union, table), table
            q = emb.embed(["a question about the corpus"])[0]
            for table in vector_home.TABLES:
                assert store.vector_search(table, q, 5) == union.vector_search(table, q, 5)
        finally:
            union.close()
        assert store.get_meta("pending_documents") in (None, "[]") and _left_behind(tmp_path / "db") == []
    finally:
        store.close()
    assert not any(_worker_pids())
