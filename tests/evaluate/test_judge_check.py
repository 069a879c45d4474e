"""The judge check (issue 22.3): how often a judge calls right and wrong answers supported."""
from __future__ import annotations

import json

from kgviz.evaluate.judge_check import WRONG_F1_BELOW, JudgedRun, from_records, judge_check
from kgviz.evaluate.report import format_table, summarise
from kgviz.evaluate.runner import EvalRecord


def _run(em: float, f1: float, *labels: str, abstained: bool = False, failed: bool = False) -> JudgedRun:
    return JudgedRun(em=em, f1=f1, labels=tuple(labels), abstained=abstained, failed=failed)


def test_rates_count_right_and_clearly_wrong_answers_apart() -> None:
    runs = [_run(1, 1, "supported"), _run(1, 1, "supported"), _run(1, 1, "not_found"),
            _run(0, 0.0, "supported"), _run(0, 0.2, "not_found"), _run(0, 0.4, "contradicted"),
            _run(0, 0.0, "supported", "not_found"),  # one unsupported claim: not judged supported
            _run(0, 0.6, "supported")]  # partial overlap: in neither group
    check = judge_check(runs, "offline")
    assert (check.right.supported, check.right.n) == (2, 3)
    assert (check.wrong.supported, check.wrong.n) == (1, 4)
    assert abs(check.right.rate - 2 / 3) < 1e-9 and check.wrong.rate == 0.25


def test_failed_abstained_and_unparsed_answers_are_left_out_and_unparsed_counted() -> None:
    runs = [_run(1, 1, "supported", failed=True), _run(0, 0, abstained=True), _run(0, 0),  # no claims
            _run(1, 1, "unparsed"), _run(0, 0, "supported", "unparsed")]
    check = judge_check(runs)
    assert check.right.n == 0 and check.wrong.n == 0 and check.unparsed == 2
    assert check.right.rate is None and check.right.text().startswith("n/a")  # never 0 % over nothing
    assert "2 answer(s) left out" in "\n".join(check.lines())


def test_wrong_means_em_0_and_f1_below_the_threshold() -> None:
    assert _run(0, WRONG_F1_BELOW - 1e-6, "supported").group == "wrong"
    assert _run(0, WRONG_F1_BELOW, "supported").group == "partial"
    assert _run(1, 1, "supported").group == "right"


def _record(qid: str, method: str, answer: str, em: float, f1: float, labels: list[str], judge: str) -> EvalRecord:
    return EvalRecord(qid=qid, question="q?", answers=["gold"], method=method, params_hash="h", answer=answer,
                      error="", metrics={"em": em, "f1": f1, "acc": em, "coverage": 1.0},
                      hallucinated="supported" not in labels, abstained=False,
                      verdict={"judge": judge, "labels": labels, "failed": False})


def test_eval_summary_json_and_text_carry_the_judge_check_per_judge() -> None:
    recs = [_record("q1", "a", "gold", 1, 1, ["supported"], "offline check (weaker)"),
            _record("q2", "a", "x", 0, 0, ["supported"], "offline check (weaker)"),
            _record("q3", "a", "y", 0, 0, ["not_found"], "offline check (weaker)"),
            _record("q1", "b", "gold", 1, 1, ["not_found"], "LLM judge (x:y)")]
    checks = from_records(recs)
    assert [c.judge for c in checks] == ["offline check (weaker)", "LLM judge (x:y)"]
    summary = summarise(recs, ["a", "b"], n_boot=50)
    doc = json.loads(json.dumps(summary.to_dict()))
    block = doc["judge_check"]
    assert block[0]["right"] == {"supported": 1, "n": 1, "rate": 1.0}
    assert block[0]["wrong"] == {"supported": 1, "n": 2, "rate": 0.5}
    assert block[1]["judge"] == "LLM judge (x:y)" and block[1]["right"]["rate"] == 0.0
    text = format_table(summary)
    assert "judge check (offline check (weaker))" in text and "50.0 % (1 of 2)" in text


def test_records_without_a_verdict_give_no_check() -> None:
    rec = _record("q1", "a", "gold", 1, 1, ["supported"], "j")
    rec.verdict = {}
    assert from_records([rec]) == []
