"""Retrieval latency per registered method, offline (no LLM; offline heuristics a method uses
during retrieval are included, the answer step is not). Prints one JSON document.

  python3 benchmarks/retrieval_latency.py                       # the tests' fixture graph
  python3 benchmarks/retrieval_latency.py --corpus sample       # sample_data/, built offline
  python3 benchmarks/retrieval_latency.py --corpus hotpotqa --db /tmp/hotpot_ws --n 100
                                                                # ../shared/data/hotpotqa, built once
                                                                # into --db and reused afterwards

Each method runs once untimed (warm-up: first Kùzu queries, index loads), then once per question.
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("KGVIZ_DATA") or ROOT.parent / "shared" / "data")  # as benchmarks/scale.py
FIXTURE_QUESTIONS = ["Who designed the Harbour Library?", "Which river flows into the Atlantic Ocean at Lisbon?",
                     "Where was Owen Hale born?", "What is the capital of Wales?",
                     "In what year was Marta Ruiz born?", "Which sea is Valencia on?"]


def _questions(path: Path, n: int) -> list[str]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line)["question"] for line in f if line.strip()][:n]


def _open_graph(args: argparse.Namespace) -> tuple[Any, list[str], float]:
    """(MethodContext, questions, build seconds) for the chosen corpus."""
    from kgviz.graph.store import GraphStore
    from kgviz.methods.base import MethodContext
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.providers.offline import OfflineLLM
    from kgviz.reasoning import Reasoner

    embedder = HashingEmbedder()
    if args.db:
        db = Path(args.db)
    else:  # a workspace of this run only: removed when the process ends (kgviz bench ran this
        # script at every call and each left ~16 MB, HotpotQA ~0.5 GB, in the temp folder)
        scratch = tempfile.mkdtemp(prefix="kgviz_bench_")
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        db = Path(scratch) / "ws"
    if args.corpus == "fixture":
        from tests.support.fixture_graph import build_fixture_graph  # the tests' hand-built graph

        t0 = time.perf_counter()
        kg = build_fixture_graph(db, embedder)
        return kg.ctx, FIXTURE_QUESTIONS[: args.n], time.perf_counter() - t0

    from kgviz.index.pipeline import build
    from kgviz.ingest import load_paths

    if args.corpus == "sample":
        corpus, questions = ROOT / "sample_data" / "corpus.jsonl", ROOT / "sample_data" / "questions.jsonl"
    elif args.corpus in ("hotpotqa", "2wikimultihopqa"):
        corpus, questions = DATA / args.corpus / "corpus.jsonl", DATA / args.corpus / "questions.jsonl"
    else:
        corpus, questions = Path(args.corpus), Path(args.questions or "")
    if not corpus.exists() or not questions.exists():
        raise SystemExit(f"missing corpus or questions file: {corpus}, {questions}")
    store = GraphStore.open(db, embedder_id=embedder.id, dim=embedder.dim)
    reasoner = Reasoner(OfflineLLM(), embedder)
    t0 = time.perf_counter()
    if args.no_build:  # a workspace built elsewhere (benchmarks/scale.py --keep): measured as it is
        if not store.counts().get("Chunk"):
            raise SystemExit(f"--no-build: {db} holds no graph")
    else:
        build(load_paths([corpus]).documents, store, reasoner)  # a no-op when --db already holds it
    return MethodContext(store, reasoner), _questions(questions, args.n), time.perf_counter() - t0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def measure(ctx: Any, questions: list[str], names: list[str]) -> dict[str, Any]:
    from kgviz.methods.base import Tracer
    from kgviz.methods.registry import get_method

    out: dict[str, Any] = {}
    for name in names:
        method = get_method(name)
        params = method.Params()
        times: list[float] = []
        errors: list[str] = []
        for i, q in enumerate([questions[0], *questions]):
            t0 = time.perf_counter()
            try:
                method.retrieve(q, ctx, params, Tracer(ctx.reasoner))
            except Exception as exc:  # a benchmark reports failures instead of stopping
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if i:  # the first run is the warm-up
                times.append((time.perf_counter() - t0) * 1000)
        row: dict[str, Any] = {"n": len(times), "errors": len(errors)}
        if times:
            row.update(p50_ms=round(statistics.median(times), 2), p95_ms=round(_percentile(times, 0.95), 2),
                       max_ms=round(max(times), 2), mean_ms=round(statistics.fmean(times), 2))
        if errors:
            row["first_error"] = errors[0][:300]
        out[name] = row
    return out


def graph_args(description: str, n: int, n_help: str) -> argparse.Namespace:
    """The options of a benchmark over one graph and its questions (this one and statements.py)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--corpus", default="fixture", help="fixture | sample | hotpotqa | 2wikimultihopqa | PATH.jsonl")
    p.add_argument("--questions", help="questions.jsonl for a corpus given as a path")
    p.add_argument("--db", help="workspace directory to build into / reuse (default: a temp dir)")
    p.add_argument("--n", type=int, default=n, help=n_help)
    p.add_argument("--methods", help="comma-separated names (default: every registered method)")
    p.add_argument("--no-build", action="store_true", help="measure the graph --db holds as it is (e.g. one "
                   "benchmarks/scale.py --keep built); the corpus only names the questions")
    return p.parse_args()


def main() -> int:
    args = graph_args(__doc__.split("\n\n")[0], 50, "questions timed")
    sys.path.insert(0, str(ROOT))
    from kgviz.methods.registry import list_methods

    ctx, questions, build_s = _open_graph(args)
    names = args.methods.split(",") if args.methods else list_methods()
    counts = ctx.store.counts()
    report = {
        "corpus": args.corpus, "mode": "offline", "embedder": ctx.embedder.id, "n_questions": len(questions),
        "build_seconds": round(build_s, 2),
        "graph": {k: counts.get(k, 0) for k in ("Document", "Chunk", "Entity", "Triple", "SIMILAR_DOC", "MENTIONS")},
        "methods": measure(ctx, questions, names),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
