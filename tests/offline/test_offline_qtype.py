"""The one question-type classifier of the offline toolkit (kgviz.offline.qtype)."""
from __future__ import annotations

import pytest

from kgviz.offline.qtype import question_type


@pytest.mark.parametrize("question,qtype", [
    ("How many films did he score?", "number"),
    ("How much did the bridge cost?", "number"),
    ("What percentage of the vote did she win?", "number"),
    ("How tall is the Orrin Bridge tower?", "number"),
    ("When was Tyler Bates born?", "date"),
    ("In what year was the film released?", "date"),
    ("On which date did the line open?", "date"),
    ("Is Tyler Bates American?", "yesno"),
    ("Did the bridge open before the railway?", "yesno"),
    ("Who directed the film?", "person"),
    ("The bridge was designed by whom?", "person"),
    ("Where was it produced?", "place"),
    ("Which country is Lima in?", "place"),
    ("In which island was she born?", "place"),
    ("What nationality is Adam Collis?", "entity"),
])
def test_question_type(question: str, qtype: str) -> None:
    assert question_type(question) == qtype


def test_an_age_at_a_moment_is_a_number_not_a_date() -> None:
    # the two former classifiers disagreed here: the "when" clause only fixes the moment
    assert question_type("How old was Mira Tesk when the Orrin Bridge opened?") == "number"
    assert question_type("How long after the war did the bridge open?") == "number"
    assert question_type("When did Mira Tesk turn 40?") == "date"


def test_an_auxiliary_opening_wins_over_a_wh_word_inside() -> None:
    # "Was the engineer who ..." asks yes or no; the "who" starts a relative clause
    assert question_type("Was the engineer who designed the bridge born in Aldport?") == "yesno"
    assert question_type("Who was the engineer that designed the bridge?") == "person"
