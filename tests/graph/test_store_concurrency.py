"""GraphStore under concurrency: another process's lock, threads, a crash mid-COPY."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from kgviz.errors import DatabaseLockedError, GraphStoreError, WriteConflictError
from tests.support.locks import held_by_another_thread
from kgviz.graph.store import GraphStore

DIM = 8
REPO_ROOT = Path(__file__).resolve().parents[2]


def spawn(code: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def wait_for_line(proc: subprocess.Popen[str], expected: str) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line != expected:
        proc.kill()
        raise AssertionError(f"child said {line!r}; stderr: {proc.stderr.read() if proc.stderr else ''}")


@pytest.mark.slow
def test_database_held_by_another_process(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    GraphStore.open(ws, embedder_id="e", dim=DIM).close()
    child = spawn(f"""
        import time
        from kgviz.graph.store import GraphStore
        store = GraphStore.open({str(ws)!r})
        print("ready", flush=True)
        time.sleep(60)
    """)
    try:
        wait_for_line(child, "ready")
        for read_only in (False, True):
            with pytest.raises(DatabaseLockedError) as info:
                GraphStore.open(ws, read_only=read_only)
            message = info.value.user_message()
            assert str(ws / "graph.kuzu") in message
            assert "another kgviz process" in message and "CLI" in message
    finally:
        child.kill()
        child.wait(timeout=30)
    with GraphStore.open(ws) as store:  # the lock goes with the process
        assert store.embedder_id == "e"


@pytest.mark.slow
def test_crash_mid_copy_leaves_no_partial_rows(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    GraphStore.open(ws, embedder_id="e", dim=DIM).close()
    n = 1_500_000
    # The child calls the store's COPY step directly so that the kill lands inside the COPY
    # (bulk_load_nodes would first spend time looking up existing ids).
    child = spawn(f"""
        import pyarrow as pa
        from kgviz.graph.arrow import build_table
        from kgviz.graph.store import GraphStore
        store = GraphStore.open({str(ws)!r})
        store.bulk_load_nodes("Keyword", [{{"id": "kw:before"}}])
        ids = pa.array([f"kw:{{i}}" for i in range({n})])
        schema = [("id", "STRING"), ("word", "STRING"), ("description", "STRING"), ("emb", "FLOAT[{DIM}]")]
        table = build_table({{"id": ids, "word": ids}}, {n}, schema, what="Keyword")
        print("copying", flush=True)
        store._copy("COPY Keyword FROM $rows", table)
        print("done", flush=True)
    """)
    wait_for_line(child, "copying")
    time.sleep(0.5)
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate(timeout=30)
    if "done" in out:
        pytest.skip("the COPY finished before the kill landed")
    with GraphStore.open(ws) as store:
        assert store.existing_ids("Keyword", ["kw:before"]) == {"kw:before"}  # committed earlier
        assert store.counts()["Keyword"] == 1  # nothing of the interrupted COPY
        assert store.bulk_load_nodes("Keyword", [{"id": "kw:0"}]) == 1  # and it is writable


@pytest.mark.slow
def test_concurrent_queries_and_writes_from_threads(tmp_path: Path) -> None:
    store = GraphStore.open(tmp_path / "ws", embedder_id="e", dim=DIM)
    other = GraphStore.open(tmp_path / "ws")  # a second store on the same Database
    try:
        rng = np.random.default_rng(0)
        store.bulk_load_nodes("Chunk", [{"id": f"c{i}", "ord": i, "emb": rng.normal(size=DIM)} for i in range(500)])
        errors: list[BaseException] = []

        def reader(seed: int) -> None:
            try:
                for j in range(60):
                    i = (seed * 61 + j) % 500
                    rows = store.query("MATCH (c:Chunk) WHERE c.ord = $o RETURN c.id AS id", {"o": i})
                    assert rows == [{"id": f"c{i}"}]
                    assert store.existing_ids("Chunk", [f"c{i}", "zz"]) == {f"c{i}"}
                    assert len(store.vector_search("Chunk", np.ones(DIM), 3)) == 3
            except BaseException as err:  # collected and re-raised in the main thread
                errors.append(err)

        def writer(seed: int, target: GraphStore) -> None:
            try:
                for j in range(15):
                    target.bulk_load_nodes("Keyword", [{"id": f"kw:{seed}:{j}:{m}"} for m in range(20)])
                    target.execute("CREATE (:Extraction {chunk_id: $c, status: 'ok'})", {"c": f"{seed}:{j}"})
                    target.set_meta(f"progress{seed}", j)
            except BaseException as err:
                errors.append(err)

        threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
        threads += [threading.Thread(target=writer, args=(s, store if s % 2 else other)) for s in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors[:3]
        counts = store.counts()
        assert counts["Keyword"] == 3 * 15 * 20 and counts["Extraction"] == 3 * 15
    finally:
        other.close()
        store.close()


def test_write_lock_timeout_and_raw_conflict(tmp_path: Path) -> None:
    with GraphStore.open(tmp_path / "ws", embedder_id="e", dim=DIM) as store:
        with held_by_another_thread(store.write_lock, wait_s=10):
            with pytest.raises(WriteConflictError):
                with store.write_lock(timeout=0.05):
                    pass
        with store.write_lock(timeout=1):  # re-entrant once free
            with store.write_lock():
                store.execute("CREATE (:Chunk {id: 'x'})")
        assert store.existing_ids("Chunk", ["x"]) == {"x"}


def test_store_closes_database_with_last_reference(tmp_path: Path) -> None:
    a = GraphStore.open(tmp_path / "ws", embedder_id="e", dim=DIM)
    b = GraphStore.open(tmp_path / "ws")
    a.close()
    assert b.query("RETURN 1 AS one") == [{"one": 1}]
    b.close()
    b.close()  # idempotent
    with pytest.raises(GraphStoreError, match="closed"):
        b.counts()
    # the file lock is released: a child process can now open it
    child = spawn(f"""
        from kgviz.graph.store import GraphStore
        print(GraphStore.open({str(tmp_path / "ws")!r}).embedder_id, flush=True)
    """)
    out, err = child.communicate(timeout=60)
    assert out.strip() == "e", err


def test_wal_is_checkpointed_once_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kgviz.graph.store as store_module

    monkeypatch.setattr(store_module, "CHECKPOINT_WAL_BYTES", 32 * 1024)
    with GraphStore.open(tmp_path / "ws", embedder_id="e", dim=DIM) as store:
        wal = store.db_file.with_name(store.db_file.name + ".wal")
        sizes = []
        for i in range(120):
            store.execute("CREATE (:Chunk {id: $id, text: $t})", {"id": f"c{i}", "t": "x" * 1000})
            sizes.append(wal.stat().st_size if wal.exists() else 0)
        # the WAL grows with every write and is folded into the database file whenever it
        # passes the threshold, so it never gets much beyond it
        drops = [i for i in range(1, len(sizes)) if sizes[i] < sizes[i - 1]]
        assert len(drops) >= 2 and max(sizes) < 32 * 1024 + 4096
        assert store.counts()["Chunk"] == 120
