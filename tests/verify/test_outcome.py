"""The verdict logic shared by every surface: correct x grounded x abstained x failed -> label, colour."""
from __future__ import annotations

import pytest

from kgviz.evaluate.runner import EvalRecord
from kgviz.offline.judge import OFFLINE_JUDGE_LABEL
from kgviz.verify.judge import ClaimVerdict, Verdict
from kgviz.verify.metrics import score
from kgviz.verify.outcome import GREEN, correctness, groundedness, judge_caution, of_record, of_verdict, outcome

RIGHT = {"em": 1.0, "f1": 1.0, "acc": 1.0}
WRONG = {"em": 0.0, "f1": 0.0, "acc": 0.0}


@pytest.mark.parametrize("metrics, labels, kind, label", [
    (RIGHT, ["supported"], "right_grounded", "right and grounded"),
    (WRONG, ["supported"], "grounded_wrong", "grounded but wrong"),
    (RIGHT, ["not_found"], "right_unsupported", "right but unsupported"),
    (WRONG, ["supported", "contradicted"], "wrong_unsupported", "wrong and unsupported"),
    (RIGHT, ["supported", "unparsed"], "right_unverified", "right, support not fully verified"),
    (None, ["supported", "supported"], "grounded", "grounded (no gold answer to check)"),
    (None, ["not_found"], "hallucinated", "hallucination (1 unsupported claim)"),
])
def test_every_combination_has_its_own_label(metrics, labels, kind, label) -> None:  # noqa: ANN001
    o = outcome(failed=False, abstained=False, labels=labels, metrics=metrics)
    assert (o.kind, o.label) == (kind, label)
    assert (o.colour == GREEN) == (kind in ("right_grounded", "grounded"))  # green only when nothing is wrong
    assert [m.name for m in o.marks] == (["correct", "grounded"] if metrics else ["grounded"])


def test_failed_and_abstained_win_and_carry_no_marks() -> None:
    for failed, abstained, kind in ((True, False, "failed"), (True, True, "failed"), (False, True, "abstained")):
        o = outcome(failed=failed, abstained=abstained, labels=["supported"], metrics=RIGHT)
        assert o.kind == kind and o.marks == [] and o.colour != GREEN


def test_marks_name_the_numbers_that_decided() -> None:
    assert correctness(1.0, 1.0, 1.0).text == "matches gold (EM 1 · F1 1)"
    contained = correctness(0.0, 0.4, 1.0)
    assert contained.ok and contained.text == "contains the gold answer (EM 0 · F1 0.4)"
    near = correctness(0.0, 0.67, 0.0)  # "38" for "38 metres": close is not right
    assert near.ok is False and "F1 0.67" in near.text
    assert groundedness(["supported", "not_found", "contradicted"]).text == "2 of 3 claims not supported by its context"
    assert groundedness(["supported", "supported"]).text == "all 2 claims supported by its context"
    assert groundedness([]).ok is None


def test_anster_wren_is_grounded_but_wrong_from_a_verdict_and_from_a_record() -> None:
    """The recorded model's answer to s03 (gold Tarrow): supported by its context, and wrong."""
    metrics = score("Anster Wren", "Anster Wren is the founder of the Ossel Marine Institute.", ["Tarrow"])
    v = Verdict("kg-retriever", "Anster Wren", "LLM judge (recorded:qwen)", [ClaimVerdict("Anster Wren", "supported")])
    o = of_verdict(v, metrics)
    assert o.kind == "grounded_wrong" and o.colour != GREEN
    assert o.correct is not None and o.correct.ok is False and o.grounded is not None and o.grounded.ok is True
    r = EvalRecord(qid="s03", question="?", answers=["Tarrow"], method="kg-retriever", params_hash="h",
                   answer="Anster Wren", error="", metrics=metrics.to_dict(), hallucinated=False, abstained=False,
                   verdict=v.to_dict())
    assert of_record(r) == o
    failed = EvalRecord(qid="s03", question="?", answers=["Tarrow"], method="x", params_hash="h", answer="",
                        error="boom", metrics={}, hallucinated=False, abstained=False)
    assert of_record(failed).kind == "failed"


def test_judge_caution_for_the_offline_check_and_for_an_llm_judge() -> None:
    assert "weaker than an LLM judge" in judge_caution(OFFLINE_JUDGE_LABEL)
    assert "judge generously" in judge_caution("LLM judge (recorded:qwen2.5-coder-0.5b-instruct)")
    assert judge_caution("") == ""
