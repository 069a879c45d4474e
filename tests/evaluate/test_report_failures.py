"""Failures are never numbers: a failed run is left out of every mean, CI, median and paired test,
counted with its error; a metric over zero runs is n/a (None in JSON)."""
from __future__ import annotations

import json

from kgviz.evaluate.report import format_equal_budget_table, format_table, summarise
from kgviz.evaluate.runner import EvalRecord

MISS = "the recording has no reply for a prompt starting 'Answer the question'"


def rec(qid: str, method: str, *, em: float = 0.0, error: str = "", hallucinated: bool = False,
        coverage: float = 1.0, tokens: int = 100) -> EvalRecord:
    metrics = {} if error else {"em": em, "f1": em, "acc": em, "coverage": coverage}
    return EvalRecord(qid=qid, question=f"q {qid}?", answers=["x"], method=method, params_hash="h", answer="" if error
                      else "x", error=error, metrics=metrics, hallucinated=hallucinated, abstained=False,
                      tokens=0 if error else tokens, context_tokens=0 if error else 50)


def records() -> list[EvalRecord]:
    """'broken' fails everywhere; 'half' fails on q3 and q4; 'good' and 'talker' always answer."""
    out = []
    for i in range(1, 7):
        q = f"q{i}"
        out.append(rec(q, "good", em=1.0 if i <= 4 else 0.0))
        out.append(rec(q, "talker", hallucinated=True, coverage=0.0))
        out.append(rec(q, "broken", error=MISS))
        out.append(rec(q, "half", em=1.0, error="TimeoutError: slow" if i in (3, 4) else ""))
    return out


def test_failed_runs_are_in_no_mean_and_metrics_over_zero_runs_are_none() -> None:
    s = summarise(records(), ["good", "talker", "broken", "half"], n_boot=200)
    broken, half = s.methods["broken"], s.methods["half"]
    assert (broken.n, broken.n_ok, broken.n_errors) == (6, 0, 6)
    for key, e in broken.estimates.items():  # not 0 %, not 100 % coverage: nothing
        assert e.n == 0, key
    d = s.to_dict()["methods"]["broken"]
    assert all(m["mean"] is None and m["lo"] is None and m["hi"] is None and m["of"] == 6
               for m in d["metrics"].values())
    assert d["median_context_tokens"] is None
    # half: 4 of 6 succeeded, all right: EM 100 % over those 4 (the two timeouts are no zeros)
    assert (half.n_ok, half.estimates["em"].n, half.estimates["em"].mean) == (4, 4, 1.0)
    assert s.to_dict()["methods"]["half"]["metrics"]["em"]["of"] == 6


def test_paired_tests_use_only_questions_both_answered() -> None:
    s = summarise(records(), ["good", "talker", "broken", "half"], n_boot=200)
    # nothing to pair with a method that failed everywhere (was: "Hallucination -100.0 (p=0.031)*")
    assert not [c for c in s.comparisons if "broken" in (c.a, c.b)]
    good_half = s.comparison("em", "good", "half")
    assert good_half is not None and good_half.n == 4
    # on q1, q2, q5, q6 good is right on 2 of 4, half on 4: a -50 point difference, not the
    # diluted value that two failures counted as zeros would give
    assert round(good_half.mean_diff, 6) == -0.5
    assert s.comparison("hallucination", "good", "talker").n == 6


def test_failures_are_counted_with_their_distinct_errors_in_text_and_json() -> None:
    s = summarise(records(), ["good", "talker", "broken", "half"], n_boot=200)
    f = s.to_dict()["failures"]
    assert f["count"] == 8 and f["of"] == 24
    assert [(g["error"], g["count"], g["methods"]) for g in f["errors"]] == [
        (MISS, 6, ["broken"]), ("TimeoutError: slow", 2, ["half"])]
    assert f["errors"][0]["first_qid"] == "q1"
    json.dumps(s.to_dict())  # JSON-ready
    text = format_table(s)
    assert "FAILED: 8 of 24 runs failed and are left out of every mean" in text
    assert MISS in text and "TimeoutError: slow" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("broken"))
    assert row.split()[1:5] == ["0", "of", "6", "6"]
    assert "n/a" in row and "0.0" not in row and "100.0" not in row
    assert next(ln for ln in text.splitlines() if ln.startswith("half")).split()[1:4] == ["4", "of", "6"]
    assert "broken -" not in text and "- broken" not in text  # no paired line with it
    short = format_equal_budget_table(s)
    assert short.startswith("FAILED: 8 of 24")
    assert "n/a" in next(ln for ln in short.splitlines() if ln.startswith("broken"))


def test_no_failures_no_banner() -> None:
    s = summarise([r for r in records() if not r.error], n_boot=100)
    assert s.failures.count == 0 and s.failures.headline() == ""
    assert "FAILED" not in format_table(s)
