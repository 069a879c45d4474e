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
    key = lb.label_key("q1", "a", "Paris")
    lb.save_label(tmp_path, key, lb.RunLabel(False, "gold is wrong here"))
    assert lb.load_labels(tmp_path) == {key: lb.RunLabel(False, "gold is wrong here")}
    assert lb.label_key("q1", "a", "Paris, France") != key
    lb.save_label(tmp_path, key, lb.RunLabel(None, ""))
    assert lb.load_labels(tmp_path) == {}
    (tmp_path / lb.LABELS_FILE).write_text("{", encoding="utf-8")
    with pytest.raises(EvaluationError, match="human labels"):
        lb.load_labels(tmp_path)


def test_rows_carry_labels_into_exports_and_the_agreement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recs = records()
    q1a, q1b = recs[0], recs[1]  # a right, b wrong (automatically)
    lb.save_label(tmp_path, lb.label_key(q1a.qid, q1a.method, q1a.answer), lb.RunLabel(True))
    lb.save_label(tmp_path, lb.label_key(q1b.qid, q1b.method, q1b.answer), lb.RunLabel(True, "a synonym"))
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
