"""The first question after a workspace is opened, per method, each in a new process (issue 29).

A retrieval benchmark's warm-up question hides what a user who opens a large workspace and asks
one question waits for (and every ``kgviz ask`` process): the in-memory views built on first use
(the read model, the sparse copies of the vector tables, KET's keyword view, ...). Here every
method runs in a process of its own that opens the workspace, asks one question and then a
second one (for contrast), offline (hashing embedder, no LLM; the retrieval step only, as
benchmarks/retrieval_latency.py). Prints one JSON document.

  python benchmarks/first_question.py --db /tmp/ws                      # HotpotQA's questions
  python benchmarks/first_question.py --db /tmp/ws --checkouts /work/main,.   # main, then this
                                                                        # checkout, method by method

With several ``--checkouts`` each method runs in each checkout back to back (same workspace, same
load), ``--repeat`` times, so the figures of two versions of kgviz are side by side. The
workspace is opened read-write, as the app and ``kgviz ask`` open it: a checkout that persists
something on first use does so in the first process (run the checkout that writes nothing first).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("KGVIZ_DATA") or ROOT.parent / "shared" / "data")
QUESTIONS = DATA / "hotpotqa" / "questions.jsonl"


def _child(db: str, method_name: str, questions: list[str]) -> dict[str, Any]:
    """One process's figures: import, open, first question, second question (seconds)."""
    t0 = time.perf_counter()
    from kgviz.graph.store import GraphStore
    from kgviz.methods.base import MethodContext, Tracer
    from kgviz.methods.registry import get_method
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.providers.offline import OfflineLLM
    from kgviz.reasoning import Reasoner

    t1 = time.perf_counter()
    embedder = HashingEmbedder()
    store = GraphStore.open(Path(db), embedder_id=embedder.id, dim=embedder.dim)
    ctx = MethodContext(store, Reasoner(OfflineLLM(), embedder))
    t2 = time.perf_counter()
    method = get_method(method_name)
    asked = []
    for q in questions:
        s = time.perf_counter()
        method.retrieve(q, ctx, method.Params(), Tracer(ctx.reasoner))
        asked.append(time.perf_counter() - s)
    store.close()
    import kgviz

    return {"kgviz": str(Path(kgviz.__file__).resolve().parents[1]), "method": method_name,
            "import_s": round(t1 - t0, 3), "open_s": round(t2 - t1, 3),
            "first_s": round(asked[0], 3), "second_s": round(asked[1], 3) if len(asked) > 1 else None,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def _run(checkout: Path, db: str, method: str, questions: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--db", db, "--methods", method,
           "--question", *questions]
    done = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(checkout)})
    if done.returncode:
        return {"kgviz": str(checkout), "method": method, "error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True, help="workspace directory (a built graph)")
    p.add_argument("--methods", help="comma-separated names (default: every registered method)")
    p.add_argument("--questions", default=str(QUESTIONS), help="questions.jsonl: its first two are asked")
    p.add_argument("--checkouts", default=str(ROOT), help="comma-separated kgviz checkouts to compare")
    p.add_argument("--repeat", type=int, default=1, help="runs per method and checkout")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--question", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(_child(args.db, args.methods, args.question)))
        return 0
    sys.path.insert(0, str(ROOT))
    from kgviz.methods.registry import list_methods

    names = args.methods.split(",") if args.methods else list_methods()
    with open(args.questions, encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][:2]
    checkouts = [Path(c).resolve() for c in args.checkouts.split(",")]
    runs = []
    for name in names:
        for _ in range(args.repeat):
            for checkout in checkouts:
                runs.append(_run(checkout, args.db, name, questions))
                print(json.dumps(runs[-1]), file=sys.stderr)
    summary: dict[str, dict[str, Any]] = {}
    for r in runs:
        if "error" in r:
            continue
        row = summary.setdefault(r["method"], {}).setdefault(r["kgviz"], {"open_s": [], "first_s": [], "second_s": []})
        for key in ("open_s", "first_s", "second_s"):
            row[key].append(r[key])
    for by_checkout in summary.values():
        for row in by_checkout.values():
            for key in list(row):
                row[key] = round(statistics.median(row[key]), 3)
    print(json.dumps({"db": args.db, "questions": questions, "load_avg": os.getloadavg(),
                      "median": summary, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
