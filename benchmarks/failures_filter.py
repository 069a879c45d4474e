"""The failure explorer on a big evaluation: 10,000 synthetic but realistically shaped runs
(``--questions`` x 9 methods; question, gold and answer texts of real lengths, claim verdicts,
gold-funnel labels in the proportions an offline multi-hop run shows) through what the Evaluate
page does on every rerun: rows from records (with human labels), each filter of the page, a sort,
one page, and the CSV export of the filtered rows.

Prints one JSON document: the median of ``--repeat`` runs per step, in milliseconds. Not a timed
test (issue 25: filtering 10,000 rows should answer in under a second).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from typing import Any, Callable

from kgviz.evaluate import failures as fx
from kgviz.evaluate import labels as lb
from kgviz.evaluate.runner import EvalRecord

METHODS = ("kg-rag", "kg-retriever", "kg-infused", "ket-rag", "skeleton-rag", "keyword-rag", "ket-full", "text-rag",
           "no-retrieval")
# funnel label of a wrong answer, with weights (ours: roughly what the offline runs on the shared sets show)
FUNNEL = (("retrieval/traversal miss", 40), ("generation error", 25), ("extraction miss", 12),
          ("context truncation", 8), ("entry-point miss", 8), ("not in corpus", 4), ("no retrieval", 3))
WORDS = ("river", "founded", "university", "director", "born", "city", "company", "album", "film", "married",
         "station", "island", "province", "museum", "bridge", "railway", "novel", "physicist", "harbour", "team")
NAMES = ("Agnes Vohl", "Tomas Aldric", "Kellhaven", "Tarrow", "Ossel Marine Institute", "Tidewell Line",
         "Skellan Point", "Edda Lunn", "Ventholm", "Lessary", "Orrin Bridge", "Aster Wren")


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS + NAMES) for _ in range(n))


def synthetic(n_questions: int, seed: int = 7) -> list[EvalRecord]:
    rng = random.Random(seed)
    labels, weights = zip(*FUNNEL)
    out = []
    for q in range(n_questions):
        question = f"In which {rng.choice(WORDS)} was the {_sentence(rng, rng.randint(6, 14))}?"
        gold = rng.choice(NAMES)
        for m in METHODS:
            failed = rng.random() < 0.01
            right = not failed and rng.random() < 0.35
            abstained = not failed and not right and rng.random() < 0.1
            answer = "" if failed else gold if right else "insufficient information" if abstained else \
                rng.choice(NAMES) + " " * rng.randint(0, 1) + _sentence(rng, rng.randint(0, 20))
            claims = [] if failed or abstained else [
                {"text": _sentence(rng, rng.randint(5, 15)), "label": rng.choice(("supported", "not_found",
                                                                                  "contradicted"))}
                for _ in range(rng.randint(1, 3))]
            v = 1.0 if right else 0.0
            out.append(EvalRecord(
                qid=f"q{q:05d}", question=question, answers=[gold], method=m, params_hash="h", answer=answer,
                error="TimeoutError: the model did not answer in 60 s" if failed else "",
                metrics={} if failed else {"em": v, "f1": v, "acc": v, "coverage": float(rng.random() < 0.6)},
                hallucinated=False, abstained=abstained,
                verdict={"claims": claims, "labels": [c["label"] for c in claims]},
                funnel={"label": "method failed" if failed else "correct" if right else
                        "abstained" if abstained else rng.choices(labels, weights)[0],
                        "in_kept_context": rng.random() < 0.5},
                tokens=rng.randint(200, 5000), context_tokens=rng.randint(100, 3000), cost_usd=rng.random() / 100,
                latency_s=rng.random() * 5))
    return out


def _median_ms(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=1112, help="questions; x 9 methods = runs (1112 -> 10,008)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    records = synthetic(args.questions)
    with tempfile.TemporaryDirectory() as folder:  # 200 human labels, as a person might have made
        for r in records[:: max(1, len(records) // 200)]:
            lb.save_label(folder, lb.label_key(r.question, r.method, r.answer), lb.RunLabel(True, "checked"))
        labels = lb.load_labels(folder)
    rows = fx.rows_of(records, labels)
    filters = {
        "method + gold in context but wrong": fx.FailureFilter(methods=("ket-rag",), gold_in_context_wrong=True),
        "methods disagree": fx.FailureFilter(disagree=True),
        "stage + outcome": fx.FailureFilter(stages=("retrieval/traversal miss", "generation error"),
                                            outcomes=("wrong_unsupported", "grounded_wrong")),
        "text search": fx.FailureFilter(text="kellhaven"),
        "everything at once": fx.FailureFilter(methods=METHODS[:4], disagree=True, gold_in_context_wrong=True,
                                               text="river"),
    }
    report: dict[str, Any] = {"rows": len(rows), "repeat": args.repeat, "load_average": os.getloadavg()[0],
                              "ms": {"rows_of (records -> rows, with labels)": _median_ms(
                                  lambda: fx.rows_of(records, labels), args.repeat)}}
    counts = {}
    for name, f in filters.items():
        report["ms"][f"filter: {name}"] = _median_ms(lambda f=f: fx.apply_filter(rows, f), args.repeat)
        counts[name] = len(fx.apply_filter(rows, f))
    report["ms"]["sort by latency_s (all rows)"] = _median_ms(
        lambda: fx.sort_rows(rows, "latency_s", descending=True), args.repeat)
    report["ms"]["one page of 100"] = _median_ms(lambda: fx.page_of(rows, 37, 100), args.repeat)
    shown = fx.apply_filter(rows, filters["methods disagree"])
    report["ms"]["CSV of the 'methods disagree' rows"] = _median_ms(lambda: fx.to_csv(shown), args.repeat)
    report["ms"]["taxonomy with 95% CIs (n_boot 2000)"] = _median_ms(lambda: fx.taxonomy(rows), 1)
    report["ms"]["agreement (run labels)"] = _median_ms(
        lambda: lb.agreement(lb.labelled_pairs(rows, labels)), args.repeat)
    report["rows_kept"] = counts
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
