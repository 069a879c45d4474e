"""Exact vector search at 100k+ rows (issue 29): a memory-mapped matrix in the workspace
(kgviz.graph.vector_file), exact top-k with ties broken by id, so a trace does not depend on the
build (Kùzu's HNSW gave different top-10s for 40 of 50 queries on two builds of the same vectors)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kgviz.graph.search as search_module
from kgviz.errors import DiskFullError
from kgviz.graph import vector_file
from kgviz.graph.store import GraphStore
from tests.support.arrays import mapped

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


# --- the stored by-column (CSC) copy of a mostly-zero table -------------------------------------------
def sparse_vectors(n: int, seed: int, nonzero: int = 3) -> np.ndarray:
    """Unit rows with ``nonzero`` of DIM entries set (the hashing embedder's shape)."""
    rng = np.random.default_rng(seed)
    emb = np.zeros((n, DIM), dtype=np.float32)
    for row in emb:
        row[rng.choice(DIM, size=nonzero, replace=False)] = rng.normal(size=nonzero)
    return emb / np.linalg.norm(emb, axis=1, keepdims=True)


def reference_csc(matrix: np.ndarray, block: int, below: float):
    """What search.sparse_rows made before the copy was stored: scipy CSC blocks stacked by rows."""
    import scipy.sparse as sp

    blocks, nonzero = [], 0
    for start in range(0, matrix.shape[0], block):
        part = matrix[start:start + block]
        nonzero += int(np.count_nonzero(part))
        if nonzero >= below * (start + part.shape[0]) * matrix.shape[1]:
            return None
        blocks.append(sp.csc_matrix(part))
    return sp.vstack(blocks, format="csc") if blocks else None


def same_csc(a, b) -> bool:
    return all(getattr(a, p).dtype == getattr(b, p).dtype and np.array_equal(getattr(a, p), getattr(b, p))
               for p in ("data", "indices", "indptr")) and a.shape == b.shape


@pytest.mark.parametrize("read_rows", [4, 64, 8192])
def test_sparse_rows_equals_the_stacked_scipy_blocks_and_stops_where_they_did(
        monkeypatch: pytest.MonkeyPatch, read_rows: int) -> None:
    monkeypatch.setattr(vector_file, "READ_ROWS", read_rows)
    monkeypatch.setattr(search_module, "_SPARSE_BLOCK_ROWS", 40)
    m = sparse_vectors(300, seed=41)
    m[5] = 0.0  # an all-zero row
    got = search_module.sparse_rows(m)
    assert got is not None and same_csc(got, reference_csc(m, 40, search_module.SPARSE_SEARCH_BELOW))
    # dense rows first: the check after the first block stops, though the whole is mostly zeros
    mixed = sparse_vectors(1000, seed=42)
    mixed[:40] = vectors(40, seed=43)
    assert np.count_nonzero(mixed) < 0.25 * mixed.size
    assert reference_csc(mixed, 40, 0.25) is None and search_module.sparse_rows(mixed) is None
    # dense rows from 230 on: mostly zeros at the check after row 240, not at the one after 280
    late = sparse_vectors(300, seed=44)
    late[230:] = vectors(70, seed=45)
    for rows, made in ((240, True), (280, False), (300, False)):
        assert (reference_csc(late[:rows], 40, 0.25) is not None) is made
        got = search_module.sparse_rows(late[:rows])
        assert (got is not None) is made
        if made:
            assert same_csc(got, reference_csc(late[:rows], 40, 0.25))


def test_column_ranges_cut_into_pieces_give_the_same_copy() -> None:
    m = sparse_vectors(120, seed=43)
    read = vector_file.row_reader(m)
    counts = vector_file.column_counts(read, 120, DIM, 50, 0.25)
    assert counts is not None
    whole = list(vector_file.column_ranges(read, 120, DIM, counts))
    pieces = list(vector_file.column_ranges(read, 120, DIM, counts, max_entries=30))
    assert len(whole) == 1 and len(pieces) > 3
    for k in (0, 1):
        assert np.array_equal(np.concatenate([p[k] for p in pieces]), whole[0][k])


def csc_files(ws: Path) -> dict[str, Path]:
    return {p.name: p for p in (ws / vector_file.VECTOR_DIR).glob("Entity.csc.*")}


def open_sparse(tmp_path: Path, n: int = 400) -> tuple[GraphStore, np.ndarray]:
    store = GraphStore.open(tmp_path / "ws", embedder_id="test-16", dim=DIM)
    emb = sparse_vectors(n, seed=44)
    load(store, emb, np.arange(n))
    return store, emb


def top(store: GraphStore, emb: np.ndarray) -> list[list[tuple[str, float]]]:
    return [store.vector_search("Entity", emb[i], 7) for i in (0, 17, 123, 399)]


def stored_sparse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, list[list[tuple[str, float]]]]:
    """A sparse table whose CSC copy the index stage stored, closed: (its vectors, the top hits)."""
    monkeypatch.setattr(search_module, "SPARSE_SEARCH_MIN_ROWS", 100)
    store, emb = open_sparse(tmp_path)
    try:
        search_module.prepare_exact_search(store, "Entity")
        return emb, top(store, emb)
    finally:
        store.close()


def test_the_csc_copy_is_stored_at_build_time_and_mapped_by_the_next_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_module, "SPARSE_SEARCH_MIN_ROWS", 100)
    store, emb = open_sparse(tmp_path)
    try:
        assert search_module.prepare_exact_search(store, "Entity") == 400  # the index stage's call
        files = csc_files(tmp_path / "ws")
        assert sorted(files) == ["Entity.csc.data.npy", "Entity.csc.indices.npy", "Entity.csc.indptr.npy",
                                 "Entity.csc.json"]
        stamps = {name: p.stat().st_mtime_ns for name, p in files.items()}
        first = top(store, emb)
    finally:
        store.close()
    store = GraphStore.open(tmp_path / "ws")
    try:
        calls: list[int] = []
        real = search_module.sparse_rows
        monkeypatch.setattr(search_module, "sparse_rows", lambda m: calls.append(1) or real(m))
        assert top(store, emb) == first
        assert not calls  # mapped, not made again
        held = store._handle.matrices["Entity|csc"][1]
        assert all(mapped(getattr(held, p)) for p in ("data", "indices", "indptr"))
        assert same_csc(held, reference_csc(np.asarray(store._handle.matrices["Entity"][1][1]), 65536, 0.25))
        assert {name: p.stat().st_mtime_ns for name, p in csc_files(tmp_path / "ws").items()} == stamps
        # the same ranking as the dense product (the copy only changes which bytes are read)
        monkeypatch.setattr(search_module, "SPARSE_SEARCH_MIN_ROWS", 10**9)
        dense = top(store, emb)
        assert [[i for i, _ in r] for r in dense] == [[i for i, _ in r] for r in first]
    finally:
        store.close()


def test_a_changed_table_gets_a_new_csc_copy_and_the_old_one_is_never_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_module, "SPARSE_SEARCH_MIN_ROWS", 100)
    store, emb = open_sparse(tmp_path)
    try:
        search_module.prepare_exact_search(store, "Entity")
        planted = np.zeros(DIM, dtype=np.float32)
        planted[[2, 9]] = 0.6, 0.8
        store.bulk_load_nodes("Entity", [{"id": "planted", "name": "planted", "origin": "corpus", "emb": planted}])
        assert store.vector_search("Entity", planted, 1)[0][0] == "planted"
        meta = (tmp_path / "ws" / vector_file.VECTOR_DIR / "Entity.csc.json").read_text()
        assert '"n": 401' in meta
        held = store._handle.matrices["Entity|csc"][1]
        assert held.shape == (401, DIM)
    finally:
        store.close()
    # a purge (rows deleted): the copy follows again
    store = GraphStore.open(tmp_path / "ws")
    try:
        store.execute("MATCH (e:Entity) WHERE e.id = 'planted' DELETE e")
        assert store.vector_search("Entity", planted, 1)[0][0] != "planted"
        assert '"n": 400' in (tmp_path / "ws" / vector_file.VECTOR_DIR / "Entity.csc.json").read_text()
    finally:
        store.close()


def test_rewriting_the_rows_removes_their_csc_copy_first(tmp_path: Path) -> None:
    emb = sparse_vectors(50, seed=45)
    ids = [f"e{i}" for i in range(50)]
    _, matrix = vector_file.write(tmp_path, "Entity", ids, emb)
    digest = vector_file.ids_digest(sorted(ids))
    vector_file.write_csc(tmp_path, "Entity", digest, vector_file.row_reader(matrix), 50, DIM, 64, 0.25)
    assert vector_file.load_csc(tmp_path, "Entity", digest, 50, DIM) is not None
    vector_file.write(tmp_path, "Entity", ids, 2 * emb)  # same ids, other rows (e.g. a repaired file)
    assert vector_file.load_csc(tmp_path, "Entity", digest, 50, DIM) is None
    assert not csc_files(tmp_path)


@pytest.mark.parametrize("damage", ["truncated data", "indptr of another shape", "meta not json", "indptr out of order"])
def test_a_damaged_csc_copy_is_made_again_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture, damage: str) -> None:
    emb, first = stored_sparse(tmp_path, monkeypatch)
    files = csc_files(tmp_path / "ws")
    if damage == "truncated data":
        raw = files["Entity.csc.data.npy"].read_bytes()
        files["Entity.csc.data.npy"].write_bytes(raw[: len(raw) // 2])
    elif damage == "indptr of another shape":
        np.save(files["Entity.csc.indptr.npy"], np.zeros(3, dtype=np.int32))
    elif damage == "meta not json":
        files["Entity.csc.json"].write_text("{not json")
    else:
        indptr = np.load(files["Entity.csc.indptr.npy"])
        indptr[3], indptr[4] = indptr[4], indptr[3] - 1
        np.save(files["Entity.csc.indptr.npy"], indptr)
    store = GraphStore.open(tmp_path / "ws")
    try:
        with caplog.at_level("WARNING", logger="kgviz.graph.vector_file"):
            assert top(store, emb) == first
        if damage != "meta not json":  # an unreadable meta is a missing copy: made again, nothing to name
            assert any("damaged" in r.getMessage() for r in caplog.records)
        digest = store._handle.matrices["Entity|digest"][1]
        fresh = vector_file.load_csc(tmp_path / "ws", "Entity", digest, 400, DIM)
        assert fresh is not None and fresh[0] == "sparse"  # stored whole again
    finally:
        store.close()


def test_a_workspace_without_a_csc_copy_still_answers_and_gets_one(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A workspace built before the copy was stored: its first search makes it, once."""
    emb, first = stored_sparse(tmp_path, monkeypatch)
    for p in csc_files(tmp_path / "ws").values():
        p.unlink()
    store = GraphStore.open(tmp_path / "ws")
    try:
        assert top(store, emb) == first
        assert len(csc_files(tmp_path / "ws")) == 4
    finally:
        store.close()


def test_a_dense_table_is_recorded_dense_and_searched_dense(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_module, "SPARSE_SEARCH_MIN_ROWS", 100)
    store = GraphStore.open(tmp_path / "ws", embedder_id="test-16", dim=DIM)
    try:
        emb = vectors(300, seed=46)
        load(store, emb, np.arange(300))
        search_module.prepare_exact_search(store, "Entity")
        assert sorted(csc_files(tmp_path / "ws")) == ["Entity.csc.json"]
        assert '"sparse": false' in (tmp_path / "ws" / vector_file.VECTOR_DIR / "Entity.csc.json").read_text()
        assert store._handle.matrices["Entity|csc"][1] is None
        assert [i for i, _ in store.vector_search("Entity", emb[5], 5)] == brute_force(emb, emb[5], 5)
    finally:
        store.close()


def test_the_files_are_checked_by_every_rows_id_unless_some_row_has_no_vector(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """"emb IS NOT NULL" makes Kùzu read the vector column, so a process first compares the files
    with every row's id; a table with a row without a vector is checked by its embedded ids."""
    emb = vectors(60, seed=47)
    store = GraphStore.open(tmp_path / "ws", embedder_id="test-16", dim=DIM)
    try:
        load(store, emb, np.arange(60))
        search_module.prepare_exact_search(store, "Entity")
    finally:
        store.close()

    def searched(with_null: bool) -> list[str]:
        store = GraphStore.open(tmp_path / "ws")
        ran: list[str] = []
        real = store.query_arrow
        monkeypatch.setattr(store, "query_arrow", lambda c, p=None: ran.append(c) or real(c, p))
        try:
            hits = store.vector_search("Entity", emb[3], 3)
            assert [i for i, _ in hits] == brute_force(emb, emb[3], 3)
            if with_null:
                store.bulk_load_nodes("Entity", [{"id": "e000003x", "name": "no vector", "origin": "corpus"}])
                assert [i for i, _ in store.vector_search("Entity", emb[3], 3)] == brute_force(emb, emb[3], 3)
                # a filter matching the row without a vector too: only the embedded rows are searched
                keep = np.arange(60) % 3 != 0  # load(): origin "corpus" unless i % 3 == 0
                hits = store.vector_search("Entity", emb[3], 60, where={"origin": "corpus"})
                assert [i for i, _ in hits] == brute_force(emb, emb[3], 60, keep)
        finally:
            store.close()
        return ran

    ran = searched(with_null=False)
    assert not any("IS NOT NULL" in c for c in ran)  # every row's id matched the files
    ran = searched(with_null=True)  # after the write: the embedded ids decide
    assert any("IS NOT NULL" in c for c in ran)
    ran = searched(with_null=False)  # a new process, a row without a vector: checked by embedded ids
    assert [c for c in ran if "Entity" in c and "RETURN n.id" in c][-1].count("IS NOT NULL") == 1
    meta = (tmp_path / "ws" / vector_file.VECTOR_DIR / "Entity.json").read_text()
    assert '"n": 60' in meta  # the row without a vector is not in the files


class _FailingRows:
    """Rows that raise after the first block: a write that stops part way."""

    def __init__(self, rows: np.ndarray, error: BaseException) -> None:
        self.rows, self.error, self.shape, self.ndim, self.reads = rows, error, rows.shape, rows.ndim, 0

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        self.reads += 1
        if self.reads > 1:
            raise self.error
        return self.rows[index]


@pytest.mark.parametrize("error, raised", [(OSError(28, "No space left on device"), DiskFullError),
                                           (KeyboardInterrupt(), KeyboardInterrupt),
                                           (OSError(13, "Permission denied"), OSError)])
def test_a_write_stopped_part_way_leaves_no_temporary_file_and_a_full_disk_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException, raised: type) -> None:
    monkeypatch.setattr(vector_file, "WRITE_BLOCK", 4)
    rows = np.random.default_rng(3).normal(size=(12, 8)).astype(np.float32)
    ids = [f"t{i:02d}" for i in range(12)]
    with pytest.raises(raised) as caught:
        vector_file.write(tmp_path, "Triple", ids, _FailingRows(rows, error), search_module._normalised)  # type: ignore[arg-type]
    folder = tmp_path / vector_file.VECTOR_DIR
    assert [p.name for p in folder.iterdir()] == []  # the half-written rows and raw file are gone
    if raised is DiskFullError:
        assert "disk is full" in str(caught.value) and "run the build again" in caught.value.hint
        assert not isinstance(caught.value, OSError)  # never taken for an unwritable folder (in-memory ranking)
    # the same rows written whole afterwards are read back as usual
    vector_file.write(tmp_path, "Triple", ids, rows, search_module._normalised)
    assert vector_file.load(tmp_path, "Triple", vector_file.ids_digest(sorted(ids)), 8) is not None
    assert not list(folder.glob("*.tmp*"))


def test_stored_arrays_stopped_by_a_full_disk_leave_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_save = np.save
    calls = []

    def save(f: object, value: np.ndarray, **kw: object) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_save(f, value, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(vector_file.np, "save", save)
    with pytest.raises(DiskFullError):
        vector_file.write_arrays(tmp_path / "view", {"k": 1}, {"a": np.arange(3), "b": np.arange(4)})
    assert not [p for p in (tmp_path / "view").iterdir() if ".tmp" in p.name or p.name == "key.json"]
    assert vector_file.load_arrays(tmp_path / "view", {"k": 1}) is None


def test_vectors_read_back_by_offset_ranges_are_the_files_one_statement_gave(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A workspace without vector files (a resumed build's index stage) reads its vectors back out
    of Kùzu a range of node offsets at a time, each range within a share of the buffer pool: the
    same files as reading every row at once, and no temporary file left."""
    emb = vectors(300, seed=11)
    files: dict[str, dict[str, bytes]] = {}
    for name, pool in (("whole", 1 << 30), ("ranges", 7 * 4 * DIM * search_module.READ_BACK_POOL_SHARE)):
        monkeypatch.setattr(search_module, "buffer_pool_bytes", lambda pool=pool: pool)  # 7 rows a range
        statements: list[str] = []
        store = GraphStore.open(tmp_path / name, embedder_id="test-16", dim=DIM)
        try:
            load(store, emb, np.random.default_rng(2).permutation(300))
            store.bulk_load_nodes("Entity", [{"id": "no-vector", "name": "x", "origin": "kg"}])  # not embedded: skipped
            run = store.query_arrow
            monkeypatch.setattr(store, "query_arrow", lambda q, p=None: (statements.append(q), run(q, p))[1])
            assert search_module.prepare_exact_search(store, "Entity") == 300
        finally:
            store.close()
        folder = tmp_path / name / vector_file.VECTOR_DIR
        files[name] = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
        assert not [n for n in files[name] if "readback" in n]
        ranges = [q for q in statements if "offset(id(n)) >=" in q]
        assert len(ranges) == (1 if name == "whole" else -(-301 // 7))
    assert files["whole"] == files["ranges"]


@pytest.mark.parametrize("read_rows", [7, 64, 8192])
def test_column_ranges_are_scipys_csc_across_read_blocks(monkeypatch: pytest.MonkeyPatch, read_rows: int) -> None:
    """Each column's entries in row order, whatever block of rows they were read in (the rows are
    reordered by column after a by-row scan, issue 29)."""
    import scipy.sparse as sp

    monkeypatch.setattr(vector_file, "READ_ROWS", read_rows)
    m = sparse_vectors(150, seed=46)
    m[5] = 0.0  # an empty row, and an empty column
    m[:, 3] = 0.0
    counts = np.count_nonzero(m, axis=0)
    reference = sp.csc_matrix(m)
    reference.sort_indices()
    for max_entries in (float("inf"), 25):
        pieces = list(vector_file.column_ranges(vector_file.row_reader(m), 150, DIM, counts, max_entries))
        assert np.concatenate([p[0] for p in pieces]).tobytes() == reference.data.tobytes()
        assert np.concatenate([p[1] for p in pieces]).tolist() == reference.indices.tolist()


@pytest.mark.parametrize("read_rows", [7, 64, 8192])
@pytest.mark.parametrize("max_entries", [float("inf"), 25])
def test_column_ranges_from_pieces_read_the_rows_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      read_rows: int, max_entries: float) -> None:
    """Blocks recorded (``Pieces``) while the columns are counted: the same counts and CSC pieces
    as without, in one range or several, and every row read once in all (issue 29: once to
    count and once per range before, six reads of 4.5 GB at 100k passages); ``remove`` leaves no
    scratch file."""
    monkeypatch.setattr(vector_file, "READ_ROWS", read_rows)
    m = sparse_vectors(150, seed=47)
    m[5] = 0.0
    m[:, 3] = 0.0  # an empty column inside a range
    reads: list[tuple[int, int]] = []
    plain = vector_file.row_reader(m)

    def read(start: int, stop: int) -> np.ndarray:
        reads.append((start, stop))
        return plain(start, stop)

    counts = vector_file.column_counts(plain, 150, DIM, 40, 0.25)
    assert counts is not None
    without = list(vector_file.column_ranges(plain, 150, DIM, counts, max_entries))
    pieces = vector_file.Pieces(tmp_path / "pieces", 0.25)
    got_counts = vector_file.column_counts(read, 150, DIM, 40, 0.25, pieces)
    assert got_counts is not None and got_counts.tolist() == counts.tolist() and pieces.rows == 150
    got = list(vector_file.column_ranges(read, 150, DIM, counts, max_entries, pieces))
    assert len(got) == len(without) and (len(got) > 3 or max_entries == float("inf"))
    for (v, r), (wv, wr) in zip(got, without):
        assert v.tobytes() == wv.tobytes() and r.dtype == wr.dtype and r.tolist() == wr.tolist()
    assert sorted(reads) == sorted(set(reads)) and sum(b - a for a, b in reads) == 150  # each row once
    pieces.remove()
    assert not list(tmp_path.iterdir())


def test_pieces_stop_on_rows_that_are_not_mostly_zeros(tmp_path: Path) -> None:
    """Dense rows (model embeddings) are never written to the scratch files; rows that turn
    dense part way stop the recording there, and the copy is then made from the rows: the same
    bytes."""
    dense = vectors(100, seed=49)
    pieces = vector_file.Pieces(tmp_path / "dense", 0.25)
    assert vector_file.column_counts(vector_file.row_reader(dense), 100, DIM, 40, 0.25, pieces) is None
    assert not pieces.on and not list(tmp_path.iterdir())
    late = sparse_vectors(300, seed=50)
    late[100:110] = vectors(10, seed=51)  # dense for a while, mostly zeros again by the next check
    read = vector_file.row_reader(late)
    counts = vector_file.column_counts(read, 300, DIM, 150, 0.25)
    assert counts is not None
    pieces = vector_file.Pieces(tmp_path / "late", 0.25)
    old = vector_file.READ_ROWS
    try:
        vector_file.READ_ROWS = 10
        assert vector_file.column_counts(read, 300, DIM, 150, 0.25, pieces).tolist() == counts.tolist()
        assert not pieces.on
        got = list(vector_file.column_ranges(read, 300, DIM, counts, 40, pieces))
        want = list(vector_file.column_ranges(read, 300, DIM, counts, 40))
    finally:
        vector_file.READ_ROWS = old
    assert [(v.tobytes(), r.tolist()) for v, r in got] == [(v.tobytes(), r.tolist()) for v, r in want]
    assert not list(tmp_path.iterdir())


def test_write_csc_in_many_ranges_writes_the_same_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A CSC copy gathered in many ranges of columns (from its recorded pieces) is the one
    gathered in one, byte for byte, and leaves no scratch file."""
    m = sparse_vectors(300, seed=48)
    files = {}
    for name, entries in (("one", 1 << 24), ("many", 40)):
        monkeypatch.setattr(vector_file, "CSC_BUFFER_ENTRIES", entries)
        ws = tmp_path / name
        (ws / vector_file.VECTOR_DIR).mkdir(parents=True)
        vector_file.write_csc(ws, "Entity", "d", vector_file.row_reader(m), 300, DIM, 100, 0.25)
        files[name] = {p.name: p.read_bytes() for p in sorted((ws / vector_file.VECTOR_DIR).iterdir())}
    assert files["one"] == files["many"] and "Entity.csc.data.npy" in files["one"]


@pytest.mark.parametrize("per_update", [1, 2, 3, 65_536])
def test_ids_digest_is_the_per_id_stream(monkeypatch: pytest.MonkeyPatch, per_update: int) -> None:
    """Joined ids hash to the digest of each id's UTF-8 and a NUL, one at a time (the digest the
    stored vector files name)."""
    import hashlib

    def per_id(ids: list[str]) -> str:
        h = hashlib.sha256()
        for i in ids:
            h.update(i.encode("utf-8"))
            h.update(b"\0")
        return h.hexdigest()

    monkeypatch.setattr(vector_file, "DIGEST_IDS", per_update)
    for ids in ([], [""], ["", ""], ["a"], ["a\0b", "c"], sorted(["ünï", "東京", "e:Ærø", "t:1", "t:10", "t:2", "x" * 500])):
        assert vector_file.ids_digest(ids) == per_id(ids)
    assert vector_file.ids_digest(["ab"]) != vector_file.ids_digest(["a", "b"])


def test_row_file_reads_each_row_into_its_place(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Rows picked by index (any order, repeats, negative indices, a boolean mask) come back as the
    file holds them, each read straight into the result (``preadv``), never through a ``pread``
    that makes a bytes object to copy from (issue 29: 2.3M rows at 100k passages); a file
    shorter than its rows is an OSError, not rows of garbage."""
    import os as os_module

    vectors = np.random.default_rng(3).normal(size=(11, 5)).astype(np.float32)
    path = tmp_path / "Triple.f32"
    path.write_bytes(vectors.tobytes())
    rows = vector_file.RowFile(path, 11, 5)

    def no_pread(*args: object) -> bytes:
        raise AssertionError("a pread per row")

    monkeypatch.setattr(os_module, "pread", no_pread)
    for index in (np.array([7, 0, 10, 7, 3]), np.arange(11)[::-1], np.array([-1, -11]), vectors[:, 0] > 0, [4]):
        got = rows[index]
        assert got.dtype == np.float32 and got.tobytes() == vectors[index].tobytes()
    assert rows[np.zeros(0, dtype=np.int64)].shape == (0, 5)
    with pytest.raises(IndexError):
        rows[np.array([11])]
    path.write_bytes(vectors[:10].tobytes() + b"\0\0")  # the last row cut short
    with pytest.raises(OSError, match="cut short"):
        rows[np.array([0, 10])]


def test_the_ids_file_is_what_np_save_writes_made_a_block_at_a_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The sorted ids are written IDS_BLOCK at a time at the width of the longest one (the whole
    fixed-width array was ~0.8 GB for the Entity ids of 100,000 passages): the file np.save gives
    for the whole array, byte for byte, for ids of any lengths and characters, and none."""
    monkeypatch.setattr(vector_file, "IDS_BLOCK", 3, raising=False)
    rng = np.random.default_rng(4)
    cases = [[], [""], ["ent:" + "ü→x" * int(k) for k in rng.integers(0, 40, size=11)] + ["tri:0123456789abcdef", "\U0001F600"]]
    for k, ids in enumerate(cases):
        rows = rng.normal(size=(len(ids), 4)).astype(np.float32)
        got, _ = vector_file.write(tmp_path / str(k), "Entity", list(ids), rows)
        whole = np.array(sorted(ids), dtype=str) if ids else np.zeros(0, dtype="<U1")
        np.save(tmp_path / f"expected{k}.npy", whole, allow_pickle=False)
        assert (tmp_path / str(k) / "vectors" / "Entity.ids.npy").read_bytes() == (tmp_path / f"expected{k}.npy").read_bytes()
        assert got.tolist() == whole.tolist()


def test_stored_arrays_given_one_at_a_time_are_each_stored_before_the_next_is_made(tmp_path: Path) -> None:
    folder = tmp_path / "view"
    made: list[str] = []

    def arrays() -> Any:
        for name, n in (("a", 3), ("b", 4), ("c", 5)):
            if made:  # the one before is stored (under its temporary name or its own) before this one is made
                assert [p for p in folder.iterdir() if p.name.startswith(made[-1] + ".npy")], made
            made.append(name)
            yield name, np.arange(n)

    vector_file.write_arrays(folder, {"k": 1}, arrays())
    loaded = vector_file.load_arrays(folder, {"k": 1})
    assert loaded is not None and {k: v.tolist() for k, v in loaded.items()} == {"a": [0, 1, 2], "b": [0, 1, 2, 3],
                                                                                "c": [0, 1, 2, 3, 4]}
