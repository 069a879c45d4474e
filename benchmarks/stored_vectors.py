"""Stored vectors by id (issue 29): Kùzu's id-list read, which get_embeddings and kg-rag's
candidate read used, against the vector files they read now (kgviz.graph.search.stored_vectors).

    nice -n 5 python benchmarks/stored_vectors.py [--rows 143507]

Loads ``--rows`` random unit 768-d vectors (default: the 10k-passage build's Triple count) into a
fresh workspace, writes its vector files, then reads 30 and 400 random ids both ways (median of
5) and checks that both give the same vectors bit for bit. Prints one line per list size.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DIM = 768


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=143_507)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from kgviz.graph.store import GraphStore

    rng = np.random.default_rng(1)
    work = Path(tempfile.mkdtemp(prefix="kgviz_stored_vectors_"))
    store = GraphStore.open(work / "ws", embedder_id=f"hashing-{DIM}", dim=DIM)
    try:
        for b0 in range(0, args.rows, 20_000):
            m = rng.normal(size=(min(20_000, args.rows - b0), DIM)).astype(np.float32)
            m = (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)
            store.bulk_load_nodes("Entity", [{"id": f"e{b0 + i:07d}", "name": "x", "origin": "corpus", "emb": v}
                                             for i, v in enumerate(m)])
        t0 = time.perf_counter()
        store.stored_vectors("Entity", ["e0000001"])
        print(f"{args.rows} rows; vector files written in {time.perf_counter() - t0:.1f} s")
        for k in (30, 400):
            ids = [f"e{i:07d}" for i in rng.choice(args.rows, k, replace=False)]
            old, new = [], []
            for _ in range(5):
                t0 = time.perf_counter()
                res = list(store._by_id_list("(n:Entity)", "n.id", "n.id, n.emb", ids, "n.emb IS NOT NULL",
                                             vectors=True))
                old.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                got = store.get_embeddings("Entity", ids)
                new.append(time.perf_counter() - t0)
            kuzu = {i: np.asarray(v, dtype=np.float32) for r in res
                    for i, v in zip(r.column(0).to_pylist(), r.column(1).to_pylist())}
            same = sorted(got) == sorted(kuzu) and all(got[i].tobytes() == kuzu[i].tobytes() for i in ids)
            print(f"{k} ids: Kùzu id-list read {1000 * statistics.median(old):.0f} ms, vector files "
                  f"{1000 * statistics.median(new):.1f} ms, identical vectors: {same}")
    finally:
        store.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
