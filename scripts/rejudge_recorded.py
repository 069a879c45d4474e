#!/usr/bin/env python3
"""Re-derive the judge fields of sample_recorded/runs.jsonl after a change to how kgviz *reads*
judge replies or chooses the judge's evidence (issue 23: notes are not evidence, prompt echoes are
unparsed), by replaying the SAME recorded replies on this code: no reply is asked or recorded.

    python scripts/rejudge_recorded.py [--dry-run]
    python scripts/record_real_model.py prune      # then: README table and build.json figures

Only a run's judge labels (``judge``), ``parse_failures``, ``judge_disagreements`` and, when the
number of calls or tokens changed (a judge call no longer made), ``usage`` are rewritten. A run
whose answer, error, LLM steps, Acc or Coverage would differ stops the script (that is a
recording gone stale: re-record it), as does any request the recording lacks.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from kgviz.evaluate.qa import QAItem
from kgviz.providers.recorded import RecordedLLM, load_recording
from kgviz.replay import RUNS_FILE, SAMPLE_RECORDING, build_sample, open_session, run_and_judge, run_row

JUDGE_FIELDS = ("judge", "parse_failures", "judge_disagreements")
FIXED_FIELDS = ("answer", "error", "llm_steps", "acc", "coverage")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=SAMPLE_RECORDING)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    path = args.out / RUNS_FILE
    rows = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    llm = RecordedLLM(args.out, load_recording(args.out))
    db = Path(tempfile.mkdtemp(prefix="kgviz-rejudge-"))
    session = open_session(db / "db", llm)
    out, changed = [], []
    try:
        build_sample(session)
        ctx = session.method_context()
        for r in rows:
            item = QAItem(r["id"], r["question"], tuple(r["golds"]))
            new = run_row(item, run_and_judge(r["method"], item, ctx))
            stale = [k for k in FIXED_FIELDS if new[k] != r[k]]
            if stale:
                raise SystemExit(f"{r['id']} {r['method']}: {', '.join(stale)} changed: re-record this run")
            upd = {**r, **{k: new[k] for k in JUDGE_FIELDS}}
            if any(new["usage"][k] != r["usage"][k] for k in ("calls", "input_tokens", "output_tokens")):
                upd["usage"] = new["usage"]
            if upd != r:
                changed.append(f"{r['id']} {r['method']}: {r['judge']['labels']} -> {new['judge']['labels']}")
            out.append(upd)
    finally:
        session.close()
        shutil.rmtree(db, ignore_errors=True)
    if llm.misses:
        raise SystemExit(f"{llm.misses} requests are not in the recording: nothing written")
    print("\n".join(changed) + f"\n{len(changed)} of {len(rows)} runs' judge fields changed", file=sys.stderr)
    if changed and not args.dry_run:
        tmp = path.with_name(f".{path.name}.rejudge-tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in out),
                       encoding="utf-8")
        tmp.replace(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
