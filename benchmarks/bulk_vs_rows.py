"""Bulk COPY vs per-row CREATE for Chunk rows, through GraphStore. Prints one JSON object.

Per-row CREATE is timed on a sample and extrapolated (running all rows one by one would take
minutes); the JSON says so. Auto-committed CREATEs pay one WAL fsync each; the same CREATEs in
one explicit transaction are reported too. Exits with status 1 if bulk is less than
--min-speedup times faster than auto-committed per-row CREATE.

    python benchmarks/bulk_vs_rows.py [--rows 50000] [--sample 2000] [--dim 384]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kgviz.graph.store import GraphStore  # noqa: E402

CREATE_CHUNK = (
    "CREATE (:Chunk {id: $id, doc_id: $doc_id, ord: $ord, text: $text, n_tokens: $n_tokens, emb: $emb})"
)


def make_rows(n: int, dim: int, prefix: str, seed: int, with_emb: bool) -> list[dict]:
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n, dim)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    words = ["graph", "entity", "relation", "chunk", "retrieval", "answer", "paper", "method"]
    rows = []
    for i in range(n):
        text = " ".join(words[(i * 7 + j) % len(words)] for j in range(60))
        rows.append({"id": f"{prefix}#c{i}", "doc_id": prefix, "ord": i, "text": text,
                     "n_tokens": 60, "emb": emb[i] if with_emb else None})
    return rows


def run(tmp: Path, args: argparse.Namespace, with_emb: bool) -> dict:
    label = "emb" if with_emb else "text"
    with GraphStore.open(tmp / f"bulk-{label}", embedder_id="bench", dim=args.dim) as store:
        rows = make_rows(args.rows, args.dim, "doc:bulk", seed=1, with_emb=with_emb)
        start = time.perf_counter()
        inserted = store.bulk_load_nodes("Chunk", rows)
        bulk_s = time.perf_counter() - start
        start = time.perf_counter()
        reinserted = store.bulk_load_nodes("Chunk", rows)
        reload_s = time.perf_counter() - start
        assert inserted == args.rows and reinserted == 0

    with GraphStore.open(tmp / f"rows-{label}", embedder_id="bench", dim=args.dim) as store:
        sample = make_rows(args.sample, args.dim, "doc:rows", seed=2, with_emb=with_emb)
        start = time.perf_counter()
        for row in sample:
            emb = row["emb"].tolist() if with_emb else None
            store.execute(CREATE_CHUNK, {**row, "emb": emb})
        sample_s = time.perf_counter() - start
        assert store.counts()["Chunk"] == args.sample

    # The same CREATEs inside one explicit transaction: no commit (WAL fsync) per row.
    with GraphStore.open(tmp / f"txn-{label}", embedder_id="bench", dim=args.dim) as store:
        start = time.perf_counter()
        with store.transaction():
            for row in sample:
                emb = row["emb"].tolist() if with_emb else None
                store.execute(CREATE_CHUNK, {**row, "emb": emb})
        txn_s = time.perf_counter() - start
        assert store.counts()["Chunk"] == args.sample
    txn_total_s = args.rows / (args.sample / txn_s)

    per_row_rate = args.sample / sample_s
    per_row_total_s = args.rows / per_row_rate
    speedup = per_row_total_s / bulk_s
    return {
        "rows": args.rows,
        "embedding": f"FLOAT[{args.dim}] per row" if with_emb else "none (emb NULL)",
        "bulk_copy": {
            "seconds": round(bulk_s, 3),
            "rows_per_s": round(args.rows / bulk_s),
            "includes": "row->arrow conversion, existing-id lookup, COPY",
        },
        "bulk_reload_all_existing": {"seconds": round(reload_s, 3), "inserted": 0},
        "per_row_create": {
            "measured_rows": args.sample,
            "measured_seconds": round(sample_s, 3),
            "rows_per_s": round(per_row_rate),
            "extrapolated": True,
            "extrapolated_seconds_for_all_rows": round(per_row_total_s, 1),
            "method": f"one auto-committed CREATE per row via GraphStore.execute, timed on "
            f"{args.sample} rows and scaled linearly to {args.rows}",
        },
        "speedup_bulk_vs_per_row": round(speedup, 1),
        "per_row_create_in_one_transaction": {
            "measured_rows": args.sample,
            "measured_seconds": round(txn_s, 3),
            "rows_per_s": round(args.sample / txn_s),
            "extrapolated": True,
            "extrapolated_seconds_for_all_rows": round(txn_total_s, 1),
            "speedup_bulk_vs_this": round(txn_total_s / bulk_s, 1),
        },
        "ok": speedup >= args.min_speedup,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--sample", type=int, default=2_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--min-speedup", type=float, default=50.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        scenarios = {
            "with_embeddings": run(Path(tmp), args, with_emb=True),
            "text_only": run(Path(tmp), args, with_emb=False),
        }
    report = {
        "benchmark": "bulk_vs_rows",
        "table": "Chunk",
        "min_speedup_required": args.min_speedup,
        **scenarios,
        "ok": all(s["ok"] for s in scenarios.values()),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
