"""reads.entities_within walks RELATED one hop at a time (issue 29: the ``RELATED*1..2`` form ran
out of Kùzu's buffer pool at 30,000 passages); it must reach exactly what that form matches."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from kgviz.graph import reads
from kgviz.graph.store import GraphStore

DIM = 8
# a chain, a triangle, a hub with leaves, a parallel edge, a self-loop and an isolated entity
EDGES = [("a", "b"), ("b", "c"), ("c", "d"), ("e", "f"), ("f", "g"), ("g", "e"), ("h", "i"), ("h", "j"),
         ("h", "k"), ("k", "a"), ("b", "c"), ("m", "m")]
NAMES = sorted({n for e in EDGES for n in e} | {"z"})


def graph(tmp_path: Path) -> GraphStore:
    store = GraphStore.open(tmp_path / "ws", embedder_id="test", dim=DIM)
    store.bulk_load_nodes("Entity", [
        {"id": n, "name": n, "type": "", "description": "", "origin": "corpus", "aliases": "", "n_mentions": 1,
         "emb": np.eye(DIM, dtype=np.float32)[i % DIM]} for i, n in enumerate(NAMES)])
    store.bulk_load_rels("RELATED", [{"from": s, "to": o, "relation": "r", "triple_id": f"t{i}", "origin": "corpus"}
                                     for i, (s, o) in enumerate(EDGES)], from_table="Entity", to_table="Entity")
    return store


def paths_form(store: GraphStore, ids: list[str], hops: int) -> set[str]:
    """What the variable-length form matches (the form entities_within replaced)."""
    rows = store.query(f"MATCH (a:Entity)-[:RELATED*1..{hops}]-(b:Entity) WHERE a.id IN $ids RETURN DISTINCT b.id AS id",
                       {"ids": ids})
    return {r["id"] for r in rows}


def test_one_hop_at_a_time_reaches_what_the_path_form_matches(tmp_path: Path) -> None:
    store = graph(tmp_path)
    try:
        starts = [[n] for n in NAMES] + [list(p) for p in itertools.combinations(["a", "e", "h", "m", "z"], 2)]
        for ids in starts:
            for hops in (1, 2, 3):
                assert reads.entities_within(store, ids, hops) == paths_form(store, ids, hops), (ids, hops)
        # walks may come back: two hops from "a" reach "a" itself (a-b-a), a self-loop reaches its node
        assert "a" in reads.entities_within(store, ["a"], 2) and "a" not in reads.entities_within(store, ["a"], 1)
        assert reads.entities_within(store, ["m"], 1) == {"m"}
        assert reads.entities_within(store, ["z"], 2) == set() and reads.entities_within(store, [], 2) == set()
    finally:
        store.close()
