"""IN vs UNWIND vs one primary-key lookup per id, for the id-list sizes the methods send.

Builds a synthetic graph (``--rows`` Triple nodes with embeddings, each linked to two of
``--rows``/4 entities), then times, per list size, the median of ``--repeat`` runs of:

* ``lookup``: triples by id (id, text) — the shape of reads.chunks / entities / triple_sources;
* ``vectors``: triple embeddings by id — kg-rag's candidate vectors, store.get_embeddings;
* ``neighbourhood``: triples at entities through SUBJ|OBJ — kg-rag's hop reads.

Prints one JSON document (milliseconds). The rule in kgviz/graph/batching.py comes from here.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from kgviz.graph.store import GraphStore

SIZES = (1, 3, 5, 8, 12, 24, 48, 100, 300, 1000)
FORMS = {
    "lookup": ("MATCH (t:Triple) WHERE t.id IN $ids RETURN t.id AS id, t.text AS text",
               "UNWIND $ids AS k MATCH (t:Triple) WHERE t.id = k RETURN t.id AS id, t.text AS text",
               "MATCH (t:Triple {id: $id}) RETURN t.id AS id, t.text AS text"),
    "vectors": ("MATCH (t:Triple) WHERE t.id IN $ids AND t.emb IS NOT NULL RETURN t.id AS id, t.emb AS emb",
                "UNWIND $ids AS k MATCH (t:Triple) WHERE t.id = k AND t.emb IS NOT NULL RETURN t.id AS id, t.emb AS emb",
                "MATCH (t:Triple {id: $id}) WHERE t.emb IS NOT NULL RETURN t.id AS id, t.emb AS emb"),
    "neighbourhood": ("MATCH (t:Triple)-[r:SUBJ|OBJ]->(x:Entity) WHERE x.id IN $ids RETURN x.id AS a, t.id AS id",
                      "UNWIND $ids AS k MATCH (t:Triple)-[r:SUBJ|OBJ]->(x:Entity) WHERE x.id = k RETURN k AS a, t.id AS id",
                      None),
}


def build(store: GraphStore, n: int, dim: int) -> None:
    rng = np.random.default_rng(0)
    n_ent = max(n // 4, 2)
    store.bulk_load_nodes("Entity", [{"id": f"e{i:06d}", "name": f"E{i}", "origin": "corpus"} for i in range(n_ent)])
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    store.bulk_load_nodes("Triple", [{"id": f"t{i:06d}", "text": f"fact {i}", "origin": "corpus", "emb": vecs[i]}
                                     for i in range(n)])
    ends = rng.integers(0, n_ent, size=(n, 2))
    store.bulk_load_rels("SUBJ", [{"from": f"t{i:06d}", "to": f"e{a:06d}"} for i, (a, _) in enumerate(ends)],
                         from_table="Triple", to_table="Entity")
    store.bulk_load_rels("OBJ", [{"from": f"t{i:06d}", "to": f"e{b:06d}"} for i, (_, b) in enumerate(ends)],
                         from_table="Triple", to_table="Entity")


def timed(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(runs), 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=6000, help="Triple nodes (HotpotQA graph: ~5.6k)")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        store = GraphStore.open(Path(tmp) / "ws", embedder_id=f"bench-{args.dim}", dim=args.dim)
        build(store, args.rows, args.dim)
        n_ent = max(args.rows // 4, 2)
        out: dict[str, dict[str, dict[str, float]]] = {}
        for kind, (in_form, unwind_form, pk_form) in FORMS.items():
            prefix, pool = ("e", n_ent) if kind == "neighbourhood" else ("t", args.rows)
            out[kind] = {}
            for size in SIZES:
                ids = [f"{prefix}{i:06d}" for i in rng.choice(pool, size=min(size, pool), replace=False)]
                row = {"IN": timed(lambda: store.query(in_form, {"ids": ids}), args.repeat),
                       "UNWIND": timed(lambda: store.query(unwind_form, {"ids": ids}), args.repeat)}
                if pk_form is not None and size <= 48:
                    row["PK"] = timed(lambda: [store.query(pk_form, {"id": i}) for i in ids], args.repeat)
                out[kind][str(size)] = row
        store.close()
    print(json.dumps({"rows": args.rows, "dim": args.dim, "repeat": args.repeat, "ms_median": out}, indent=1))


if __name__ == "__main__":
    main()
