"""A bulk load's Arrow table does not outlive the load: kuzu 0.11.3 keeps every table a
connection copied from until that connection is closed, so GraphStore copies on a connection of
its own (issue 29: a build's loaded rows stayed in memory as long as the workspace was open)."""
from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import numpy as np

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
