"""Issue 22.3's must-show: how well the offline claim judge separates right answers from wrong ones
on a multi-hop set, for a baseline judge (a git ref, default ``main``) and this checkout's judge,
on the very same saved runs.

    python benchmarks/judge_check.py DATASET --keep DIR [--budget-tokens 3000] [--limit N]
                                     [--baseline-ref main] [--holdout-every 3] [--json]

1. Runs: the corpus is built offline into ``DIR`` (benchmarks/multihop.py's ``--keep`` build,
   reused when present) and every method plus the BM25 / dense baselines answers every question
   at the equal budget; each run (answer, context items, error) is saved once to
   ``DIR/judge-runs-<budget>.jsonl`` and reused afterwards, so both judges read identical runs.
2. Judging: each saved run is judged offline by this checkout's ``verify_run`` and, in a
   subprocess, by the baseline ref's (``git archive`` of the ref into a temporary folder).
3. Rates (kgviz.evaluate.judge_check): share of answers matching the gold (EM 1) judged
   supported, and share of wrong answers (EM 0, F1 < 0.5) judged supported, per judge.

Held-out part: questions whose position in the file is a multiple of ``--holdout-every`` (0, 3,
6, ...) form the held-out part, reported on its own beside the rest and the whole set; the
judge was developed on the rest of each set only. The rates are also split by what the question
asks (two named options, yes/no, an open answer), and by whether the run's context holds the facts
that decide the question (a diagnostic from the set's own annotations, never read by the judge):

* 2WikiMultihopQA (``evidences``: (head, relation, tail) triples): every triple has a context item
  that names its head and holds its tail: a date's year, a country in any of its forms
  (``kgviz.offline.countries``: "American" for "United States"), else the tail's words;
* MuSiQue (``question_decomposition``): every hop's answer is in one context item with the names
  that hop's own question gives.

A right answer whose deciding facts are missing was right by chance (a pick between two options,
"yes" or "no"); no judge that reads only the context can support it. Figures are printed, never
asserted on.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from multihop import build_or_reuse, dataset_dir  # noqa: E402

from kgviz.config import Settings  # noqa: E402
from kgviz.evaluate import load_questions  # noqa: E402
from kgviz.evaluate.budget import with_baselines  # noqa: E402
from kgviz.evaluate.judge_check import JudgedRun, judge_check  # noqa: E402
from kgviz.methods.registry import list_methods  # noqa: E402
from kgviz.offline.countries import MAX_FORM_WORDS, country_of  # noqa: E402
from kgviz.offline.qtype import answer_type  # noqa: E402
from kgviz.offline.support import fold, names  # noqa: E402
from kgviz.run import Run, run_method  # noqa: E402
from kgviz.verify.judge import SOURCE_KINDS  # noqa: E402
from kgviz.verify.metrics import exact_match, f1_score  # noqa: E402
from kgviz.workspace import open_workspace  # noqa: E402

# Judges a runs file with whatever kgviz is first on sys.path: one JSON line of claim labels per run.
# Uses only API that main already had (verify_run, Run.from_dict, Reasoner, OfflineLLM, HashingEmbedder).
_JUDGE_SNIPPET = r"""
import json, sys
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.run import Run
from kgviz.verify.judge import verify_run
reasoner = Reasoner(OfflineLLM(), HashingEmbedder())
with open(sys.argv[1], encoding="utf-8") as src, open(sys.argv[2], "w", encoding="utf-8") as out:
    for line in src:
        d = json.loads(line)
        v = verify_run(Run.from_dict(d["run"]), reasoner)
        out.write(json.dumps({"labels": [c.label for c in v.claims], "abstained": v.abstained,
                              "failed": v.failed, "reasons": [c.reason for c in v.claims]}) + "\n")
"""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def save_runs(folder: Path, keep: Path, budget: int, limit: int | None) -> Path:
    """Every method's run on every question, saved once (resumed by (qid, method))."""
    path = keep / f"judge-runs-{budget}.jsonl"
    items = load_questions(folder / "questions.jsonl", limit=limit)
    done = set()
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                d = json.loads(line)
                done.add((d["qid"], d["method"]))
    methods = with_baselines(list_methods(), budget, True)
    todo = [(n, it, m) for n, it in enumerate(items) for m in methods if (it.id, m) not in done]
    if not todo:
        return path
    settings = Settings.from_env({"KGVIZ_HOME": str(keep), "KGVIZ_LLM": "offline"})
    build_or_reuse(settings, keep / "db", folder / "corpus.jsonl", "hashing", log)
    ws = open_workspace(settings, db_dir=keep / "db", llm_spec="offline", embedder_spec="hashing")
    try:
        ctx = ws.method_context()
        with path.open("a", encoding="utf-8") as f:
            for k, (n, item, m) in enumerate(todo, 1):
                run = run_method(m, item.question, ctx, budget_tokens=budget, equal_budget=True)
                d = run.to_dict()
                d.pop("trace", None)  # the judge reads the answer and the context items only
                f.write(json.dumps({"qid": item.id, "position": n, "method": m, "answers": list(item.answers),
                                    "run": d}, ensure_ascii=False) + "\n")
                if k % 50 == 0 or k == len(todo):
                    f.flush()
                    log(f"  {k}/{len(todo)} runs saved")
    finally:
        ws.close()
    return path


def judge_with(tree: Path, runs: Path, out: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-c", _JUDGE_SNIPPET, str(runs), str(out)], check=True, cwd=str(tree), env=env)
    return [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines() if x.strip()]


def baseline_tree(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "kgviz"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def rates(saved: list[dict[str, Any]], judged: list[dict[str, Any]], part: Any) -> dict[str, Any]:
    rows = []
    for s, j in zip(saved, judged):
        if not part(s):
            continue
        answer = s["run"].get("answer", "")
        rows.append(JudgedRun(em=exact_match(answer, s["answers"]), f1=f1_score(answer, s["answers"]),
                              labels=tuple(j["labels"]), abstained=j["abstained"], failed=j["failed"]))
    return judge_check(rows).to_dict()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("--keep", type=Path, required=True, help="build folder (benchmarks/multihop.py --keep), reused")
    ap.add_argument("--budget-tokens", type=int, default=3000)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--baseline-ref", default="main", help="git ref whose judge is the 'before'")
    ap.add_argument("--holdout-every", type=int, default=3, help="questions at positions 0, k, 2k, ... are held out")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    folder = dataset_dir(args.dataset)
    args.keep.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    runs = save_runs(folder, args.keep, args.budget_tokens, args.limit)
    saved = [json.loads(x) for x in runs.read_text(encoding="utf-8").splitlines() if x.strip()]
    log(f"{len(saved)} saved runs ({time.perf_counter() - t0:.0f} s); judging ...")
    with tempfile.TemporaryDirectory(prefix="kgviz_judge_base_") as tmp:
        before = judge_with(baseline_tree(args.baseline_ref, Path(tmp)), runs, Path(tmp) / "before.jsonl")
        after = judge_with(ROOT, runs, Path(tmp) / "after.jsonl")
    gold = {}
    for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            gold[q["id"]] = q
    for s in saved:
        ctx = s["run"]["context"]  # the source text the judge reads (kgviz.verify.judge.context_items)
        s["facts_present"] = facts_present(gold.get(s["qid"], {}), [
            i["text"] for i in ctx["items"] + ctx.get("sources", []) if i.get("kind") in SOURCE_KINDS])
    k = max(1, args.holdout_every)
    parts = {"all": lambda s: True, "development": lambda s: s["position"] % k != 0,
             "held_out": lambda s: s["position"] % k == 0,
             # by what the question asks: two named options, yes/no, or an open answer
             "choice_questions": lambda s: _kind(s) == "choice", "yes_no_questions": lambda s: _kind(s) == "yesno",
             "open_questions": lambda s: _kind(s) == "open",
             # diagnostic: the context holds the facts that decide the question (module docstring)
             "facts_in_context": lambda s: s["facts_present"] is True,
             "facts_missing": lambda s: s["facts_present"] is False,
             "facts_in_context_held_out": lambda s: s["facts_present"] is True and s["position"] % k == 0}
    doc = {"dataset": folder.name, "budget_tokens": args.budget_tokens, "runs": len(saved),
           "baseline_ref": args.baseline_ref,
           "parts": {name: {"before": rates(saved, before, p), "after": rates(saved, after, p)}
                     for name, p in parts.items()}}
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{folder.name}: {len(saved)} runs, every method at {args.budget_tokens} tokens, offline; "
          f"before = {args.baseline_ref}'s judge, after = this checkout's")
    for name, d in doc["parts"].items():
        b, a = d["before"], d["after"]
        print(f"  {name:<25} right judged supported {_pct(b['right'])} -> {_pct(a['right'])}   "
              f"wrong judged supported {_pct(b['wrong'])} -> {_pct(a['wrong'])}")
    return 0


def _has(folded_text: str, phrase: str) -> bool:
    p = fold(re.sub(r"\s*\([^)]*\)\s*$", "", phrase))
    return bool(p) and f" {p} " in f" {folded_text} "


def _countries(text: str) -> set[str]:
    words = re.findall(r"[A-Z][\w.]*", text)
    return {c for n in range(1, MAX_FORM_WORDS + 1) for k in range(len(words) - n + 1)
            if (c := country_of(" ".join(words[k:k + n])))}


def _tail_in(text: str, folded_text: str, tail: str) -> bool:
    years = re.findall(r"\b\d{3,4}\b", tail)
    if years:
        return f" {years[-1]} " in f" {folded_text} "
    if country_of(tail):
        return country_of(tail) in _countries(text)
    return _has(folded_text, tail)


def facts_present(question: dict[str, Any], texts: list[str]) -> bool | None:
    """Whether ``texts`` (a run's context) hold the facts that decide ``question`` (module docstring);
    None when the set has no such annotation."""
    folded = [(t, fold(t)) for t in texts]
    if question.get("evidences"):
        return all(any(_has(f, head) and _tail_in(t, f, tail) for t, f in folded)
                   for head, _, tail in question["evidences"])
    if question.get("question_decomposition"):
        # each hop's fact: its answer in one item with the names its own question gives ("Who produced
        # The Jewel of the Nile?" -> Michael Douglas next to "Jewel of the Nile"); "#1" stands for an
        # earlier hop's answer, already checked there
        for hop in question["question_decomposition"]:
            asks = [n for n in names(re.sub(r"#\d+", " ", hop["question"])) if fold(n)]
            if not any(_has(f, hop["answer"]) and all(_has(f, n) for n in asks) for _, f in folded):
                return False
        return True
    return None


def _kind(saved: dict[str, Any]) -> str:
    asked = answer_type(saved["run"]["question"])
    return "choice" if asked.options else "yesno" if asked.kind == "yesno" else "open"


def _pct(cell: dict[str, Any]) -> str:
    return "n/a" if cell["rate"] is None else f"{100 * cell['rate']:.1f} % ({cell['supported']}/{cell['n']})"


if __name__ == "__main__":
    sys.exit(main())
