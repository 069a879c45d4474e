"""The build's row updates (Chunk.pagerank/core, Entity.n_mentions, ...): ``UNWIND $rows`` over a
list parameter (before issue 29) against ``LOAD FROM $rows`` over an arrow table
(kgviz.graph.writes._update), side by side in one run, on N chunks each.

    nice -n 10 python benchmarks/update_rows.py [--sizes 10000,40000]

Prints JSON: seconds per form and size, and the growth from the smallest size to the largest.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.graph import writes  # noqa: E402
from kgviz.graph.store import GraphStore  # noqa: E402


def one(n: int) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="kgviz_bench_update_"))
    try:
        store = GraphStore.open(work / "ws", embedder_id="bench", dim=8)
        store.bulk_load_nodes("Chunk", [{"id": f"c{i:07d}", "doc_id": "d", "ord": i, "text": "x", "n_tokens": 1}
                                        for i in range(n)])
        rows = [{"id": f"c{i:07d}", "pr": 1.0 / (i + 1), "core": i % 2 == 0} for i in range(n)]
        t0 = time.perf_counter()
        for start in range(0, n, writes.UPDATE_BATCH):  # the statement the build ran before
            store.execute("UNWIND $rows AS r MATCH (c:Chunk) WHERE c.id = r.id SET c.pagerank = r.pr, c.core = r.core",
                          {"rows": rows[start:start + writes.UPDATE_BATCH]})
        unwind = time.perf_counter() - t0
        t0 = time.perf_counter()
        writes.set_chunk_ranks(store, [{**r, "pr": r["pr"] / 2} for r in rows])  # what it runs now
        load_from = time.perf_counter() - t0
        check = store.query("MATCH (c:Chunk) WHERE c.id = 'c0000000' RETURN c.pagerank AS p")[0]["p"]
        assert abs(check - 0.5) < 1e-12, check
        store.close()
        return {"unwind_s": round(unwind, 2), "load_from_s": round(load_from, 2)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,40000")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    out = {str(n): one(n) for n in (int(s) for s in args.sizes.split(","))}
    print(json.dumps({"rows": out, "load_avg_1m": [round(load, 1), round(os.getloadavg()[0], 1)]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
