"""The must-show harness of issue 12: build a multi-hop dataset's corpus offline, evaluate every
method and the BM25-only / dense-only baselines at one equal context budget, print one table.

    python benchmarks/multihop.py DATASET [--budget-tokens 3000] [--embedder SPEC] [--limit N]
                                  [--methods a,b,...] [--keep DIR] [--workers N] [--json]

DATASET is a folder name under the shared data root (``musique_hipporag_train``,
``2wikimultihopqa``, ...) or a path to a folder holding ``corpus.jsonl`` and ``questions.jsonl``.
The graph is built offline (heuristic extraction) with the chosen embedder into a temporary
workspace, or into ``--keep DIR``, which a later run reuses: the build is skipped when DIR holds a
finished build of the same corpus with the same embedder (its recorded build seconds are shown
again), and the evaluation resumes from DIR's results file. ``--limit`` takes the first N
questions; the whole corpus is always built (distractors are part of the task).

Printed: per method coverage with its 95% bootstrap CI, EM, F1 and the median context tokens the
answer step saw; above the table the share of questions whose gold answer is in the graph (the
gold funnel's "in graph") and the build seconds. Figures are printed, never asserted on.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.config import Settings  # noqa: E402
from kgviz.errors import KgvizError  # noqa: E402
from kgviz.evaluate import load_questions, run_evaluation  # noqa: E402
from kgviz.index.pipeline import BuildParams, build  # noqa: E402
from kgviz.ingest import load_paths  # noqa: E402
from kgviz.methods.registry import list_methods  # noqa: E402
from kgviz.workspace import open_workspace  # noqa: E402

DATA_ROOT = Path(os.environ.get("KGVIZ_DATA", ROOT.parent / "shared" / "data"))
if not DATA_ROOT.is_dir():  # a worktree sits one level deeper than the main checkout
    DATA_ROOT = Path("/work/shared/data")
BUILD_FILE = "multihop_build.json"  # what the harness built in a --keep folder, and how long it took


def dataset_dir(name: str) -> Path:
    p = Path(name)
    folder = p if (p / "corpus.jsonl").is_file() else DATA_ROOT / name
    if not (folder / "corpus.jsonl").is_file() or not (folder / "questions.jsonl").is_file():
        raise SystemExit(f"no corpus.jsonl + questions.jsonl under {folder} (data root {DATA_ROOT})")
    return folder


def _corpus_key(corpus: Path, embedder: str) -> str:
    return hashlib.sha256(corpus.read_bytes() + b"|" + embedder.encode()).hexdigest()[:16]


def build_or_reuse(settings: Settings, db: Path, corpus: Path, embedder: str, log: Any) -> dict[str, Any]:
    """Build ``corpus`` into ``db`` offline, unless ``db`` already holds this very build."""
    marker = db.parent / BUILD_FILE
    key = _corpus_key(corpus, embedder)
    if marker.is_file():
        info = json.loads(marker.read_text(encoding="utf-8"))
        if info.get("key") == key:
            log(f"reusing the build in {db} ({info['build_seconds']} s when built)")
            return {**info, "reused": True}
        raise SystemExit(f"{db.parent} holds another build ({info.get('corpus')}, {info.get('embedder')}); "
                         "give another --keep folder")
    docs = load_paths([corpus]).documents
    log(f"building {len(docs)} passages offline with {embedder} into {db} ...")
    ws = open_workspace(settings, db_dir=db, llm_spec="offline", embedder_spec=embedder)
    if ws.notices and not embedder.startswith("hashing"):
        # a benchmark of one embedder must not quietly measure another (a fallback to hashing)
        ws.close()
        shutil.rmtree(db, ignore_errors=True)
        raise SystemExit(f"{embedder} did not load, nothing built: {' '.join(ws.notices)}")
    try:
        t0 = time.perf_counter()
        report = build(docs, ws.store, ws.reasoner(), BuildParams(workers=1))
        seconds = round(time.perf_counter() - t0, 1)
        counts = report.to_dict().get("counts", {})
        notices = list(ws.notices)
    finally:
        ws.close()
    info = {"key": key, "corpus": str(corpus), "embedder": embedder, "documents": len(docs),
            "build_seconds": seconds, "counts": counts, "notices": notices}
    marker.write_text(json.dumps(info, indent=2), encoding="utf-8")
    return {**info, "reused": False}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("--budget-tokens", type=int, default=3000)
    ap.add_argument("--embedder", default="hashing")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions")
    ap.add_argument("--methods", default="all", help="comma-separated method names or 'all' (baselines are added)")
    ap.add_argument("--keep", type=Path, help="build into this folder and keep it (a re-run reuses it)")
    ap.add_argument("--workers", type=int, default=1, help="questions evaluated concurrently")
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--json", action="store_true", help="print the summary as JSON after the table")
    ap.add_argument("--build-only", action="store_true", help="build (or check the --keep build) and stop")
    args = ap.parse_args(argv)
    folder = dataset_dir(args.dataset)
    methods = list_methods() if args.methods == "all" else [m.strip() for m in args.methods.split(",") if m.strip()]
    items = load_questions(folder / "questions.jsonl", limit=args.limit)
    home = args.keep or Path(tempfile.mkdtemp(prefix="kgviz_multihop_"))
    home.mkdir(parents=True, exist_ok=True)
    settings = Settings.from_env({"KGVIZ_HOME": str(home), "KGVIZ_LLM": "offline"})
    db = home / "db"

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        built = build_or_reuse(settings, db, folder / "corpus.jsonl", args.embedder, log)
        if args.build_only:
            print(json.dumps(built, indent=2))
            return 0
        ws = open_workspace(settings, db_dir=db, llm_spec="offline", embedder_spec=args.embedder)
        try:
            done = [0]

            def progress(ev: Any) -> None:
                if ev.done - done[0] >= 25 or ev.done == ev.total:
                    done[0] = ev.done
                    log(f"  {ev.done}/{ev.total} runs ({ev.skipped} reused)")

            t0 = time.perf_counter()
            outcome = run_evaluation(items, methods, ws.method_context(), out_dir=home / f"eval-{args.budget_tokens}",
                                     budget_tokens=args.budget_tokens, workers=args.workers, n_boot=args.n_boot,
                                     progress=progress, settings={"dataset": str(folder), "embedder": args.embedder,
                                                                  "mode": ws.mode})
            eval_s = round(time.perf_counter() - t0, 1)
        finally:
            ws.close()
    except KgvizError as exc:
        log(f"error: {exc.user_message()}")
        return 2
    finally:
        if args.keep is None:
            shutil.rmtree(home, ignore_errors=True)
    from kgviz.evaluate.report import format_equal_budget_table

    share, n_q = outcome.summary.gold_in_graph, outcome.summary.n_questions
    print(f"{folder.name}: {n_q} questions, {built['documents']} passages; embedder {args.embedder}; offline; "
          f"budget {args.budget_tokens} tokens")
    print(f"gold in graph: {'-' if share is None else f'{100 * share:.1f}%'} of questions; "
          f"build {built['build_seconds']} s"
          f"{' (reused build)' if built['reused'] else ''}; eval {eval_s} s")
    print(format_equal_budget_table(outcome.summary))
    if args.json:
        doc = {"dataset": folder.name, "embedder": args.embedder, "budget_tokens": args.budget_tokens,
               "questions": n_q, "gold_in_graph": share, "build_seconds": built["build_seconds"],
               "eval_seconds": eval_s, "summary": outcome.to_dict()}
        print(json.dumps(doc, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
