"""Offline build of the HotpotQA benchmark corpus (1,971 passages) into a temporary graph.

Prints JSON: seconds per stage, total seconds, peak RSS, graph counts. Target (issue "Build the
knowledge graph from uploaded text"): under 60 s and under 2 GB on 2 cores.

    python3 benchmarks/build_hotpotqa.py [--corpus PATH] [--limit N] [--keep DIR] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.graph.store import GraphStore  # noqa: E402
from kgviz.index.pipeline import BuildParams, build  # noqa: E402
from kgviz.ingest import load_paths  # noqa: E402
from kgviz.providers.embedders import HashingEmbedder  # noqa: E402
from kgviz.providers.offline import OfflineLLM  # noqa: E402
from kgviz.reasoning import Reasoner  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "hotpotqa" / "corpus.jsonl"


def peak_rss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return round(kb / 1024, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--limit", type=int, default=0, help="only the first N passages")
    ap.add_argument("--keep", type=Path, help="build into this directory and keep it")
    ap.add_argument("--profile", action="store_true", help="print the top cProfile entries to stderr")
    args = ap.parse_args()
    if not args.corpus.exists():
        print(json.dumps({"error": f"corpus not found: {args.corpus}"}))
        return 2
    t0 = time.perf_counter()
    docs = load_paths([args.corpus]).documents
    if args.limit:
        docs = docs[: args.limit]
    load_s = time.perf_counter() - t0
    db = args.keep or Path(tempfile.mkdtemp(prefix="kgviz_bench_build_")) / "ws"
    embedder = HashingEmbedder()
    store = GraphStore.open(db, embedder_id=embedder.id, dim=embedder.dim)
    profiler = cProfile.Profile() if args.profile else None
    try:
        t1, c1 = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        report = build(docs, store, Reasoner(OfflineLLM(), embedder), BuildParams())
        if profiler:
            profiler.disable()
        total, cpu = time.perf_counter() - t1, time.process_time() - c1
    finally:
        store.close()
        if not args.keep:
            shutil.rmtree(db.parent, ignore_errors=True)
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
        print(out.getvalue(), file=sys.stderr)
    result = {
        "corpus": str(args.corpus),
        "documents": len(docs),
        "embedder": embedder.id,
        "load_seconds": round(load_s, 2),
        "seconds_by_stage": report.seconds_by_stage,
        "build_seconds": round(total, 2),
        "build_cpu_seconds": round(cpu, 2),  # this process only; wall time also counts machine load
        "load_average_1m": round(os.getloadavg()[0], 2),
        "peak_rss_mb": peak_rss_mb(),
        "counts": {k: v for k, v in report.counts.items() if v},
        "merges": len(report.merges),
        "failures": len(report.failures),
        "target": {"seconds": 60, "rss_mb": 2048},
        "within_target": total < 60 and peak_rss_mb() < 2048,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
