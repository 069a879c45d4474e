"""The failure explorer's rows, stages, taxonomy, disagreements, filters and exports
(kgviz.evaluate.failures) and `kgviz failures`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.cli import main
from kgviz.errors import EvaluationError
from kgviz.evaluate import failures as fx
from kgviz.evaluate.runner import EvalRecord


def rec(qid: str, method: str, *, right: bool = False, error: str = "", abstained: bool = False,
        labels: tuple[str, ...] = ("not_found",), funnel: str = "generation error", kept: bool = False,
        answers: tuple[str, ...] = ("Paris",), question: str = "") -> EvalRecord:
    v = 1.0 if right else 0.0
    return EvalRecord(qid=qid, question=question or f"where is {qid}?", answers=list(answers), method=method,
                      params_hash="h", answer="" if error else ("Paris" if right else "Lyon, maybe"), error=error,
                      metrics={} if error else {"em": v, "f1": v, "acc": v, "coverage": 1.0},
                      hallucinated=False, abstained=abstained, verdict={"labels": list(labels)},
                      funnel={"label": "method failed" if error else ("correct" if right else funnel),
                              "in_kept_context": kept},
                      tokens=10, context_tokens=5, cost_usd=0.001, latency_s=0.25)


def records() -> list[EvalRecord]:
    return [
        rec("q1", "a", right=True, labels=("supported",)),
        rec("q1", "b", funnel="extraction miss"),
        rec("q2", "a", right=True, labels=("not_found",)),  # right, judged unsupported
        rec("q2", "b", right=True, labels=("supported",)),
        rec("q3", "a", error="TimeoutError: slow"),
        rec("q3", "b", funnel="context truncation", kept=False),
        rec("q4", "a", funnel="generation error", kept=True),
        rec("q4", "b", abstained=True, labels=(), funnel="abstained", kept=True),
        rec("q5", "a", labels=("supported", "supported")),  # wrong, judged supported
        rec("q5", "b", right=True, labels=("supported",)),
        rec("q6", "a", funnel="retrieval/traversal miss"),
        rec("q6", "b", answers=()),  # no gold answer
    ]


def test_each_row_gets_the_first_stage_that_applies() -> None:
    stages = {(r.qid, r.method): r.stage for r in fx.rows_of(records())}
    assert stages == {
        ("q1", "a"): "correct", ("q1", "b"): "extraction miss",
        ("q2", "a"): "judge disagreement", ("q2", "b"): "correct",
        ("q3", "a"): "run failed", ("q3", "b"): "budget cut",
        ("q4", "a"): "generation error", ("q4", "b"): "abstained",
        ("q5", "a"): "judge disagreement", ("q5", "b"): "correct",
        ("q6", "a"): "retrieval/traversal miss", ("q6", "b"): "no gold"}


def test_a_failed_run_has_no_answer_and_no_numbers() -> None:
    row = next(r for r in fx.rows_of(records()) if r.failed)
    assert (row.answer, row.correct, row.grounded, row.em, row.f1) == ("", None, None, None, None)
    assert row.error == "TimeoutError: slow" and row.outcome == "failed"


def test_wrong_but_funnel_saw_gold_in_answer_is_unclassified_not_correct() -> None:
    r = rec("q", "a", funnel="correct")  # the funnel's substring test said correct, EM/Acc say wrong
    r.funnel["label"] = "correct"
    assert fx.row_of(r).stage == fx.UNCLASSIFIED


def test_stage_counts_sum_to_each_methods_failures() -> None:
    rows = fx.rows_of(records())
    tax = fx.taxonomy(rows, n_boot=200)
    for m, t in tax.items():
        assert sum(t.stages.values()) == t.failures == sum(r.stage != "correct" for r in rows if r.method == m)
    assert tax["a"].stages == {"run failed": 1, "retrieval/traversal miss": 1, "generation error": 1,
                               "judge disagreement": 2}
    share = next(s for s in tax["a"].shares if s.stage == "judge disagreement")
    assert share.count == 2 and share.share == pytest.approx(2 / 6) and share.lo <= share.share <= share.hi
    assert share.lo < share.hi  # a real interval from 6 runs
    assert tax["a"].examples == {"run failed": "q3", "retrieval/traversal miss": "q6", "generation error": "q4",
                                 "judge disagreement": "q2"}


def test_disagreements_list_a_right_b_wrong_questions_only_where_both_answered() -> None:
    rows = fx.rows_of(records())
    pairs = {(d.a, d.b): d.qids for d in fx.disagreements(rows)}
    # q3: a failed (neither right nor wrong); q6: b has no gold
    assert pairs == {("a", "b"): ("q1",), ("b", "a"): ("q5",)}
    assert [(x.qid, y.qid) for x, y in fx.pair_rows(rows, "b", "a")] == [("q5", "q5")]
    assert fx.disagreeing_qids(rows) == {"q1", "q5"}


def test_filters_combine() -> None:
    rows = fx.rows_of(records())
    pick = lambda f: [(r.qid, r.method) for r in fx.apply_filter(rows, f)]  # noqa: E731
    assert pick(fx.FailureFilter(methods=("a",), stages=("judge disagreement",))) == [("q2", "a"), ("q5", "a")]
    assert pick(fx.FailureFilter(gold_in_context_wrong=True)) == [("q4", "a"), ("q4", "b")]
    assert pick(fx.FailureFilter(disagree=True, methods=("b",))) == [("q1", "b"), ("q5", "b")]
    assert pick(fx.FailureFilter(text="TIMEOUT")) == [("q3", "a")]
    assert pick(fx.FailureFilter(outcomes=("abstained",))) == [("q4", "b")]
    assert len(pick(fx.FailureFilter())) == len(rows)


def test_saved_filters_reopen_by_name(tmp_path: Path) -> None:
    f = fx.FailureFilter(methods=("a",), gold_in_context_wrong=True, text="x")
    fx.save_filter(tmp_path, "ket wrong", f)
    fx.save_filter(tmp_path, "other", fx.FailureFilter(disagree=True))
    saved = fx.load_filters(tmp_path)
    assert saved["ket wrong"] == f and list(saved) == ["ket wrong", "other"]
    with pytest.raises(EvaluationError, match="bad filter name"):
        fx.save_filter(tmp_path, "../escape", f)
    (tmp_path / fx.FILTERS_FILE).write_text("[1, 2", encoding="utf-8")
    with pytest.raises(EvaluationError, match="saved filters"):
        fx.load_filters(tmp_path)


def test_csv_and_jsonl_exports_load_back_to_the_same_rows(tmp_path: Path) -> None:
    rows = fx.rows_of(records() + [rec("q7", "a", question='tricky, "quoted"\nand two lines')])
    (tmp_path / "r.csv").write_text(fx.to_csv(rows), encoding="utf-8")
    (tmp_path / "r.jsonl").write_text(fx.to_jsonl(rows), encoding="utf-8")
    assert fx.read_csv(tmp_path / "r.csv") == rows
    assert fx.read_jsonl(tmp_path / "r.jsonl") == rows


def test_cli_failures_json_and_exports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records()), encoding="utf-8")
    code = main(["failures", str(results), "--json", "--n-boot", "200", "--csv", str(tmp_path / "f.csv"),
                 "--jsonl", str(tmp_path / "f.jsonl")])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n_rows"] == 12 and doc["methods"]["b"]["failures"] == 4
    assert doc["methods"]["b"]["stages"] == {"extraction miss": 1, "budget cut": 1, "abstained": 1, "no gold": 1}
    assert {(d["a"], d["b"]): d["qids"] for d in doc["disagreements"]} == {("a", "b"): ["q1"], ("b", "a"): ["q5"]}
    rows = fx.rows_of(records())
    assert fx.read_csv(tmp_path / "f.csv") == rows and fx.read_jsonl(tmp_path / "f.jsonl") == rows


def test_cli_failures_on_a_damaged_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "results.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    assert main(["failures", str(bad)]) == 2
    assert "line 1" in capsys.readouterr().err


def test_outcome_kinds_offered_are_the_outcome_modules_kinds() -> None:
    from kgviz.verify import outcome as oc

    kinds = {k for k, _l, _c in oc._WITH_GOLD.values()} | {"failed", "abstained", "grounded", "hallucinated",
                                                           "unverified"}
    assert set(fx.OUTCOME_KINDS) == kinds


def test_cli_failures_unwritable_export_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records()), encoding="utf-8")
    assert main(["failures", str(results), "--csv", str(tmp_path / "no" / "such" / "f.csv")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_shares_of_absent_or_universal_stages_equal_the_bootstrap_of_constant_values() -> None:
    from kgviz.evaluate.stats import bootstrap_ci

    rows = fx.rows_of([rec(f"q{i}", "a", error="boom") for i in range(5)])
    shares = {s.stage: s for s in fx.taxonomy(rows, n_boot=200)["a"].shares}
    for stage, value in (("run failed", 1.0), ("extraction miss", 0.0)):
        e = bootstrap_ci([value] * 5, n_boot=200)
        assert (shares[stage].share, shares[stage].lo, shares[stage].hi) == (e.mean, e.lo, e.hi) == (value,) * 3


def test_sorting_puts_empty_values_last_and_pages_clamp_into_range() -> None:
    rows = fx.rows_of(records())
    by_f1 = fx.sort_rows(rows, "f1", descending=True)
    assert [r.f1 for r in by_f1][:5] == [1.0] * 4 + [0.0] and by_f1[-1].failed  # the failed run has no F1: last
    assert fx.sort_rows(rows, "f1")[-1].failed  # last ascending too
    with pytest.raises(EvaluationError, match="no column"):
        fx.sort_rows(rows, "nope")
    p = fx.page_of(rows, 3, 5)
    assert (p.number, p.pages, p.first, p.last) == (3, 3, 11, 12) and p.rows == rows[10:]
    assert fx.page_of(rows, 99, 5).number == 3 and fx.page_of(rows, 0, 5).rows == rows[:5]
    assert fx.page_of([], 1, 50) == fx.Page([], 1, 1, 0, 0)
