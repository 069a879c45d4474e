#!/usr/bin/env python3
"""Record a real model's replies for the sample (build + every method, answer and judge on every
sample question) into ``sample_recorded/``, and report what a replay of them gives.

  # a local model (see ../shared/tools/local_llm.sh), then:
  export OPENAI_API_KEY=local KGVIZ_TIMEOUT_S=600
  LLM=openai-compatible:qwen2.5-coder-1.5b-instruct@http://127.0.0.1:8801/v1
  python scripts/record_real_model.py extract --llm $LLM --server "llama-server -np 1 -t 1"
  python scripts/record_real_model.py describe --llm $LLM --server "..."   # KET Alg. 1 line 3 descriptions
  python scripts/record_real_model.py methods --llm $LLM --server "..." [--ids s01,s02] [--methods kg-rag,...]
      [--part a]    # side-by-side processes on different servers write methods.<model>.<part>.jsonl
  python scripts/record_real_model.py report        # replay only (no server): figures as JSON
  python scripts/record_real_model.py prune [--dry-run]   # drop runs that no longer replay exactly

``extract`` writes ``extraction.<model>.jsonl`` (replies) and ``build.json`` (figures: rejected
chunks, malformed lines and their share, tokens and seconds per chunk). ``describe`` records the
KET skeleton's descriptions (Alg. 1 line 3) of every sample document into
``describe.<model>[.<part>].jsonl`` and their figures into ``describe.json``. ``methods`` rebuilds the
graph from the recorded extraction and descriptions (it refuses to ask either live), then runs each question
with each method, question by question, appending replies to ``methods.<model>.jsonl`` and one
line per run to ``runs.jsonl``. Both resume: recorded replies are replayed, recorded runs skipped.
``prune`` replays every run of ``runs.jsonl`` on the current code with the recorded replies only
(no server), keeps the runs that replay exactly (the checks of tests/test_recorded_sample.py
plus the recorded usage), drops the others with the reason, and rewrites ``runs.jsonl``, the
run figures in ``build.json`` and the README's run count and table. ``report`` also lists the
sample (question, method) pairs that have no recorded run.

Each reply file starts with a header (model, server, date, kgviz commit); ``build.json`` and
``runs.jsonl`` name the files they came from. Replies are in the LLM cache's row format
(kgviz.providers.recorded).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kgviz.config import Settings
from kgviz.errors import KgvizError, RecordingMissError
from kgviz.evaluate.qa import load_questions
from kgviz.providers.factory import make_llm
from kgviz.providers.recorded import RecordedLLM, RecordingLLM
from kgviz.replay import (
    BUILD_FILE,
    DESCRIBE_FILE,
    RECORD_METHODS,
    ROOT,
    RUNS_FILE,
    SAMPLE_EMBEDDER,
    SAMPLE_QUESTIONS,
    SAMPLE_RECORDING,
    build_sample,
    extraction_figures,
    extraction_rows,
    missing_runs,
    open_session,
    question_difference,
    replay_difference,
    run_and_judge,
    run_row,
    runs_summary,
    runs_table,
)


def kgviz_commit() -> str:
    """HEAD, with "+dirty" when source files differ from it (the recording folder excepted)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "HEAD")
    dirty = [ln for ln in git("status", "--porcelain", "--untracked-files=no").splitlines()
             if "sample_recorded" not in ln]
    return head + ("+dirty" if dirty else "")


def header(phase: str, server: str) -> dict[str, object]:
    return {"phase": phase, "recorded_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "kgviz_commit": kgviz_commit(), "server": server, "embedder": SAMPLE_EMBEDDER,
            "note": "replies of a real model, recorded by scripts/record_real_model.py"}


def live(spec: str) -> RecordingLLM | None:
    llm = make_llm(spec, Settings.from_env(), use_cache=False)  # the recording is the cache
    if llm.is_offline:
        raise SystemExit("give a real model with --llm (the offline mode has nothing to record)")
    return llm  # type: ignore[return-value]


def alias(model: str) -> str:
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in model)


def progress(ev) -> None:  # noqa: ANN001
    if ev.stage == "extract":
        u = ev.usage_so_far
        print(f"[extract] {ev.done}/{ev.total} {ev.message} tokens={u.input_tokens}+{u.output_tokens}",
              file=sys.stderr, flush=True)


def cmd_extract(args: argparse.Namespace) -> int:
    inner = live(args.llm)
    name = f"extraction.{alias(inner.model)}.jsonl"
    rec = RecordingLLM(inner, args.out, name, header("extraction", args.server))
    db = Path(tempfile.mkdtemp(prefix="kgviz-record-"))
    session = open_session(db / "db", rec)
    try:
        t0 = time.perf_counter()
        report = build_sample(session, workers=args.workers, progress=progress)
        wall = time.perf_counter() - t0
        figures = extraction_figures(report, extraction_rows(session.store))
    finally:
        session.close()
        shutil.rmtree(db, ignore_errors=True)
    out = {"file": name, "model": inner.model, "mode": report.mode, "workers": args.workers,
           "server": args.server, "counts": report.counts, **figures,
           "replies_recorded_now": rec.recorded, "replies_replayed": rec.replayed,
           "extract_stage_seconds": report.seconds_by_stage.get("extract")}
    if rec.replayed == 0:  # wall time means something only when every chunk went to the model
        out["wall_seconds_per_chunk"] = round(report.seconds_by_stage.get("extract", 0) / max(1, figures["chunks"]), 2)
        out["build_seconds"] = round(wall, 1)
    (Path(args.out) / BUILD_FILE).write_text(json.dumps(out, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2, sort_keys=True))
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    """The skeleton descriptions (KET Alg. 1 line 3) of the graph the recorded extraction builds:
    ``describe.<model>[.<part>].jsonl``. The extraction must replay (checked first, with no model,
    on the build without descriptions)."""
    db = Path(tempfile.mkdtemp(prefix="kgviz-record-"))
    try:
        check = open_session(db / "check", RecordedLLM(args.out))
        try:
            build_sample(check, described=False)
        except RecordingMissError as exc:
            raise SystemExit(f"the recorded extraction does not replay ({exc.user_message()}): run `extract` first")
        finally:
            check.close()
        inner = live(args.llm)
        part = f".{alias(args.part)}" if args.part else ""
        name = f"describe.{alias(inner.model)}{part}.jsonl"
        rec = RecordingLLM(inner, args.out, name, header("descriptions", args.server))
        session = open_session(db / "db", rec)
        try:
            t0 = time.perf_counter()
            report = build_sample(session, workers=args.workers,
                                  progress=lambda ev: print(f"[{ev.stage}] {ev.message}", file=sys.stderr, flush=True)
                                  if ev.stage == "ket" else None)
            wall = time.perf_counter() - t0
        finally:
            session.close()
    finally:
        shutil.rmtree(db, ignore_errors=True)
    desc = report.ket.get("descriptions", {})
    out = {"file": name, "model": inner.model, "server": args.server, "replies_recorded_now": rec.recorded,
           "replies_replayed": rec.replayed, "wall_seconds": round(wall, 1), "descriptions": desc,
           "counts": {k: report.counts.get(k) for k in ("Entity", "Triple", "Description")}}
    (Path(args.out) / DESCRIBE_FILE).write_text(json.dumps(out, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2, sort_keys=True))
    return 0


def done_runs(path: Path) -> set[tuple[str, str]]:
    if not path.exists():
        return set()
    return {(r["id"], r["method"]) for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if r}


def cmd_methods(args: argparse.Namespace) -> int:
    inner = live(args.llm)
    part = f".{alias(args.part)}" if args.part else ""
    name = f"methods.{alias(inner.model)}{part}.jsonl"
    rec = RecordingLLM(inner, args.out, name, header("methods", args.server))
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    items = load_questions(args.questions)
    if args.ids:
        wanted = set(args.ids.split(","))
        items = [q for q in items if q.id in wanted]
    runs_path = Path(args.out) / RUNS_FILE
    db = Path(tempfile.mkdtemp(prefix="kgviz-record-"))
    session = open_session(db / "db", rec)
    try:
        build_sample(session)
        if rec.recorded:
            raise SystemExit(f"{rec.recorded} extraction or description replies were not in the recording: run "
                             "`extract` and `describe` first (the graph must be the one the recording built)")
        ctx = session.method_context()
        for item in items:
            for m in methods:
                if (item.id, m) in done_runs(runs_path):
                    continue
                t0 = time.perf_counter()
                before = rec.recorded
                result = run_and_judge(m, item, ctx)
                row = {**run_row(item, result), "file": name, "wall_s": round(time.perf_counter() - t0, 1),
                       "replies_recorded": rec.recorded - before}
                with runs_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
                print(f"[{item.id} {m}] {row['wall_s']}s acc={row['acc']} failures={len(row['parse_failures'])} "
                      f"error={row['error'][:80]!r} answer={row['answer'][:80]!r}", file=sys.stderr, flush=True)
    finally:
        session.close()
        shutil.rmtree(db, ignore_errors=True)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Replay the whole recording (no server) and print the figures: the test suite does the same."""
    from kgviz.evaluate.qa import QAItem

    llm = RecordedLLM(args.out)
    db = Path(tempfile.mkdtemp(prefix="kgviz-replay-"))
    session = open_session(db / "db", llm)
    try:
        report = build_sample(session)
        build = extraction_figures(report, extraction_rows(session.store))
        runs_path = Path(args.out) / RUNS_FILE
        rows = [json.loads(ln) for ln in runs_path.read_text(encoding="utf-8").splitlines()] if runs_path.exists() else []
        by_method: dict[str, dict[str, object]] = {}
        ctx = session.method_context()
        for r in rows:
            res = run_and_judge(r["method"], QAItem(r["id"], r["question"], tuple(r["golds"])), ctx)
            m = by_method.setdefault(r["method"], {"questions": 0, "correct": 0, "parse_failures": 0,
                                                   "hallucinated": 0, "same_answer": 0, "wrong": []})
            m["questions"] += 1  # type: ignore[operator]
            m["correct"] += int(bool(res.metrics and res.metrics.acc))  # type: ignore[operator]
            m["parse_failures"] += len(run_row(QAItem(r["id"], r["question"], tuple(r["golds"])), res)["parse_failures"])  # type: ignore[operator]
            m["hallucinated"] += int(res.verdict.hallucinated)  # type: ignore[operator]
            m["same_answer"] += int(res.run.answer == r["answer"])  # type: ignore[operator]
            if not (res.metrics and res.metrics.acc):
                m["wrong"].append(f"{r['id']}: {res.run.error or res.run.answer}"[:160])  # type: ignore[union-attr]
    finally:
        session.close()
        shutil.rmtree(db, ignore_errors=True)
    ids = [q.id for q in load_questions(args.questions)]
    out = {"recording": str(args.out), "models": llm.model, "build": {"counts": report.counts, **build},
           "methods": by_method, "replay_hits": llm.hits, "replay_misses": llm.misses,
           "missing_runs": missing_runs(rows, ids)}
    print(json.dumps(out, indent=2, sort_keys=True))
    return 0


def read_runs(folder: Path) -> list[dict[str, object]]:
    path = Path(folder) / RUNS_FILE
    if not path.exists():
        return []
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def replay_pass(folder: Path, rows: list[dict], items: dict) -> tuple[list[tuple[dict, str]], dict]:  # type: ignore[type-arg]
    """One replay of ``rows`` in order through one RecordedLLM (as the tests replay them):
    (row, why it must go) for every row that does not replay exactly, and what the replayed build
    gives: its graph counts under "counts" and its extraction figures (malformed lines, rejected
    chunks), which change when the build's own code does (identical facts merged, a parser that
    reads more of the same replies)."""
    llm = RecordedLLM(folder)
    db = Path(tempfile.mkdtemp(prefix="kgviz-prune-"))
    session = open_session(db / "db", llm)
    stale: list[tuple[dict, str]] = []  # type: ignore[type-arg]
    try:
        try:
            report = build_sample(session)
            built = {"counts": dict(report.counts), **extraction_figures(report, extraction_rows(session.store))}
        except RecordingMissError as exc:
            raise SystemExit(f"the recorded extraction no longer replays ({exc.user_message()}): nothing pruned; "
                             "re-record with `extract`, then `methods`")
        if llm.misses:
            raise SystemExit(f"the recorded extraction no longer replays ({llm.misses} chunk replies missing): "
                             "nothing pruned; re-record with `extract`, then `methods`")
        ctx = session.method_context()
        for row in rows:
            item = items.get(row["id"])
            why = question_difference(row, item)
            if not why:
                before = llm.misses
                try:
                    result = run_and_judge(row["method"], item, ctx)
                except RecordingMissError as exc:  # the judge runs outside the method's own error handling
                    why = f"the judge's prompt is not in the recording ({exc.user_message()[:80]}…)"
                else:
                    missed = llm.misses - before
                    why = (f"the replay asked for {missed} repl{'y' if missed == 1 else 'ies'} the recording lacks "
                           "(a prompt or retrieval changed)" if missed else replay_difference(row, result, llm.model))
            if why:
                stale.append((row, why))
    finally:
        session.close()
        shutil.rmtree(db, ignore_errors=True)
    return stale, built


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.prune-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # a reader sees the old file or the new one, never half of one


_RUN_COUNT = re.compile(r"\b\d+ runs over \d+ questions\b")


def readme_with_runs(text: str, rows: list[dict], items: list) -> str:  # type: ignore[type-arg]
    """The README with its run count and its table of runs following ``rows``."""
    summary = runs_summary(rows)
    text = _RUN_COUNT.sub(f"{summary['runs']} runs over {summary['questions']} questions", text)
    start = text.find("| question (gold) |")
    if start < 0:
        return text
    end = text.find("\n\n", start)
    end = len(text) if end < 0 else end
    return text[:start] + runs_table(rows, items) + text[end:]


def cmd_prune(args: argparse.Namespace) -> int:
    """Keep the runs that replay exactly on the current code; drop (and name) the others."""
    folder = Path(args.out)
    rows = read_runs(folder)
    questions = load_questions(args.questions)
    items = {q.id: q for q in questions}
    kept, dropped = list(rows), []
    while True:  # a dropped run may have used a reply a later run shares: replay the rest again
        stale, built = replay_pass(folder, kept, items)
        if not stale:
            break
        gone = {id(r) for r, _ in stale}
        dropped += stale
        kept = [r for r in kept if id(r) not in gone]
    for row, why in dropped:
        print(f"drop {row['id']} {row['method']}: {why}", file=sys.stderr)
    summary = runs_summary(kept)
    build_path = folder / BUILD_FILE
    build = json.loads(build_path.read_text(encoding="utf-8")) if build_path.exists() else None
    # the replayed build's figures that the current code decides (the model's tokens and seconds stay)
    refreshed = {k: built[k] for k in ("counts", "rejected_chunks", "rejected", "malformed_lines", "reply_lines",
                                        "malformed_share")}
    counts = refreshed["counts"]
    counts_changed = build is not None and any(build.get(k) != v for k, v in refreshed.items())
    if counts_changed:
        print(f"build figures now {refreshed} (build.json had "
              f"{ {k: build.get(k) for k in refreshed} })", file=sys.stderr)
    readme_path = folder / "README.md"
    old_readme = readme_path.read_text(encoding="utf-8") if readme_path.exists() else None
    new_readme = readme_with_runs(old_readme, kept, questions) if old_readme is not None else None
    # runs recorded since the last prune change the summary and the README's table too
    stale_summary = build is not None and build.get("recorded_runs") != summary
    changed = bool(dropped) or counts_changed or stale_summary or new_readme != old_readme
    if changed and not args.dry_run:
        # every new file is written in full before any is replaced
        new_runs = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in kept)
        new_build = None
        if build is not None:
            new_build = json.dumps({**build, **refreshed, "recorded_runs": summary}, indent=2,
                                   sort_keys=True) + "\n"
        write_atomically(folder / RUNS_FILE, new_runs)
        if new_build is not None:
            write_atomically(build_path, new_build)
        if new_readme is not None:
            write_atomically(readme_path, new_readme)
    print(json.dumps({"recording": str(folder), "kept": len(kept), "dropped": len(dropped),
                      "dropped_runs": [f"{r['id']} {r['method']}: {why}" for r, why in dropped],
                      "written": changed and not args.dry_run, "counts_changed": counts_changed, "recorded_runs": summary,
                      "missing_runs": missing_runs(kept, [q.id for q in questions])}, indent=2, sort_keys=True))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, func in (("extract", cmd_extract), ("describe", cmd_describe), ("methods", cmd_methods)):
        s = sub.add_parser(name)
        s.add_argument("--llm", required=True, help="the live model, e.g. openai-compatible:<model>@<url>")
        s.add_argument("--server", default="", help="how the server ran (slots, threads), for the header")
        s.add_argument("--out", type=Path, default=SAMPLE_RECORDING)
        s.set_defaults(func=func)
        if name in ("extract", "describe"):
            s.add_argument("--workers", type=int, default=1, help="concurrent requests")
            if name == "describe":
                s.add_argument("--part", default="", help="a file name part: replies of a later session in their "
                               "own file, under their own header")
        else:
            s.add_argument("--methods", default=",".join(RECORD_METHODS))
            s.add_argument("--questions", type=Path, default=SAMPLE_QUESTIONS)
            s.add_argument("--ids", default="", help="only these question ids (comma-separated)")
            s.add_argument("--part", default="", help="a file name part, for recording processes run side by "
                           "side against different servers (each file keeps one server's identity)")
    r = sub.add_parser("report")
    r.add_argument("--out", type=Path, default=SAMPLE_RECORDING)
    r.add_argument("--questions", type=Path, default=SAMPLE_QUESTIONS)
    r.set_defaults(func=cmd_report)
    pr = sub.add_parser("prune", help="drop recorded runs that no longer replay exactly (no server)")
    pr.add_argument("--out", type=Path, default=SAMPLE_RECORDING)
    pr.add_argument("--questions", type=Path, default=SAMPLE_QUESTIONS)
    pr.add_argument("--dry-run", action="store_true", help="only print what would be dropped")
    pr.set_defaults(func=cmd_prune)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except KgvizError as exc:
        print(f"error: {exc.user_message()}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
