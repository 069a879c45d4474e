"""Extraction against a live model with N concurrent workers vs 1 (issue 15, bullet 5). Prints JSON.

  bash ../shared/tools/local_llm.sh stop 8801
  LLAMA_SLOTS=2 bash ../shared/tools/local_llm.sh serve qwen-0.5b 8801   # -np 2: two parallel slots
  OPENAI_API_KEY=local KGVIZ_TIMEOUT_S=600 python benchmarks/extract_concurrency.py \\
      --llm openai-compatible:qwen2.5-coder-0.5b-instruct@http://127.0.0.1:8801/v1 --chunks 2 --workers 1
  bash ../shared/tools/local_llm.sh stop 8801; LLAMA_SLOTS=2 bash ../shared/tools/local_llm.sh serve qwen-0.5b 8801
  ... the same with --workers 2

Each worker count extracts the same first ``--chunks`` chunks of sample_data/corpus into a fresh
temporary graph through kgviz's own extraction stage (``kgviz.index.extract.run_extraction``, the
thread pool a build uses), with no LLM cache, so every chunk reaches the server. Reported per
worker count: wall seconds, seconds per chunk, the calls' mean latency, tokens and output tokens
per wall second, failed chunks, and the speed-up over the first worker count.

What to expect from llama-server: its slots (``-np``) share the server's threads. Generation is
memory-bound, so two sequences decoded in one batch cost little more than one; prompt processing
is compute-bound and gains nothing. The speed-up therefore grows with the output share of the
work and is bounded by the slots given to the server; a worker beyond the slots only queues.
llama-server keeps each slot's last prompt and reuses it for an identical request, so a second
worker count over the same chunks would be served from that cache: restart the server between
worker counts (one ``--workers`` value per run), as done for the figures in the README.
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from kgviz.config import Settings
from kgviz.graph.store import GraphStore
from kgviz.index.extract import run_extraction
from kgviz.index.params import BuildParams
from kgviz.ingest import chunk_document, load_paths
from kgviz.providers.factory import make_embedder, make_llm
from kgviz.providers.usage import UsageLedger
from kgviz.reasoning import Reasoner
from kgviz.replay import SAMPLE_BUILD, SAMPLE_CORPUS


def sample_chunks(n: int) -> list:
    docs = load_paths([SAMPLE_CORPUS]).documents
    chunks = [c for d in docs for c in chunk_document(d, chunk_tokens=SAMPLE_BUILD.chunk_tokens,
                                                      overlap=SAMPLE_BUILD.chunk_overlap)]
    return chunks[:n]


def measure(spec: str, chunks: list, workers: int) -> dict[str, object]:
    llm = make_llm(spec, Settings.from_env(), use_cache=False)
    embedder, _ = make_embedder("hashing")
    tmp = Path(tempfile.mkdtemp(prefix="kgviz-bench-extract-"))
    store = GraphStore.open(tmp / "db", embedder_id=embedder.id, dim=embedder.dim)
    try:
        t0 = time.perf_counter()
        res = run_extraction(store, Reasoner(llm, embedder, UsageLedger()), chunks, BuildParams(workers=workers),
                             lambda *a: None, None)
        wall = time.perf_counter() - t0
    finally:
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)
    u, n = res.usage, len(chunks)
    return {"workers": workers, "chunks": n, "wall_s": round(wall, 1), "wall_s_per_chunk": round(wall / n, 1),
            "mean_call_latency_s": round(u.latency_s / max(1, u.calls), 1), "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens, "output_tokens_per_wall_s": round(u.output_tokens / wall, 2),
            "failed_chunks": len(res.failures), "malformed_lines": res.n_malformed}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--llm", required=True, help="a live model spec (openai-compatible:<model>@<url>)")
    p.add_argument("--chunks", type=int, default=4, help="first N chunks of the sample corpus")
    p.add_argument("--workers", default="1,2", help="worker counts to compare, the first is the baseline")
    p.add_argument("--server", default="", help="how the server runs (-np, -t), echoed in the output")
    args = p.parse_args()
    chunks = sample_chunks(args.chunks)
    runs = [measure(args.llm, chunks, int(w)) for w in args.workers.split(",")]
    base = float(runs[0]["wall_s"])  # type: ignore[arg-type]
    for r in runs:
        r["speedup_vs_first"] = round(base / float(r["wall_s"]), 2) if r["wall_s"] else None  # type: ignore[arg-type]
    print(json.dumps({"llm": args.llm, "server": args.server, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
