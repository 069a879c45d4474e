"""Human labels of runs (kgviz.evaluate.labels): stored in the workspace folder, tied to one
answer, exported with the failure rows, and their agreement with the automatic verdict."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.cli import main
from kgviz.errors import EvaluationError
from kgviz.evaluate import failures as fx
from kgviz.evaluate import labels as lb

from kgviz.evaluate.runner import EvalRecord

from test_failures import records


def test_cohens_kappa_by_hand() -> None:
    # 10 runs: both say right 4, both wrong 3, auto right / human wrong 2, auto wrong / human right 1
    pairs = [(True, True)] * 4 + [(False, False)] * 3 + [(True, False)] * 2 + [(False, True)]
    a = lb.agreement(pairs)
    po, pe = 0.7, 0.6 * 0.5 + 0.4 * 0.5
    assert a.n == 10 and a.agreement == pytest.approx(po) and a.kappa == pytest.approx((po - pe) / (1 - pe))
    assert lb.agreement([(True, True)] * 3).kappa is None  # chance agreement 1: undefined, not 1 or 0
    assert lb.agreement([]).to_dict() == {"n": 0, "agreement": None, "kappa": None}


def test_labels_survive_reopening_belong_to_one_answer_and_can_be_cleared(tmp_path: Path) -> None:
    key = lb.label_key("Where is it?", "a", "Paris")
    lb.save_label(tmp_path, key, lb.RunLabel(False, "gold is wrong here"))
    assert lb.load_labels(tmp_path).runs == {key: lb.RunLabel(False, "gold is wrong here")}
    assert lb.label_key("Where is it?", "a", "Paris, France") != key
    assert lb.label_key("Where  is it? ", "a", "Paris") == key  # the question's spacing does not matter
    lb.save_label(tmp_path, key, lb.RunLabel(None, ""))
    assert not lb.load_labels(tmp_path)
    (tmp_path / lb.LABELS_FILE).write_text("{", encoding="utf-8")
    with pytest.raises(EvaluationError, match="human labels"):
        lb.load_labels(tmp_path)


def test_rows_carry_labels_into_exports_and_the_agreement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recs = records()
    q1a, q1b = recs[0], recs[1]  # a right, b wrong (automatically)
    lb.save_label(tmp_path, lb.label_key(q1a.question, q1a.method, q1a.answer), lb.RunLabel(True))
    lb.save_label(tmp_path, lb.label_key(q1b.question, q1b.method, q1b.answer), lb.RunLabel(True, "a synonym"))
    rows = fx.rows_of(recs, lb.load_labels(tmp_path))
    assert [(r.human_right, r.human_note) for r in rows[:2]] == [(True, ""), (True, "a synonym")]
    (tmp_path / "r.csv").write_text(fx.to_csv(rows), encoding="utf-8")
    assert fx.read_csv(tmp_path / "r.csv") == rows

    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in recs), encoding="utf-8")
    assert main(["failures", str(results), "--json", "--n-boot", "50", "--labels", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["human_agreement"]["n"] == 2 and doc["human_agreement"]["agreement"] == 0.5
    assert doc["human_agreement"]["kappa"] == pytest.approx(0.0)  # po 0.5 = pe 0.5: no agreement beyond chance
    assert main(["failures", str(results), "--json", "--n-boot", "50"]) == 0
    assert json.loads(capsys.readouterr().out)["human_agreement"]["n"] == 0


def test_a_format_1_file_keyed_by_question_id_is_still_read(tmp_path: Path) -> None:
    q1a = records()[0]
    (tmp_path / lb.LABELS_FILE).write_text(json.dumps(
        {lb.legacy_key(q1a.qid, q1a.method, q1a.answer): {"right": False, "note": "old"}}), encoding="utf-8")
    row = fx.rows_of([q1a], lb.load_labels(tmp_path))[0]
    assert (row.human_right, row.human_note) == (False, "old")
    lb.save_label(tmp_path, lb.label_key("another?", "a", "x"), lb.RunLabel(True))  # rewritten as format 2
    assert json.loads((tmp_path / lb.LABELS_FILE).read_text(encoding="utf-8"))["format"] == lb.FORMAT
    assert fx.rows_of([q1a], lb.load_labels(tmp_path))[0].human_right is False


def _claimed(question: str, method: str, answer: str, claims: list[tuple[str, str]]) -> EvalRecord:
    return EvalRecord(qid="c", question=question, answers=["Paris"], method=method, params_hash="h", answer=answer,
                      error="", metrics={"em": 0.0, "f1": 0.0, "acc": 0.0, "coverage": 1.0}, hallucinated=False,
                      abstained=False, verdict={"claims": [{"text": t, "label": lab} for t, lab in claims],
                                                "labels": [lab for _t, lab in claims]})


def test_claim_and_item_labels_are_counted_on_the_row_and_in_the_claim_agreement(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = _claimed("Where was X born?", "kg-rag", "X was born in Lyon. He moved.",
                 [("X was born in Lyon.", "supported"), ("He moved.", "not_found"), ("odd", "unparsed")])
    key = lb.label_key(r.question, r.method, r.answer)
    lb.save_claim_label(tmp_path, lb.claim_key(key, "X was born in Lyon."), lb.ClaimLabel(True))  # judge right
    lb.save_claim_label(tmp_path, lb.claim_key(key, "He moved."), lb.ClaimLabel(False, "it says so"))  # judge wrong
    lb.save_claim_label(tmp_path, lb.claim_key(key, "odd"), lb.ClaimLabel(True))  # unparsed: in no agreement
    lb.save_item_label(tmp_path, lb.item_key(key, "doc:1#c0"), lb.ItemLabel(True))
    lb.save_item_label(tmp_path, lb.item_key(key, "tri:9"), lb.ItemLabel(False, "another person"))
    labels = lb.load_labels(tmp_path)
    row = fx.rows_of([r], labels)[0]
    assert (row.human_claims_right, row.human_claims_wrong) == (2, 1)
    assert (row.human_items_relevant, row.human_items_irrelevant) == (1, 1)
    assert labels.items_of(key) == {"doc:1#c0": lb.ItemLabel(True), "tri:9": lb.ItemLabel(False, "another person")}
    # judge said (supported, not supported); the person says (supported, supported)
    pairs = lb.claim_pairs(lb.record_claims([r]), labels)
    assert pairs == [(True, True), (False, True)]
    assert lb.agreement(pairs).agreement == 0.5
    (tmp_path / "r.jsonl").write_text(fx.to_jsonl([row]), encoding="utf-8")
    assert fx.read_jsonl(tmp_path / "r.jsonl") == [row]
    (tmp_path / "r.csv").write_text(fx.to_csv([row]), encoding="utf-8")
    assert fx.read_csv(tmp_path / "r.csv") == [row]

    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps(r.to_dict()) + "\n", encoding="utf-8")
    assert main(["failures", str(results), "--json", "--n-boot", "20", "--labels", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["human_claim_agreement"]["n"] == 2 and doc["human_claim_agreement"]["agreement"] == 0.5
    assert main(["failures", str(results), "--n-boot", "20", "--labels", str(tmp_path)]) == 0
    assert "claim labels vs the judge: n = 2, agreement 50%" in capsys.readouterr().out
