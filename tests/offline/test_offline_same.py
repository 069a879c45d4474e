"""The offline judge's same-country reader for yes/no answers (issue 22.3): both entities' countries
read from their definition sentences, compared; a missing country leaves the claim not_found."""
from __future__ import annotations

import re

import pytest

from kgviz.claims import short_claim
from kgviz.offline.judge import CheckResult, check_claim
from kgviz.offline.same import countries_in, parse
from kgviz.offline.support import sentences


def _judge(question: str, answer: str, items: list[tuple[str, str]]) -> CheckResult:
    claim = short_claim(question, answer)
    return check_claim(claim.text, items, focus=claim.focus, question=question)


VILLAGES = [("a", "Marufabad( also Romanized as Ma‘rūfābād) is a village in Kabutarsorkh Rural District, in the "
                  "Central District of Chadegan County, Isfahan Province, Iran."),
            ("b", "Nasamkhrali( previously known as Nasomkhari until 1955) is a village in the Telavi district "
                  "of Georgia.")]
Q_VILLAGES = "Are Marufabad and Nasamkhrali both located in the same country?"


@pytest.mark.parametrize("answer, label", [("no", "supported"), ("yes", "contradicted")])
def test_two_countries_read_and_compared(answer: str, label: str) -> None:
    res = _judge(Q_VILLAGES, answer, VILLAGES)
    assert res.label == label and "iran" in res.reason and "georgia" in res.reason
    texts = dict(VILLAGES)
    assert res.quote in texts[res.evidence[0]] and f'"{res.quote}"' in res.reason
    for m in res.matched:
        for w in m.split():
            assert re.search(rf"(?<!\w){re.escape(w)}(?!\w)", res.quote), (w, res.quote)
    assert "Iran" in res.matched


def test_a_demonym_and_a_country_name_are_the_same_country() -> None:
    items = [("a", "Andy Hilbert( born February 6, 1981) is an American former professional ice hockey player."),
             ("b", "Barbara Rylko-Bauer is an anthropologist of the United States.")]
    # "American" and "the United States" are two forms of one country
    q = "Are both Andy Hilbert and Barbara Rylko-Bauer from the same country?"
    assert _judge(q, "yes", items).label == "supported"
    assert _judge(q, "no", items).label == "contradicted"


@pytest.mark.parametrize("answer", ["yes", "no"])
def test_a_missing_country_is_not_found_whatever_the_answer(answer: str) -> None:
    items = [VILLAGES[0], ("b", "Nasamkhrali had 420 inhabitants in 2002.")]
    res = _judge(Q_VILLAGES, answer, items)
    assert res.label == "not_found" and "Nasamkhrali" in res.reason


def test_the_directors_countries_are_read_through_directed_by() -> None:
    items = [("a", "Levity is a 2003 drama film directed by Ed Solomon."),
             ("b", "Ed Solomon( born September 15, 1960) is an American screenwriter and director."),
             ("c", "I Come with the Rain is a 2009 thriller directed by Tran Anh Hung."),
             ("d", "Tran Anh Hung( born 23 December 1962) is a Vietnamese-born French film director.")]
    q = "Do both films Levity (Film) and I Come With The Rain have the directors that share the same nationality?"
    res = _judge(q, "no", items)
    assert res.label == "supported", res.reason
    assert "Ed Solomon" in res.reason and "Tran Anh Hung" in res.reason
    # "Vietnamese-born" is where he was born, not his nationality
    (got,) = countries_in(sentences([items[3]])[0], "Tran Anh Hung")
    assert got.countries == {"france"}


def test_a_film_is_not_its_directors_nationality() -> None:
    # the question asks for the directors; the films' own countries decide nothing
    items = [("a", "Levity is a 2003 American drama film directed by Ed Solomon."),
             ("c", "I Come with the Rain is a 2009 French thriller directed by Tran Anh Hung.")]
    q = "Do both films Levity (Film) and I Come With The Rain have the directors that share the same nationality?"
    assert _judge(q, "no", items).label == "not_found"


def test_the_question_is_parsed_into_its_two_entities_and_holder() -> None:
    assert parse("Are Paul Curtin and Robert Mcfarlane (Photographer) of the same nationality?") == (
        "Paul Curtin", "Robert Mcfarlane", "")
    assert parse("Do director of film Excalibur (Film) and director of film The Day They Robbed The Bank Of "
                 "England share the same nationality?") == (
        "Excalibur", "The Day They Robbed The Bank Of England", "director")
    assert parse("Which film came out first, A or B?") is None


def test_other_yes_no_questions_are_not_checked() -> None:
    res = _judge("Are Agnes Vohl and Tomas Aldric from the same town?", "no", [("a", "Agnes Vohl was born in Tarrow.")])
    assert res.label == "not_found" and "yes/no" in res.reason


def test_a_holder_named_in_a_sentence_that_refers_back() -> None:
    items = [("a", "Chatterbox is a 1936 comedy film. It was directed by George Nicholls, Jr."),
             ("b", "George Nicholls, Jr. (1897 – 1939) was an American film director."),
             ("c", "Swept from the Sea is a 1997 drama film directed by Beeban Kidron."),
             ("d", "Beeban Kidron (born 2 May 1961) is a British film director.")]
    q = "Do both films Chatterbox (1936 Film) and Swept From The Sea have the directors that share the same nationality?"
    assert _judge(q, "no", items).label == "supported"
    assert _judge(q, "yes", items).label == "contradicted"
