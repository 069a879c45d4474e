"""Issue 23's judge figures on the recorded sample (a real small model's runs and verdicts): on the
sample's two-hop questions (``hops`` 2 in sample_data/questions.jsonl), how many wrong answers (EM
0, F1 < 0.5) the LLM judge called supported (kgviz.evaluate.judge_check: every claim supported;
failed, abstaining and unparsed answers left out), and how many verdicts cite a method's own note.
Also the count the earlier sessions quoted ("15/25 -> 14/26"): wrong = no gold answer in the reply
(Acc 0), over every judged answer that did not fail or abstain, unparsed ones included.

    python benchmarks/judge_recorded.py [--before main] [--recording sample_recorded]

"before": the runs.jsonl of a git ref (default ``main``); "after": the checkout's. Both are read
as recorded (answer, golds, judge labels), printed side by side. The note check replays the
checkout's recording on this code (no model, server or network): a verdict cites a note when a
claim's evidence names a context item of kind "note" (kg-infused's ``note:kg-infused``).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.evaluate.judge_check import JudgedRun, judge_check  # noqa: E402
from kgviz.evaluate.qa import QAItem, load_questions  # noqa: E402
from kgviz.providers.recorded import RecordedLLM  # noqa: E402
from kgviz.replay import RUNS_FILE, SAMPLE_QUESTIONS, SAMPLE_RECORDING, build_sample, open_session, run_and_judge  # noqa: E402
from kgviz.verify.metrics import score  # noqa: E402


def two_hop_ids() -> set[str]:
    rows = [json.loads(ln) for ln in SAMPLE_QUESTIONS.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return {r["id"] for r in rows if r.get("hops") == 2}


def wrong_supported(rows: list[dict[str, Any]], ids: set[str]) -> dict[str, Any]:
    judged = []
    for r in rows:
        if r["id"] not in ids:
            continue
        m = score("" if r["error"] else r["answer"], "", list(r["golds"])).to_dict()
        judged.append((r, JudgedRun(em=float(m["em"]), f1=float(m["f1"]), labels=tuple(r["judge"]["labels"]),
                                    abstained=bool(r["judge"]["abstained"]), failed=bool(r["error"]))))
    check = judge_check(j for _, j in judged)
    by_acc = [(r, j) for r, j in judged if not r["acc"] and j.labels and not j.failed and not j.abstained]
    return {"runs": len(judged),
            "acc0_supported": sum(all(lab == "supported" for lab in j.labels) for _, j in by_acc),
            "acc0_judged": len(by_acc), "wrong_supported": check.wrong.supported, "wrong": check.wrong.n,
            "right_supported": check.right.supported, "right": check.right.n, "unparsed_left_out": check.unparsed,
            "wrong_supported_runs": [f"{r['id']} {r['method']}: {r['answer'][:40]!r}" for r, j in judged
                                     if j.group == "wrong" and j.supported]}


def runs_at(ref: str) -> list[dict[str, Any]]:
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:sample_recorded/{RUNS_FILE}"], check=True,
                          capture_output=True, text=True).stdout
    return [json.loads(ln) for ln in text.splitlines() if ln.strip()]


def note_citations(folder: Path, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Replay every recorded run and count the verdicts whose claims cite a note."""
    llm = RecordedLLM(folder)
    db = Path(tempfile.mkdtemp(prefix="kgviz-judge-rec-"))
    session = open_session(db / "db", llm)
    citing, verdicts = [], 0
    try:
        build_sample(session)
        ctx = session.method_context()
        for r in rows:
            res = run_and_judge(r["method"], QAItem(r["id"], r["question"], tuple(r["golds"])), ctx)
            notes = {i.id for i in res.run.context.items if i.kind == "note"}
            verdicts += bool(res.verdict.claims)
            if any(e in notes for c in res.verdict.claims for e in c.evidence):
                citing.append(f"{r['id']} {r['method']}")
    finally:
        session.close()
        shutil.rmtree(db, ignore_errors=True)
    return {"verdicts": verdicts, "citing_a_note": len(citing), "runs": citing, "replay_misses": llm.misses}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="main", help="git ref whose sample_recorded/runs.jsonl is 'before'")
    ap.add_argument("--recording", type=Path, default=SAMPLE_RECORDING)
    args = ap.parse_args(argv)
    ids = two_hop_ids()
    after_rows = [json.loads(ln) for ln in (args.recording / RUNS_FILE).read_text(encoding="utf-8").splitlines()
                  if ln.strip()]
    out = {"two_hop_questions": sorted(ids),
           "questions_file": str(SAMPLE_QUESTIONS.relative_to(ROOT)),
           "n_questions": len(load_questions(SAMPLE_QUESTIONS)),
           "before": {"ref": args.before, **wrong_supported(runs_at(args.before), ids)},
           "after": {"recording": str(args.recording), **wrong_supported(after_rows, ids),
                     "notes": note_citations(args.recording, after_rows)}}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
