"""The reads behind the Explore and Trace pages, timed outside the browser on a built workspace.

For ``--questions`` HotpotQA questions (from the 101st, as benchmarks/scale_pages.py): the entity
search of the Explore page (the longest capitalised name in the question), the first hit's
neighbourhood and details, and, after a kg-rag run on the question, the trace's fact links
(``kgviz.viz.labels.fetch_links``). One kg-rag question first loads the graph held in memory
(untimed apart: ``warm_up_s``). Prints JSON: median and max ms per read. Run it from the checkout
to time (its ``kgviz`` is imported):

    KGVIZ_DATA=../shared/data python benchmarks/explore_reads.py --db DIR [--questions 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import scale  # noqa: E402  (benchmarks/scale.py: where the shared data is)
from scale_pages import search_term  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True, help="a built workspace's database folder")
    ap.add_argument("--questions", type=int, default=5)
    ap.add_argument("--offset", type=int, default=100, help="first HotpotQA question used")
    args = ap.parse_args()

    from kgviz import run as runner
    from kgviz.config import Settings
    from kgviz.methods.base import MethodContext
    from kgviz.reasoning import Reasoner
    from kgviz.viz import explore
    from kgviz.viz import trace as vt
    from kgviz.viz.labels import fetch_links
    from kgviz.workspace import open_workspace

    path = scale.DATA / "hotpotqa" / "questions.jsonl"
    items = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    items = items[args.offset:args.offset + args.questions + 1]
    ws = open_workspace(Settings.from_env(), db_dir=args.db, read_only=True)
    store = ws.store
    ctx = MethodContext(store, Reasoner(ws.llm, ws.embedder, ledger=ws.ledger, prices=ws.prices))
    times: dict[str, list[float]] = {"search": [], "neighbourhood": [], "details": [], "fetch_links": []}

    def timed(name: str, call: object) -> object:
        t = time.perf_counter()
        out = call()  # type: ignore[operator]
        times[name].append(time.perf_counter() - t)
        return out

    t0 = time.perf_counter()
    runner.run_method("kg-rag", items[0]["question"], ctx, None)  # loads the graph held in memory
    warm = time.perf_counter() - t0
    for item in items[1:]:
        hits = timed("search", lambda: explore.search_entities(store, search_term(item["question"]), limit=20))
        if hits:
            eid = hits[0].id  # type: ignore[index]
            timed("neighbourhood", lambda: explore.neighbourhood(store, eid, hops=1, cap=60))
            timed("details", lambda: explore.entity_details(store, eid))
        run = runner.run_method("kg-rag", item["question"], ctx, None)
        timed("fetch_links", lambda: fetch_links(store, vt.triple_ids(run.trace)))
    ws.close()
    print(json.dumps({"db": str(args.db), "warm_up_s": round(warm, 1), **{
        k: {"median_ms": round(1000 * statistics.median(v)), "max_ms": round(1000 * max(v)), "n": len(v)}
        for k, v in times.items() if v}}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
