"""SQuAD-style metrics. Expected values are worked out by hand from the SQuAD v1.1 definition:
lowercase, drop punctuation, drop a/an/the, collapse whitespace; F1 over bag-of-token overlap;
max over gold answers."""
from __future__ import annotations

import pytest

from kgviz.answer_norm import contains, normalize_answer
from kgviz.errors import EvaluationError
from kgviz.verify.metrics import accuracy, coverage, exact_match, f1_score, score


@pytest.mark.parametrize("raw, norm", [
    ("The Cat!", "cat"),
    ("  A  big   dog. ", "big dog"),
    ("an apple, the pear", "apple pear"),
    ("U.S.A.", "usa"),
    ("Theatre of the Absurd", "theatre of absurd"),  # "the" inside a word ("Theatre") stays
    ("the", ""),
    ("38 metres", "38 metres"),
    ("Tidewell's Line", "tidewells line"),
])
def test_normalize_answer(raw: str, norm: str) -> None:
    assert normalize_answer(raw) == norm


def test_exact_match_is_normalised_and_max_over_golds() -> None:
    assert exact_match("the Eiffel Tower", ["Eiffel Tower"]) == 1.0
    assert exact_match("Eiffel Tower in Paris", ["Eiffel Tower"]) == 0.0
    assert exact_match("Tidewell Line", ["Tidewell Shipping Company", "Tidewell Line."]) == 1.0


def test_f1_by_hand() -> None:
    # pred [eiffel, tower, in, paris] vs gold [eiffel, tower]: P = 2/4, R = 2/2 -> F1 = 2/3
    assert f1_score("Eiffel Tower in Paris", ["the Eiffel Tower"]) == pytest.approx(2 / 3)
    # repeated tokens count once each side: pred [x, x, y], gold [x, y, y] -> common 2, P = R = 2/3
    assert f1_score("x x y", ["x y y"]) == pytest.approx(2 / 3)
    # max over golds: "Denver Broncos" vs {"Broncos" (P 1/2, R 1 -> 2/3), "Denver Broncos" (1)}
    assert f1_score("Denver Broncos", ["Broncos", "Denver Broncos"]) == 1.0
    assert f1_score("Carolina Panthers", ["Denver Broncos"]) == 0.0
    assert f1_score("", ["Broncos"]) == 0.0
    assert f1_score("the", ["a"]) == 1.0  # both normalise to nothing: SQuAD counts that as agreement


def test_acc_and_coverage_are_whole_token_containment() -> None:
    assert accuracy("It was founded in 1898.", ["1898"]) == 1.0
    assert accuracy("founded in 18980", ["1898"]) == 0.0
    assert accuracy("insufficient information", ["1898"]) == 0.0
    assert contains("The Tidewell Line, a ferry company", "tidewell line")
    assert coverage("[1] Agnes Vohl was born in Tarrow.", ["Ventholm", "Tarrow"]) == 1.0
    assert coverage("", ["Tarrow"]) == 0.0


def test_score_bundles_the_four_metrics() -> None:
    m = score("the Tarrow harbour", "Vohl was born in Tarrow.", ["Tarrow"])
    assert (m.em, m.acc, m.coverage) == (0.0, 1.0, 1.0)
    assert m.f1 == pytest.approx(2 * (1 / 2) * 1 / (1 / 2 + 1))


def test_missing_gold_is_a_clear_error() -> None:
    with pytest.raises(EvaluationError, match="no gold answer"):
        exact_match("x", [])
    with pytest.raises(EvaluationError):
        f1_score("x", ["  "])
