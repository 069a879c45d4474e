"""The reads behind the Explore and Trace pages, timed outside the browser on a built workspace.

For ``--questions`` HotpotQA questions (from the 101st, as benchmarks/scale_pages.py): the entity
search of the Explore page (the longest capitalised name in the question), the first hit's
neighbourhood and details, and, after a kg-rag run on the question, the trace's fact links
(``kgviz.viz.labels.fetch_links``) and human labels of its documents and chunks
(``fetch_human_labels``, on the ids ``kgviz.viz.trace_player.run_frames`` gives it), labels also
for the runs of ``--label-methods`` (kg-rag's trace has entities and facts only). One question per
method first loads what it holds in memory (untimed apart: ``warm_up_s``), then one search on its
term is timed apart (``first_search``: where the search holds names in memory, their load).
Prints JSON: median and max ms per read. Run it from the checkout to time (its ``kgviz`` is imported):

    KGVIZ_DATA=../shared/data python benchmarks/explore_reads.py --db DIR [--questions 5] [--check]

``--check`` (untimed, after the timing) compares the searches and label reads answered from
memory / by key with the statements they replace, on the questions' terms and a few tricky texts,
and prints how many differ.
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
    ap.add_argument("--check", action="store_true", help="compare the reads with their statements (untimed)")
    ap.add_argument("--label-methods", default="text-rag,ket-rag,kg-retriever,kg-infused",
                    help="methods (comma-separated) whose runs' labels are timed too")
    args = ap.parse_args()

    from kgviz import run as runner
    from kgviz.config import Settings
    from kgviz.methods.base import MethodContext
    from kgviz.reasoning import Reasoner
    from kgviz.viz import explore
    from kgviz.viz import trace as vt
    from kgviz.viz.labels import fetch_human_labels, fetch_links
    from kgviz.workspace import open_workspace

    path = scale.DATA / "hotpotqa" / "questions.jsonl"
    items = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    items = items[args.offset:args.offset + args.questions + 1]
    ws = open_workspace(Settings.from_env(), db_dir=args.db, read_only=True)
    store = ws.store
    ctx = MethodContext(store, Reasoner(ws.llm, ws.embedder, ledger=ws.ledger, prices=ws.prices))
    times: dict[str, list[float]] = {"first_search": [], "search": [], "neighbourhood": [], "details": [],
                                     "fetch_links": [], "labels": []}
    label_ids: list[int] = []
    label_sets: list[list[str]] = []

    def timed(name: str, call: object) -> object:
        t = time.perf_counter()
        out = call()  # type: ignore[operator]
        times[name].append(time.perf_counter() - t)
        return out

    t0 = time.perf_counter()
    label_methods = [m for m in args.label_methods.split(",") if m]
    for method in ["kg-rag", *label_methods]:  # loads what each holds in memory
        runner.run_method(method, items[0]["question"], ctx, None)
    warm = time.perf_counter() - t0
    timed("first_search", lambda: explore.search_entities(store, search_term(items[0]["question"]), limit=20))
    for item in items[1:]:
        hits = timed("search", lambda: explore.search_entities(store, search_term(item["question"]), limit=20))
        if hits:
            eid = hits[0].id  # type: ignore[index]
            timed("neighbourhood", lambda: explore.neighbourhood(store, eid, hops=1, cap=60))
            timed("details", lambda: explore.entity_details(store, eid))
        for method in ["kg-rag", *label_methods]:
            run = runner.run_method(method, item["question"], ctx, None)
            if method == "kg-rag":
                timed("fetch_links", lambda: fetch_links(store, vt.triple_ids(run.trace)))
            ids = [n.id for s in run.trace for n in s.nodes] + [x for s in run.trace for e in s.edges
                                                                for x in (e.source, e.target)]
            label_ids.append(len({i for i in ids if i.startswith("doc:")}))
            label_sets.append(ids)
            if label_ids[-1]:  # (a trace of entities and facts only has no label to read)
                timed("labels", lambda: fetch_human_labels(store, ids))
    checked = _check(store, [search_term(i["question"]) for i in items], label_sets) if args.check else {}
    ws.close()
    print(json.dumps({"db": str(args.db), "warm_up_s": round(warm, 1), "label_doc_ids": label_ids, **checked, **{
        k: {"median_ms": round(1000 * statistics.median(v)), "max_ms": round(1000 * max(v)), "n": len(v)}
        for k, v in times.items() if v}}, indent=2))
    return 0


def _check(store: object, terms: list[str], label_sets: list[list[str]]) -> dict[str, object]:
    """{"check": counts}: searches (limits 20 and 3) and label reads whose rows differ from their
    statements' (the searches in order, the labels as maps)."""
    from kgviz.graph import explore as statements
    from kgviz.graph import memory_explore, reads
    from kgviz.viz import labels

    texts = terms + ["a", "e", "the", "john", "new york", "İ", "ß", "σ", "%", "_", "'", "zzzzqx"]
    searches = [(t, k) for t in texts for k in (20, 3)]
    search_diff = [f"{t!r}/{k}" for t, k in searches
                   if memory_explore.entities_named(store, t, k) != statements.entities_named(store, t, k)]
    label_diff = 0
    for ids in label_sets:
        mine = labels.fetch_human_labels(store, ids)
        real = (memory_explore.documents_for_labels, memory_explore.chunk_label_texts)
        memory_explore.documents_for_labels, memory_explore.chunk_label_texts = (  # type: ignore[assignment]
            reads.documents_for_labels, reads.chunk_label_texts)
        try:
            label_diff += labels.fetch_human_labels(store, ids) != mine
        finally:
            memory_explore.documents_for_labels, memory_explore.chunk_label_texts = real  # type: ignore[assignment]
    return {"check": {"searches": len(searches), "searches_differing": search_diff,
                      "label_runs": len(label_sets), "label_runs_differing": label_diff}}


if __name__ == "__main__":
    raise SystemExit(main())
