"""Kùzu statements per retrieval, per method (issue 29): how many statements a question costs and
which ones, with the number of ids each id-list statement carried. A statement's fixed cost
(parse, plan, transaction: 1-3 ms) is what batching saves, so the count is the figure to watch.

  python3 benchmarks/statements.py                              # the tests' fixture graph
  python3 benchmarks/statements.py --corpus hotpotqa --db /tmp/hotpot_ws --n 20
                                                                # built once into --db (as
                                                                # retrieval_latency.py does)

Each method runs once uncounted (warm-up: caches loaded once per process), then once per question.
Prints one JSON document: per method the statements per question (mean, max) and the time spent
in them, and the statements that took the most time, each with how often per question, ms per
question and its largest $ids list.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]


def count_statements(store: Any) -> Callable[[], list[tuple[str, int, float]]]:
    """Wrap ``store``'s statement runner; the returned function hands over (and forgets) the
    statements run since its last call, each as (its text, up to 90 characters; ids in $ids; ms)."""
    seen: list[tuple[str, int, float]] = []
    run = store._statement

    def counted(cypher: str, params: Any, **kw: Any) -> Any:
        ids = (params or {}).get("ids")
        t0 = time.perf_counter()
        try:
            return run(cypher, params, **kw)
        finally:
            seen.append((" ".join(cypher.split())[:90], len(ids) if isinstance(ids, list) else 0,
                         1000 * (time.perf_counter() - t0)))

    store._statement = counted

    def take() -> list[tuple[str, int, float]]:
        out = list(seen)
        seen.clear()
        return out

    return take


def measure(ctx: Any, questions: list[str], names: list[str]) -> dict[str, Any]:
    from kgviz.methods.base import Tracer
    from kgviz.methods.registry import get_method

    take = count_statements(ctx.store)
    out: dict[str, Any] = {}
    for name in names:
        method = get_method(name)
        per_question: list[int] = []
        kinds: Counter[str] = Counter()
        widest: dict[str, int] = {}
        spent: Counter[str] = Counter()
        for i, q in enumerate([questions[0], *questions]):
            take()
            try:
                method.retrieve(q, ctx, method.Params(), Tracer(ctx.reasoner))
            except Exception as exc:  # a benchmark reports failures instead of stopping
                out[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                break
            got = take()
            if not i:
                continue  # the warm-up
            per_question.append(len(got))
            for text, n_ids, ms in got:
                kinds[text] += 1
                widest[text] = max(widest.get(text, 0), n_ids)
                spent[text] += ms
        else:
            n = len(per_question)
            out[name] = {"statements_mean": round(statistics.fmean(per_question), 1), "statements_max": max(per_question),
                         "statement_ms_mean": round(sum(spent.values()) / n, 1),
                         "top": [{"per_question": round(kinds[t] / n, 1), "ms_per_question": round(ms / n, 1),
                                  "max_ids": widest[t], "statement": t} for t, ms in spent.most_common(8)]}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default="fixture", help="fixture | sample | hotpotqa | 2wikimultihopqa | PATH.jsonl")
    p.add_argument("--questions", help="questions.jsonl for a corpus given as a path")
    p.add_argument("--db", help="workspace directory to build into / reuse (default: a temp dir)")
    p.add_argument("--n", type=int, default=20, help="questions counted")
    p.add_argument("--methods", help="comma-separated names (default: every registered method)")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from retrieval_latency import _open_graph  # noqa: E402  (benchmarks/retrieval_latency.py)

    from kgviz.methods.registry import list_methods

    ctx, questions, _ = _open_graph(args)
    names = args.methods.split(",") if args.methods else list_methods()
    print(json.dumps({"corpus": args.corpus, "n_questions": len(questions),
                      "methods": measure(ctx, questions, names)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
