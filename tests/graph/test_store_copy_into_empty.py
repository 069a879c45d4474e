"""A first build's loads (issue 29): ``copy_edges_into_empty`` puts every batch of edges into one
parquet file and loads it with one COPY, ``bulk_load_nodes(new_rows=True)`` copies without looking
keys up; both store what the checked loads store, refuse what they must, and leave no file behind."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from kgviz.errors import GraphStoreError
from kgviz.graph.store import GraphStore

DIM = 16


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GraphStore]:
    s = GraphStore.open(tmp_path / "ws", embedder_id=f"hashing-{DIM}", dim=DIM)
    yield s
    s.close()


def _entities(n: int, prefix: str = "e") -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    return [{"id": f"{prefix}{i}", "name": f"Name {i}", "type": None if i % 3 else "PERSON",
             "n_mentions": i, "emb": rng.normal(size=DIM).astype(np.float32)} for i in range(n)]


def _copies(store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = GraphStore._statement

    def spy(self: GraphStore, cypher: str, params: Any, *, write: bool, fetch: str) -> Any:
        if cypher.startswith("COPY"):
            seen.append(cypher)
        return real(self, cypher, params, write=write, fetch=fetch)

    monkeypatch.setattr(GraphStore, "_statement", spy)
    return seen


def _stored_entities(store: GraphStore) -> list[tuple]:
    rows = store.query("MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.type AS type, "
                       "e.n_mentions AS n, e.emb AS emb ORDER BY offset(id(e))")
    return [(r["id"], r["name"], r["type"], r["n"], np.asarray(r["emb"], dtype=np.float32).tobytes())
            for r in rows]


def _edges(store: GraphStore, rel: str) -> list[tuple]:
    rows = store.query(f"MATCH (a)-[r:{rel}]->(b) RETURN a.id AS a, b.id AS b, r.sentence AS s")
    return sorted((r["a"], r["b"], r["s"]) for r in rows)


def test_edges_in_batches_one_copy_same_edges(tmp_path: Path, store: GraphStore,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    edges = [{"from": f"t{i % 9}", "to": f"c{i % 4}", "sentence": f"sentence {i} ü 'q'" if i % 5 else None}
             for i in range(30)]
    other = GraphStore.open(tmp_path / "checked", embedder_id=f"hashing-{DIM}", dim=DIM)
    try:
        for s in (store, other):
            s.bulk_load_nodes("Triple", [{"id": f"t{i}"} for i in range(9)])
            s.bulk_load_nodes("Chunk", [{"id": f"c{i}"} for i in range(4)])
        assert other.bulk_load_rels("FROM_CHUNK", edges, from_table="Triple", to_table="Chunk") == 30
        copies = _copies(store, monkeypatch)
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        batches = (edges[i:i + 7] for i in range(0, len(edges), 7))
        assert store.copy_edges_into_empty("FROM_CHUNK", batches, scratch, from_table="Triple", to_table="Chunk") == 30
        assert len(copies) == 1 and ".parquet" in copies[0]
        assert _edges(store, "FROM_CHUNK") == _edges(other, "FROM_CHUNK")
        assert list(scratch.iterdir()) == []
    finally:
        other.close()


def test_edges_of_one_pair_and_a_table_that_holds_rows_is_refused(tmp_path: Path, store: GraphStore) -> None:
    store.bulk_load_nodes("Triple", [{"id": f"t{i}"} for i in range(4)])
    store.bulk_load_nodes("Entity", _entities(3))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    assert not store.holds_rows("SUBJ", ("Triple", "Entity")) and not store.holds_rows("SUBJ")
    n = store.copy_edges_into_empty("SUBJ", [[{"from": "t0", "to": "e1"}, {"from": "t1", "to": "e2"}]], scratch,
                                    from_table="Triple", to_table="Entity")
    assert n == 2 and store.holds_rows("SUBJ", ("Triple", "Entity")) and store.holds_rows("SUBJ")
    assert not store.holds_rows("SUBJ", ("Triple", "Triple"))  # each pair of a multi-pair table on its own
    assert store.copy_edges_into_empty("SUBJ", [[{"from": "t2", "to": "t3"}]], scratch,
                                       from_table="Triple", to_table="Triple") == 1
    rows = store.query("MATCH (a)-[r:SUBJ]->(b) RETURN a.id AS x, b.id AS y ORDER BY x")
    assert [(r["x"], r["y"]) for r in rows] == [("t0", "e1"), ("t1", "e2"), ("t2", "t3")]
    with pytest.raises(GraphStoreError, match="already holds rows"):
        store.copy_edges_into_empty("SUBJ", [[{"from": "t3", "to": "e0"}]], scratch,
                                    from_table="Triple", to_table="Entity")
    with pytest.raises(GraphStoreError, match="no rel table"):
        store.copy_edges_into_empty("SUBJ", [], scratch, from_table="Entity", to_table="Entity")
    with pytest.raises(GraphStoreError, match="no rel table"):
        store.copy_edges_into_empty("Entity", [], scratch, from_table="Entity", to_table="Entity")
    assert store.counts()["SUBJ"] == 3 and store.counts()["Entity"] == 3
    assert list(scratch.iterdir()) == []


def test_a_failed_copy_loads_nothing_and_removes_its_file(tmp_path: Path, store: GraphStore) -> None:
    store.bulk_load_nodes("Triple", [{"id": "t0"}])
    store.bulk_load_nodes("Chunk", [{"id": "c0"}])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    bad = [[{"from": "t0", "to": "c0", "sentence": "s"}], [{"from": "t0", "to": "no-such-chunk", "sentence": "s"}]]
    with pytest.raises(GraphStoreError, match="no-such-chunk") as err:
        store.copy_edges_into_empty("FROM_CHUNK", bad, scratch, from_table="Triple", to_table="Chunk")
    assert "load the nodes first" in (err.value.hint or "")
    assert store.counts()["FROM_CHUNK"] == 0
    assert list(scratch.iterdir()) == []

    def failing() -> Iterator[list[dict[str, Any]]]:  # the rows' maker fails half way
        yield [{"from": "t0", "to": "c0", "sentence": "s"}]
        raise OSError("spill gone")

    with pytest.raises(OSError, match="spill gone"):
        store.copy_edges_into_empty("FROM_CHUNK", failing(), scratch, from_table="Triple", to_table="Chunk")
    assert store.counts()["FROM_CHUNK"] == 0
    assert list(scratch.iterdir()) == []


def test_a_scratch_folder_whose_name_needs_quoting(tmp_path: Path, store: GraphStore) -> None:
    scratch = tmp_path / "O'Brien \\ \"notes\" ü"
    scratch.mkdir()
    store.bulk_load_nodes("Entity", _entities(2))
    assert store.copy_edges_into_empty("RELATED", [[{"from": "e0", "to": "e1", "relation": "knows"}]], scratch,
                                       from_table="Entity", to_table="Entity") == 1
    assert store.counts()["RELATED"] == 1 and list(scratch.iterdir()) == []


def test_new_rows_copy_without_lookups_and_a_repeated_key_loads_nothing(tmp_path: Path, store: GraphStore,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    other = GraphStore.open(tmp_path / "checked", embedder_id=f"hashing-{DIM}", dim=DIM)
    try:
        for start in range(0, 25, 7):  # batches, as the write stage loads them
            assert store.bulk_load_nodes("Entity", _entities(25)[start:start + 7], new_rows=True) == min(7, 25 - start)
        other.bulk_load_nodes("Entity", _entities(25))
        assert _stored_entities(store) == _stored_entities(other)  # vectors bit for bit, node order kept
    finally:
        other.close()
    store.execute("MATCH (e:Entity) DELETE e")
    looked: list[str] = []
    real = store.existing_ids
    monkeypatch.setattr(store, "existing_ids", lambda table, ids: looked.append(table) or real(table, ids))
    assert store.bulk_load_nodes("Entity", _entities(5), new_rows=True) == 5
    assert looked == []
    with pytest.raises(GraphStoreError):
        store.bulk_load_nodes("Entity", _entities(7), new_rows=True)  # e0..e4 are there already
    assert store.counts()["Entity"] == 5
    assert store.bulk_load_nodes("Entity", _entities(7)) == 2 and looked == ["Entity"]  # the checked load skips


def test_a_batch_with_its_vector_column_stores_the_vectors_bit_for_bit(store: GraphStore) -> None:
    """The write stage's node batch: an Arrow table whose emb column is the batch's vectors,
    not copied per row (kgviz.index.graph_write.with_emb)."""
    from kgviz.index.graph_write import with_emb

    rows = _entities(9)
    matrix = np.stack([r.pop("emb") for r in rows])
    table = with_emb(rows, matrix)
    assert np.shares_memory(table.column("emb").chunk(0).values.to_numpy(zero_copy_only=True), matrix)
    assert store.bulk_load_nodes("Entity", table, new_rows=True) == 9
    stored = {r["id"]: np.asarray(r["emb"], dtype=np.float32) for r in
              store.query("MATCH (e:Entity) RETURN e.id AS id, e.emb AS emb")}
    assert all(stored[f"e{i}"].tobytes() == matrix[i].tobytes() for i in range(9))
    bad = matrix.copy()
    bad[3, 2] = np.nan
    with pytest.raises(GraphStoreError, match="NaN"):
        store.bulk_load_nodes("Entity", with_emb([{"id": f"x{i}"} for i in range(9)], bad), new_rows=True)
    with pytest.raises(ValueError, match="9 rows but 2 vectors"):
        with_emb(rows, matrix[:2])


def test_a_batch_table_is_the_one_arrow_makes_from_its_row_dicts() -> None:
    """with_emb builds one Arrow array per column (issue 29: faster than Table.from_pylist over
    the dicts); the table is the same: columns in the first row's order, types inferred from
    every value of a column (a leading None, an all-None column), a key a row lacks read as null."""
    import pyarrow as pa

    from kgviz.index.graph_write import with_emb

    rows: list[dict[str, object]] = [
        {"id": "a", "n_tokens": None, "note": None, "title": "Älter"},
        {"id": "b", "n_tokens": 7, "note": None, "title": ""},
        {"id": "c", "n_tokens": 3, "note": None},
    ]
    matrix = np.arange(6, dtype=np.float32).reshape(3, 2)
    got = with_emb(rows, matrix)
    want = pa.Table.from_pylist(rows)
    assert got.drop_columns(["emb"]).equals(want)
    assert got.column_names == ["id", "n_tokens", "note", "title", "emb"]
    assert got.column("n_tokens").type == pa.int64() and got.column("note").type == pa.null()
    assert with_emb([], np.zeros((0, 2), dtype=np.float32)).num_rows == 0


@pytest.mark.parametrize("new_rows", [True, False])
def test_a_row_without_its_key_is_refused_on_either_path_and_nothing_is_loaded(store: GraphStore,
                                                                               new_rows: bool) -> None:
    rows = _entities(4)
    rows[2]["id"] = None
    with pytest.raises(GraphStoreError, match="a row has no 'id'"):
        store.bulk_load_nodes("Entity", rows, new_rows=new_rows)
    assert store.counts().get("Entity", 0) == 0

