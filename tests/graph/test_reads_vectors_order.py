"""kgviz.graph.reads' vector tables come sorted by id, as the ORDER BY statement returned them
(the sort moved out of Kùzu: it sorted the rows with their vectors)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from kgviz.graph import reads
from kgviz.graph.store import GraphStore

DIM = 8


def test_keyword_and_subchunk_vectors_are_the_ordered_statements(tmp_path: Path) -> None:
    store = GraphStore.open(tmp_path / "ws", embedder_id="test-8", dim=DIM)
    try:
        rng = np.random.default_rng(3)
        # ids loaded out of order, with non-ASCII ids (byte order), a keyword without a vector
        ids = ["kw:zeta", "kw:Alpha", "kw:émile", "kw:beta", "kw:a", "kw:Ωmega", "kw:b2", "kw:b10"]
        store.bulk_load_nodes("Keyword", [{"id": i, "word": i[3:], "description": "",
                                           "emb": rng.normal(size=DIM).astype(np.float32)} for i in ids])
        store.bulk_load_nodes("Keyword", [{"id": "kw:none", "word": "none", "description": "", "emb": None}])
        subs = [f"c{n}#s{m}" for n in (3, 1, 2) for m in (2, 1)]
        store.bulk_load_nodes("SubChunk", [{"id": s, "chunk_id": s.split("#")[0], "ord": i, "text": s,
                                            "n_tokens": i, "emb": rng.normal(size=DIM).astype(np.float32)}
                                           for i, s in enumerate(subs)])
        kw = reads.keyword_vectors(store)
        assert kw.column(0).to_pylist() == sorted(ids, key=lambda s: s.encode("utf-8"))
        assert kw.equals(store.query_arrow("MATCH (k:Keyword) WHERE k.emb IS NOT NULL "
                                           "RETURN k.id, k.word, k.emb ORDER BY k.id"))
        sub = reads.subchunk_vectors(store)
        assert sub.equals(store.query_arrow("MATCH (s:SubChunk) WHERE s.emb IS NOT NULL "
                                            "RETURN s.id, s.chunk_id, s.n_tokens, s.emb ORDER BY s.id"))
    finally:
        store.close()
