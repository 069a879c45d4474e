"""A resumed build (issue 29): a build of scale.py's corpus killed inside a later stage, then run
again. Measures the resume's seconds per stage (its knn stage is the KET plan: computed, or
reused from the kept plan, ``report.ket["plan"]``) and compares its traces (scale.py's: 5
HotpotQA questions x every method, canonical) with an uninterrupted build's of the same corpus.

    nice -n 10 python benchmarks/resume.py --passages 10000 --checkouts /work/main,. --work /tmp/rs

Per checkout (each step in a process of its own, that checkout's kgviz): an uninterrupted build
(``clean``: its seconds per stage; the workspace is kept under --work), a build SIGKILLed right
after its first statement containing ``--kill-after`` (default: the doc_layer stage's SIMILAR_DOC
COPY; "COPY SubChunk" lands in the ket stage), and the build that resumes it. Every checkout's
clean build, then each checkout's killed build and resume, back to back in one run.
Prints one JSON document; the load average is sampled before and after each step.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import N_QUESTIONS, QUESTIONS, _build, _traces, corpus  # noqa: E402  (benchmarks/scale.py)


def _questions() -> list[str]:
    return [json.loads(line)["question"] for line in QUESTIONS.read_text("utf-8").splitlines()
            if line.strip()][:N_QUESTIONS][:5]


def _child(step: str, corpus_file: Path, db: Path, kill_after: str, traces_file: Path) -> dict[str, Any]:
    """One step in this process: 'clean' or 'resume' (a build, then its traces), 'killed' (a build
    that SIGKILLs itself after the first statement containing ``kill_after``)."""
    if step == "killed":
        from kgviz.graph.store import GraphStore

        original = GraphStore._statement

        def hooked(self: Any, cypher: str, params: Any, *, write: bool, fetch: str) -> Any:
            out = original(self, cypher, params, write=write, fetch=fetch)
            if write and kill_after in cypher:
                print(json.dumps({"killed_after": cypher[:80]}), flush=True)
                os.kill(os.getpid(), 9)
            return out

        GraphStore._statement = hooked  # type: ignore[method-assign]
    t0 = time.perf_counter()
    ctx, report, build_s = _build(corpus_file, db)
    row = {"build_s": round(build_s, 1), "stage_s": {k: round(v, 2) for k, v in report.seconds_by_stage.items()},
           "plan": report.ket.get("plan", "(not reported by this kgviz)"),
           "keyword_view": report.ket.get("keyword_view", "(not made by this kgviz's build)"),
           "ket_plan_seconds": report.ket.get("plan_seconds"), "view_seconds": report.ket.get("view_seconds"),
           "warnings": [w for w in report.warnings if "earlier build" in w or "repaired" in w]}
    traces = _traces(ctx, _questions())
    traces_file.write_text(json.dumps(traces, sort_keys=True), "utf-8")
    ctx.store.close()
    row["traces_s"] = round(time.perf_counter() - t0 - build_s, 1)
    return row


def _run(checkout: Path, step: str, corpus_file: Path, db: Path, kill_after: str, traces_file: Path) -> dict[str, Any]:
    load = os.getloadavg()[0]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", step, "--corpus", str(corpus_file), "--db", str(db),
           "--kill-after", kill_after, "--traces", str(traces_file)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(checkout)})
    row: dict[str, Any] = {"checkout": str(checkout), "step": step, "wall_s": round(time.perf_counter() - t0, 1),
                           "load": [round(load, 2), round(os.getloadavg()[0], 2)]}
    lines = done.stdout.strip().splitlines()
    if step == "killed":
        row["returncode"] = done.returncode
        row["killed_after"] = json.loads(lines[-1])["killed_after"] if lines else None
        if done.returncode != -9:
            row["error"] = (done.stderr.strip().splitlines() or ["not killed"])[-1]
        return row
    if done.returncode:
        row["error"] = done.stderr.strip().splitlines()[-3:]
        return row
    row.update(json.loads(lines[-1]))
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--passages", type=int, default=2000)
    p.add_argument("--checkouts", default=str(ROOT), help="comma-separated kgviz checkouts, measured alternately")
    p.add_argument("--kill-after", default="COPY SIMILAR_DOC",
                   help="the build is killed after its first statement containing this text")
    p.add_argument("--work", help="a new folder for the corpus, workspaces and traces (required)")
    p.add_argument("--keep-killed", action="store_true", help="keep the killed-then-resumed workspaces")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--corpus", help=argparse.SUPPRESS)
    p.add_argument("--db", help=argparse.SUPPRESS)
    p.add_argument("--traces", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, Path(args.corpus), Path(args.db), args.kill_after, Path(args.traces))))
        return 0
    if not args.work:
        p.error("--work is required")
    work = Path(args.work)
    work.mkdir(parents=True)
    corpus_file = work / "corpus.jsonl"
    corpus_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in corpus(args.passages)), "utf-8")
    checkouts = [Path(c).resolve() for c in args.checkouts.split(",")]
    runs: list[dict[str, Any]] = []
    # the clean builds first, kept (to time a first question on them later); then each checkout's
    # killed build and its resume, the resumed workspace removed after its traces (10k passages:
    # ~2.5 GB a workspace, so at most three on disk at once)
    steps = [("clean", i) for i in range(len(checkouts))] + \
        [(step, i) for i in range(len(checkouts)) for step in ("killed", "resume")]
    for step, i in steps:
        db = work / f"{i}_{'clean' if step == 'clean' else 'killed'}"
        runs.append(_run(checkouts[i], step, corpus_file, db, args.kill_after, work / f"{i}_{step}_traces.json"))
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
        if step == "resume" and not args.keep_killed:
            shutil.rmtree(db, ignore_errors=True)
    traces = {f.name: json.loads(f.read_text("utf-8")) for f in sorted(work.glob("*_traces.json"))}
    same = {}
    for i, checkout in enumerate(checkouts):
        clean, resumed = traces.get(f"{i}_clean_traces.json"), traces.get(f"{i}_resume_traces.json")
        same[str(checkout)] = {"resumed_equals_clean": clean is not None and clean == resumed,
                               "traces": len(clean or {})}
    first_clean = traces.get("0_clean_traces.json")
    print(json.dumps({"passages": args.passages, "kill_after": args.kill_after, "runs": runs, "traces": same,
                      "clean_traces_equal_across_checkouts": all(
                          traces.get(f"{i}_clean_traces.json") == first_clean for i in range(len(checkouts)))},
                     indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
