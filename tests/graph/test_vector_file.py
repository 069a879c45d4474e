"""Exact vector search at 100k+ rows (issue 29): a memory-mapped matrix in the workspace
(kgviz.graph.vector_file), exact top-k with ties broken by id, so a trace does not depend on the
build (Kùzu's HNSW gave different top-10s for 40 of 50 queries on two builds of the same vectors)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kgviz.graph.search as search_module
from kgviz.graph import vector_file
from kgviz.graph.store import GraphStore

DIM = 16


def vectors(n: int, seed: int) -> np.ndarray:
    """Random unit vectors, a tenth of them exact copies of another row (ties the cut must settle)."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n, DIM)).astype(np.float32)
    copies = rng.choice(n, size=n // 10, replace=False)
    emb[copies] = emb[rng.choice(n, size=n // 10)]
    return emb / np.linalg.norm(emb, axis=1, keepdims=True)


def load(store: GraphStore, emb: np.ndarray, order: np.ndarray) -> None:
    rows = [{"id": f"e{i:06d}", "name": f"e{i}", "origin": "corpus" if i % 3 else "kg", "emb": emb[i]} for i in order]
    for start in range(0, len(rows), 20_000):
        store.bulk_load_nodes("Entity", rows[start:start + 20_000])


def brute_force(emb: np.ndarray, q: np.ndarray, k: int, keep: np.ndarray | None = None) -> list[str]:
    scores = np.round((emb @ q).astype(np.float64), search_module.TIE_DIGITS)
    rows = np.arange(len(emb)) if keep is None else np.flatnonzero(keep)
    ranked = sorted(rows.tolist(), key=lambda i: (-scores[i], i))  # ids e000000.. sort like their row numbers
    return [f"e{i:06d}" for i in ranked[:k]]


@pytest.mark.slow
def test_two_builds_of_100k_rows_give_identical_exact_top10s(tmp_path: Path) -> None:
    n = 100_000
    emb = vectors(n, seed=5)
    rng = np.random.default_rng(6)
    stores = []
    try:
        for name, order in (("a", np.arange(n)), ("b", rng.permutation(n))):  # rows inserted in other orders
            store = GraphStore.open(tmp_path / name, embedder_id="test-16", dim=DIM)
            stores.append(store)
            load(store, emb, order)
            assert search_module.prepare_exact_search(store, "Entity") == n
        queries = [emb[i] for i in rng.choice(n, 25)] + [v / np.linalg.norm(v) for v in rng.normal(size=(25, DIM))]
        for q in queries:
            q = q.astype(np.float32)
            a = stores[0].vector_search("Entity", q, 10)
            assert a == stores[1].vector_search("Entity", q, 10)
            assert [i for i, _ in a] == brute_force(emb, q, 10)
        keep = np.arange(n) % 3 == 0  # a filter: kg-origin rows only
        for q in queries[:10]:
            q = q.astype(np.float32)
            a = stores[0].vector_search("Entity", q, 10, where={"origin": "kg"})
            assert a == stores[1].vector_search("Entity", q, 10, where={"origin": "kg"})
            assert [i for i, _ in a] == brute_force(emb, q, 10, keep)
        cached = stores[0]._handle.matrices["Entity"][1]
        assert isinstance(cached[1], np.memmap) and cached[1].shape == (n, DIM)  # searched in place, not copied
        files = [sorted((tmp_path / s / vector_file.VECTOR_DIR).iterdir()) for s in ("a", "b")]
        assert [p.read_bytes() for p in files[0]] == [p.read_bytes() for p in files[1]]  # build-independent files
    finally:
        for store in stores:
            store.close()


def test_the_vector_file_survives_a_restart_and_is_rewritten_when_the_table_changes(tmp_path: Path) -> None:
    emb = vectors(500, seed=8)
    store = GraphStore.open(tmp_path / "ws", embedder_id="test-16", dim=DIM)
    try:
        load(store, emb, np.arange(500))
        first = store.vector_search("Entity", emb[7], 5)
        meta = tmp_path / "ws" / vector_file.VECTOR_DIR / "Entity.json"
        written = meta.stat().st_mtime_ns
    finally:
        store.close()
    store = GraphStore.open(tmp_path / "ws")
    try:
        assert store.vector_search("Entity", emb[7], 5) == first
        assert meta.stat().st_mtime_ns == written  # read back, not written again
        planted = np.zeros(DIM, dtype=np.float32)
        planted[0] = 1.0
        store.bulk_load_nodes("Entity", [{"id": "planted", "name": "planted", "origin": "corpus", "emb": planted}])
    finally:
        store.close()
    store = GraphStore.open(tmp_path / "ws")
    try:
        assert store.vector_search("Entity", planted, 1)[0][0] == "planted"  # the stale file was not used
        assert '"n": 501' in meta.read_text()
    finally:
        store.close()


def test_hnsw_stays_an_opt_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past an opted-in bound the HNSW index answers (approximate); by default nothing is bounded."""
    assert search_module.EXACT_MAX_ROWS == float("inf")
    emb = vectors(300, seed=9)
    store = GraphStore.open(tmp_path / "ws", embedder_id="test-16", dim=DIM)
    try:
        load(store, emb, np.arange(300))
        store.ensure_vector_index("Entity")
        monkeypatch.setattr(search_module, "EXACT_MAX_ROWS", 100)
        called = []
        real = search_module._index_search
        monkeypatch.setattr(search_module, "_index_search", lambda *a: called.append(1) or real(*a))
        assert len(store.vector_search("Entity", emb[3], 5)) == 5 and called
        assert search_module.prepare_exact_search(store, "Entity") is None
    finally:
        store.close()


def test_stored_vectors_by_id_come_from_the_files_bit_for_bit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading vectors by id list scans Kùzu's whole vector column, so they come from the vector
    files instead (issue 29), exactly as Kùzu stores them: the unit row where it is that vector,
    else the copy kept for it (a stored vector not of length 1); get_embeddings gives the stored values."""
    unit = np.eye(DIM, dtype=np.float32)[:8]  # one-hot rows: normalising them changes no bit
    scaled = 3.0 * np.eye(DIM, dtype=np.float32)[8:12]  # length 3: the file's unit row differs
    store = GraphStore.open(tmp_path / "ws", embedder_id="test-16", dim=DIM)
    try:
        rows = [{"id": f"u{i}", "name": f"u{i}", "origin": "corpus", "emb": v} for i, v in enumerate(unit)]
        rows += [{"id": f"s{i}", "name": f"s{i}", "origin": "corpus", "emb": v} for i, v in enumerate(scaled)]
        store.bulk_load_nodes("Entity", rows)
        assert search_module.prepare_exact_search(store, "Entity") == 12
        same = np.load(tmp_path / "ws" / vector_file.VECTOR_DIR / "Entity.same.npy")
        assert same.tolist() == [0, 1, 2, 3] + [-1] * 8  # sorted ids: s0..s3 (copies kept), u0..u7
        wanted = ["u3", "s1", "nope", "u0", "s2", "u7"]
        found, rest = store.stored_vectors("Entity", wanted)
        assert sorted(found) == ["s1", "s2", "u0", "u3", "u7"] and rest == ["nope"]
        assert all(found[f"u{i}"].tobytes() == unit[i].tobytes() for i in (0, 3, 7))
        assert all(found[f"s{i}"].tobytes() == scaled[i].tobytes() for i in (1, 2))
        kuzu = {r["id"]: np.asarray(r["emb"], dtype=np.float32) for r in store.query(
            "MATCH (e:Entity) RETURN e.id AS id, e.emb AS emb")}
        got = store.get_embeddings("Entity", wanted)
        assert sorted(got) == sorted(found) and all(got[i].tobytes() == kuzu[i].tobytes() for i in got)
        # a few ids too (they were primary-key lookups, one statement each): from the files, the same bits
        few = ["s1", "nope", "u3"]
        ran: list[str] = []
        query = store.query
        monkeypatch.setattr(store, "query", lambda cypher, params=None: ran.append(cypher) or query(cypher, params))
        got = store.get_embeddings("Entity", few)
        assert sorted(got) == ["s1", "u3"] and all(got[i].tobytes() == kuzu[i].tobytes() for i in got)
        assert len(ran) == 1  # only "nope", which is not in the files, is looked up in Kùzu
    finally:
        store.close()


def test_unit_vectors_by_id_are_the_files_unit_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader of a few vectors per question (KET's triple cosines) gets views of the memory-mapped
    unit rows, each the stored vector scaled to length 1 bit for bit as kgviz.vectors.unit_rows
    makes it; an id without a vector is left out; None where the table has no files (HNSW)."""
    from kgviz.vectors import unit_rows

    emb = 2.5 * vectors(50, seed=4)  # not unit length: the file's rows are normalised copies
    store = GraphStore.open(tmp_path / "ws", embedder_id="test-16", dim=DIM)
    try:
        load(store, emb, np.arange(50))
        wanted = ["e000031", "nope", "e000002", "e000049"]
        got = store.unit_vectors("Entity", wanted)
        assert got is not None and sorted(got) == ["e000002", "e000031", "e000049"]
        stored = store.get_embeddings("Entity", wanted)
        for i in got:
            assert got[i].tobytes() == unit_rows(stored[i][None, :])[0].tobytes()
            assert not got[i].flags.writeable  # a view of the file, not a copy held in memory
        assert store.unit_vectors("Entity", []) == {}
        monkeypatch.setattr(search_module, "EXACT_MAX_ROWS", 10)
        store.execute("MATCH (e:Entity {id: 'e000001'}) SET e.name = 'x'")  # a write: the cached matrix is reloaded
        assert store.unit_vectors("Entity", wanted) is None
    finally:
        store.close()
