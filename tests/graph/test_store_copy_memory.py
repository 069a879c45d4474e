"""A bulk load's Arrow table does not outlive the load: kuzu 0.11.3 keeps every table a
connection copied from until that connection is closed, so GraphStore copies on a connection of
its own (issue 29: a build's loaded rows stayed in memory as long as the workspace was open)."""
from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from kgviz.graph.store import GraphStore

DIM = 64


def test_copied_rows_are_freed_after_each_load(tmp_path: Path) -> None:
    store = GraphStore.open(tmp_path / "ws", embedder_id=f"hashing-{DIM}", dim=DIM)
    try:
        emb = np.random.default_rng(0).normal(size=(5000, DIM)).astype(np.float32)
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            for k in range(4):
                rows = [{"id": f"e{i}-{k}", "name": "x", "emb": emb[i]} for i in range(len(emb))]
                assert store.bulk_load_nodes("Entity", rows) == len(emb)
                del rows
                gc.collect()
            held = tracemalloc.get_traced_memory()[0] - base
        finally:
            tracemalloc.stop()
        one_load = emb.nbytes  # the stacked vectors of one load alone (1.3 MB)
        assert held < one_load, f"{held / 2**20:.1f} MB still held after 4 loads"
        assert store.counts()["Entity"] == 4 * len(emb)
        with store.transaction():  # inside a transaction the load joins it (and rolls back with it)
            store.bulk_load_nodes("Entity", [{"id": "in-tx", "name": "y", "emb": emb[0]}])
            assert store.existing_ids("Entity", ["in-tx"]) == {"in-tx"}
        assert store.existing_ids("Entity", ["in-tx"]) == {"in-tx"}
    finally:
        store.close()


def test_rows_without_vectors_copy_no_vector_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows that give no ``emb`` are copied without that column (Kùzu leaves it NULL), not with a
    column of nulls: Arrow's null FLOAT[dim] column holds dim zeroed floats per row (400 MB for a
    131k-row batch of 768-d rows, issue 29: the build's Entity/Triple rows whose vectors are kept
    in files, KET's SubChunk and Keyword rows). The rows read back the same either way."""
    copied: list[tuple[str, pa.Table | None]] = []
    copy = GraphStore._copy

    def spy(self: GraphStore, cypher: str, table: pa.Table | None) -> None:
        copied.append((cypher, table))
        copy(self, cypher, table)

    monkeypatch.setattr(GraphStore, "_copy", spy)
    store = GraphStore.open(tmp_path / "ws", embedder_id=f"hashing-{DIM}", dim=DIM)
    try:
        rows = [{"id": f"e{i}", "name": f"E{i}", "origin": "corpus", "n_mentions": i} for i in range(3)]
        assert store.bulk_load_nodes("Entity", rows, new_rows=True) == 3
        # a later load (keys looked up, a present one skipped) and one with vectors
        assert store.bulk_load_nodes("Entity", [{"id": "e2", "name": "E2"}, {"id": "e3", "name": "E3"}]) == 1
        vec = np.arange(DIM, dtype=np.float32)
        assert store.bulk_load_nodes("Entity", [{"id": "e4", "name": "E4", "emb": vec}]) == 1
        without = [table for _, table in copied[:2]]
        assert all(t is not None and "emb" not in t.column_names for t in without)
        assert copied[2][1] is not None and "emb" in copied[2][1].column_names
        got = store.query("MATCH (n:Entity) RETURN n.id AS id, n.name AS name, n.n_mentions AS m, "
                          "n.type AS type, n.emb IS NULL AS no_emb ORDER BY n.id")
        assert got == [
            {"id": "e0", "name": "E0", "m": 0, "type": None, "no_emb": True},
            {"id": "e1", "name": "E1", "m": 1, "type": None, "no_emb": True},
            {"id": "e2", "name": "E2", "m": 2, "type": None, "no_emb": True},
            {"id": "e3", "name": "E3", "m": None, "type": None, "no_emb": True},
            {"id": "e4", "name": "E4", "m": None, "type": None, "no_emb": False},
        ]
        assert set(store.get_embeddings("Entity", ["e0", "e3", "e4"])) == {"e4"}
        assert np.array_equal(store.get_embeddings("Entity", ["e4"])["e4"], vec)
    finally:
        store.close()
