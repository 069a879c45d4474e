"""The offline answerer and judge alone, on gold contexts: EM/F1, wrong-type answers, and how often
the offline judge calls a wrong answer supported. Prints JSON.

  python3 benchmarks/offline_answerer.py                          # this checkout
  python3 benchmarks/offline_answerer.py --base /tmp/base_checkout  # that code vs this one, one run
  python3 benchmarks/offline_answerer.py --sets hotpotqa --limit 50

Context = each question's gold supporting passages (corpus rows by ``supporting_ids``), so the
retrieval cannot hide or excuse what the answerer does. The answerer is kgviz's offline "answer"
task heuristic (``kgviz.offline.answer.extractive_answer``, hashing embedder); the judge is the
offline claim check (``kgviz.offline.judge.check_claim``) on the short-answer claim the verify step
builds (``kgviz.claims.short_claim``). Each checkout's code runs in its own process
(``--worker``, PYTHONPATH = that checkout), so "before" and "after" are measured by one scorer.

Figures per checkout and set:
- em, f1 (SQuAD normalisation), abstained (share answering "insufficient information");
- wrong_type: share of non-abstaining answers of the wrong type for the question, by this
  checkout's classifier (``kgviz.offline.answer_types.type_mismatch`` on the gold passages). It is
  the answerer's own yardstick, so ``wrong_type_surface`` is given too: an independent coarse check
  kept in this file (a date question answered without a year/month, a number question without a
  number, a yes/no question without yes/no, a name question answered by a date/number/yes-no or a
  whole sentence of more than 8 words);
- gold_flagged_wrong_type: share of gold answers the classifier calls of the wrong type (its false
  alarms); judge_supported_correct / judge_supported_gold: share of the answerer's correct answers /
  of the gold answers themselves that the judge labels supported (what the type check must not cost);
- judge_supported_wrong: share of the answerer's wrong answers (not abstaining, gold not contained)
  that the judge labels supported (with --base, judge_supported_wrong_by_this_judge: the base
  answerer's wrong answers judged by this checkout's judge, the judge's change alone);
  judge_supported_decoy: the same on a fixed probe, one
  wrong-type decoy per question cut from its gold passages by this file's rules (a name for a
  number/date question, a place-cued name for a who/which question, a year otherwise);
  judge_supported_decoy_typed_wrong: the same on the decoys this checkout's classifier calls of the
  wrong type for a question it types (the decoys of "what kind of ..." questions are not wrong).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SETS = ("hotpotqa", "2wikimultihopqa")


def _default_data() -> Path:
    for cand in (ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data"):
        if cand.exists():
            return cand
    return ROOT.parent / "shared" / "data"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- rules local to this file, identical for every checkout measured ------------------------------
_NUMERIC_Q = re.compile(r"^\W*(?:until |since )?when\b|\b(?:what year|which year|how many|how much|how old|how long|how tall|"
                        r"date of (?:birth|death)|birthday)\b", re.I)
_DATE_Q = re.compile(r"^\W*(?:until |since )?when\b|\b(?:what year|which year|what date|date of (?:birth|death)|birthday)\b",
                     re.I)
_PLACE_Q = re.compile(r"\bwhere\b|\bplace of\b|\b(?:what|which) (?:\w+ ){0,2}?(?:country|city|town|county|state|village|"
                      r"region|district|province|island)\b", re.I)
_COUNT_Q = re.compile(r"\bhow (?:many|much|old|long|tall|far|high|big|large)\b", re.I)
_YESNO_Q = re.compile(r"^\s*(?:is|are|was|were|do|does|did|can|could|has|have|had)\b", re.I)
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+")
_PLACE_CUED = re.compile(r"\b(?:in|at|from)\s+((?:[A-Z][a-z]+)(?:\s+[A-Z][a-z]+)*)")
_YEAR = re.compile(r"\b1[0-9]{3}\b|\b20[0-9]{2}\b")
_MONTH = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December)\b")
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
                     r"forty|fifty|hundred|thousand|million|billion|dozen)\b", re.I)


def _decoy(question: str, golds: list[str], passages: list[str]) -> str:
    """One wrong-type answer for the probe, from the gold passages (rules in the module docstring)."""
    text = "\n".join(passages)
    low_golds = [g.lower() for g in golds]

    def ok(c: str) -> bool:
        return bool(c) and c.lower() not in question.lower() and not any(c.lower() in g or g in c.lower() for g in low_golds)

    if _NUMERIC_Q.search(question):
        return next((m.group() for m in _NAME.finditer(text) if ok(m.group())), "")
    if not _PLACE_Q.search(question) and not _YESNO_Q.match(question):
        cued = next((m.group(1) for m in _PLACE_CUED.finditer(text) if ok(m.group(1))), "")
        if cued:
            return cued
    return next((m.group() for m in _YEAR.finditer(text) if ok(m.group())), "")


def surface_wrong_type(question: str, answer: str) -> bool:
    a = answer.strip()
    if re.search(r",[^,]* or [^,]*\?\s*$", question):
        return len(a.split()) > 12  # a choice: either option is a name
    if _YESNO_Q.match(question) and " or " not in question:
        return a.lower().strip(".") not in ("yes", "no")
    if _DATE_Q.search(question) and not _COUNT_Q.search(question):
        return not (_YEAR.search(a) or _MONTH.search(a))
    if _COUNT_Q.search(question):
        return not _NUMBER.search(a)
    bare_value = bool(re.fullmatch(r"[\d\s,.\-–]+", a)) or a.lower().strip(".") in ("yes", "no")
    return bare_value or len(a.split()) > 8


# --- worker: runs the checkout's own code --------------------------------------------------------
def work(data: Path, sets: list[str], limit: int | None) -> list[dict[str, Any]]:
    from kgviz.offline.answer import extractive_answer
    from kgviz.offline.judge import check_claim
    from kgviz.prompts.answer import INSUFFICIENT
    from kgviz.providers.embedders import HashingEmbedder
    try:
        from kgviz.claims import short_claim
    except ImportError:  # a --base checkout from before the claim model moved out of kgviz.verify
        from kgviz.verify.claims import short_claim

    embedder = HashingEmbedder()
    out: list[dict[str, Any]] = []
    for name in sets:
        corpus = {r["id"]: r for r in _jsonl(data / name / "corpus.jsonl")}
        for q in _jsonl(data / name / "questions.jsonl")[:limit]:
            rows = [corpus[i] for i in q["supporting_ids"] if i in corpus]
            passages = [f"{r['title']}: {r['text']}" if r.get("title") else r["text"] for r in rows]
            items = [(r["id"], p) for r, p in zip(rows, passages)]
            pred, how = extractive_answer(q["question"], passages, embedder)

            def judge(answer: str) -> dict[str, str]:
                if not answer or answer == INSUFFICIENT:
                    return {}
                claim = short_claim(q["question"], answer)
                res = check_claim(claim.text, items, embedder, focus=claim.focus, question=q["question"])
                return {"label": res.label, "reason": res.reason}

            decoy = _decoy(q["question"], list(q["answers"]), passages)
            out.append({"set": name, "id": q["id"], "question": q["question"], "answers": q["answers"],
                        "passages": passages, "prediction": pred, "how": how, "abstained": pred == INSUFFICIENT,
                        "judge": judge(pred), "decoy": decoy, "decoy_judge": judge(decoy),
                        "gold_judge": judge(q["answers"][0])})
    return out


# --- scoring: this checkout's metrics and classifier ---------------------------------------------
def score(records: list[dict[str, Any]]) -> dict[str, Any]:
    from kgviz.offline.answer_types import type_mismatch
    from kgviz.offline.qtype import answer_type
    from kgviz.verify.metrics import accuracy, exact_match, f1_score

    by_set: dict[str, Any] = {}
    for name in dict.fromkeys(r["set"] for r in records):
        rs = [r for r in records if r["set"] == name]
        answered = [r for r in rs if not r["abstained"]]
        wrong = [r for r in answered if not accuracy(r["prediction"], r["answers"])]
        decoys = [r for r in rs if r["decoy_judge"]]
        # decoys of questions whose type this checkout's classifier pins down (not "entity")
        typed_decoys = [r for r in decoys if answer_type(r["question"]).kind != "entity"
                        and type_mismatch(answer_type(r["question"]), r["decoy"], r["passages"])]
        typed = [r for r in answered if type_mismatch(answer_type(r["question"]), r["prediction"], r["passages"])]

        def pct(k: int, n: int) -> float:
            return round(100.0 * k / n, 1) if n else 0.0

        by_set[name] = {
            "questions": len(rs),
            "em": pct(sum(exact_match(r["prediction"], r["answers"]) for r in rs), len(rs)),
            "f1": round(100.0 * sum(f1_score(r["prediction"], r["answers"]) for r in rs) / max(1, len(rs)), 1),
            "abstained": pct(len(rs) - len(answered), len(rs)),
            "answered": len(answered),
            "wrong_type": pct(len(typed), len(answered)),
            "wrong_type_surface": pct(sum(surface_wrong_type(r["question"], r["prediction"]) for r in answered),
                                      len(answered)),
            "gold_flagged_wrong_type": pct(sum(bool(type_mismatch(answer_type(r["question"]), r["answers"][0], r["passages"]))
                                               for r in rs), len(rs)),
            "wrong_answers": len(wrong),
            "judge_supported_correct": pct(sum(r["judge"].get("label") == "supported" for r in answered if r not in wrong),
                                           len(answered) - len(wrong)),
            "judge_supported_gold": pct(sum(r["gold_judge"].get("label") == "supported" for r in rs), len(rs)),
            "judge_supported_wrong": pct(sum(r["judge"].get("label") == "supported" for r in wrong), len(wrong)),
            "decoys": len(decoys),
            "judge_supported_decoy": pct(sum(r["decoy_judge"]["label"] == "supported" for r in decoys), len(decoys)),
            "decoys_typed_wrong": len(typed_decoys),
            "judge_supported_decoy_typed_wrong": pct(sum(r["decoy_judge"]["label"] == "supported" for r in typed_decoys),
                                                     len(typed_decoys)),
            "wrong_type_examples": [f"{r['question'][:70]} -> {r['prediction'][:40]}" for r in typed[:3]],
        }
    return by_set


def rejudge(records: list[dict[str, Any]]) -> dict[str, float]:
    """This checkout's judge on another checkout's wrong answers: the judge's change alone."""
    from kgviz.offline.judge import check_claim
    from kgviz.claims import short_claim
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.verify.metrics import accuracy

    embedder = HashingEmbedder()
    out: dict[str, float] = {}
    for name in dict.fromkeys(r["set"] for r in records):
        wrong = [r for r in records if r["set"] == name and not r["abstained"] and not accuracy(r["prediction"], r["answers"])]
        supported = 0
        for r in wrong:
            claim = short_claim(r["question"], r["prediction"])
            items = [(f"p{i}", p) for i, p in enumerate(r["passages"])]
            res = check_claim(claim.text, items, embedder, focus=claim.focus, question=r["question"])
            supported += res.label == "supported"
        out[name] = round(100.0 * supported / len(wrong), 1) if wrong else 0.0
    return out


def _run_worker(code: Path, data: Path, sets: list[str], limit: int | None) -> list[dict[str, Any]]:
    env = dict(os.environ, PYTHONPATH=str(code))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--data", str(data), "--sets", *sets]
    if limit:
        cmd += ["--limit", str(limit)]
    done = subprocess.run(cmd, env=env, cwd=str(code), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"worker for {code} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=_default_data())
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    ap.add_argument("--limit", type=int, default=None, help="first N questions per set")
    ap.add_argument("--base", type=Path, help="another checkout (e.g. the base commit) measured in the same run")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        json.dump(work(args.data, args.sets, args.limit), sys.stdout)
        return 0
    if not args.data.exists():
        print(json.dumps({"skipped": f"no data at {args.data}"}))
        return 0
    report: dict[str, Any] = {"data": str(args.data), "context": "gold supporting passages", "embedder": "hashing"}
    if args.base:
        base = _run_worker(args.base, args.data, args.sets, args.limit)
        report["base"] = {"code": str(args.base), **score(base)}
        for name, share in rejudge(base).items():
            report["base"][name]["judge_supported_wrong_by_this_judge"] = share
    report["this"] = {"code": str(ROOT), **score(_run_worker(ROOT, args.data, args.sets, args.limit))}
    print(json.dumps(report, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
