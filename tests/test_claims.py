"""Claim splitting and abstention detection (offline heuristics)."""
from __future__ import annotations

import pytest

from kgviz.claims import is_abstention, is_short, locate
from kgviz.offline.claims import split_offline


@pytest.mark.parametrize("answer", [
    "insufficient information", "Insufficient information.", "I don't know", "I do not know.",
    "Cannot be determined.", "It cannot be determined from the context.",
    "The context does not contain the answer.", "The passages do not mention it.", "Unknown", "N/A", "",
    "Not enough information to answer.", "There is no information about the founder.",
])
def test_abstentions_are_recognised(answer: str) -> None:
    assert is_abstention(answer)
    assert split_offline("Who founded it?", answer) == []


@pytest.mark.parametrize("answer", ["Tarrow", "No", "Unknown Pleasures", "Nobody knows the author",
                                    "1898", "The Tidewell Line"])
def test_real_answers_are_not_abstentions(answer: str) -> None:
    assert not is_abstention(answer)


def test_short_answer_is_one_claim_about_the_question() -> None:
    answer = " Tarrow "
    [claim] = split_offline("Where was Agnes Vohl born?", answer)
    assert claim.text == 'The answer to "Where was Agnes Vohl born?" is Tarrow.'
    assert claim.focus == "Tarrow"
    assert answer[claim.start: claim.end] == "Tarrow"
    assert is_short("38 metres") and not is_short("One. Two.")


def test_long_answer_splits_at_sentences_and_conjoined_clauses() -> None:
    answer = ("Agnes Vohl was born in Tarrow and founded the Ossel Marine Institute in 1921. "
              "The institute is in Ventholm; it owned a research ship.")
    claims = split_offline("Tell me about Agnes Vohl.", answer)
    assert [c.text for c in claims] == [
        "Agnes Vohl was born in Tarrow.",
        "Agnes Vohl founded the Ossel Marine Institute in 1921.",  # subject borrowed from the left clause
        "The institute is in Ventholm.",
        "it owned a research ship.",
    ]
    # spans point into the answer, so the UI can colour them
    assert [answer[c.start: c.end] for c in claims] == [
        "Agnes Vohl was born in Tarrow", "founded the Ossel Marine Institute in 1921",
        "The institute is in Ventholm", "it owned a research ship"]
    assert all(c.focus == "" for c in claims)


def test_noun_coordination_is_not_split() -> None:
    answer = "Salt and fish were traded in Kellhaven by merchants from Tarrow and their sons for decades."
    assert len(split_offline("What was traded?", answer)) == 1


def test_locate_finds_verbatim_claims_only() -> None:
    answer = "Vohl was born in Tarrow. She founded an institute."
    assert locate(answer, "she founded an institute.") == (25, 49)
    assert locate(answer, "Agnes Vohl founded an institute") == (-1, -1)
