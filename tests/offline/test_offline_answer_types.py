"""The offline answer is of the asked type, and the offline judge refuses one that is not (issue 12,
item 6). Passages are written for these tests in the style of the encyclopedia text kgviz reads."""
from __future__ import annotations

import pytest

from kgviz.claims import short_claim
from kgviz.methods.base import ContextItem, RetrievedContext
from kgviz.offline.answer import extractive_answer
from kgviz.offline.answer_types import kind_in_context, span_kind, type_mismatch
from kgviz.offline.judge import WRONG_TYPE_REASON, check_claim
from kgviz.offline.qtype import answer_type
from kgviz.prompts.answer import INSUFFICIENT
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.run import Run
from kgviz.types import Usage
from kgviz.verify.judge import verify_run

BRIDGE = ("The Orrin Bridge is a stone arch bridge over the Tarrow River. The bridge, which links the harbour at "
          "Port Aldmere with the old town, was designed by the engineer Mira Tesk and opened in 1921. It is 212 "
          "metres long and carries 4 lanes of traffic.")
ENGINEER = ("Mira Tesk (1874\u20131950) was a Danish civil engineer. Mira Tesk was born to Anna Tesk, a weaver "
            "from Kellhaven, and trained at the Royal Academy of Aldport.")
FILM = ("Scott Derrickson is an American director and screenwriter. In 1995 Scott Derrickson, then living in "
        "Los Angeles, directed the film \"Love in the Ruins\", his first feature.")
SHIP = ("The Aster Wren was a research ship launched at Kellhaven in 1936. She was built by the Tidewell Shipping "
        "Company for the Ossel Marine Institute, which used her until 1971.")


@pytest.fixture(scope="module")
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


# --- the classifier ------------------------------------------------------------------------------
@pytest.mark.parametrize("question,kind", [
    ("Which Canadian rock band released a song called \"Counterparts\" and had a drummer who was inducted "
     "into the Modern Drummer Hall of Fame?", "organisation"),  # the wh-noun, not the relative "who"
    ("Lorenzo Monaco was influenced by which Italian painter and architect?", "person"),
    ("The King of Hollywood starred in what 1932 American pre-Code drama film?", "title"),
    ("Fiske O'Hara was born in what city in Knox County, Maine?", "place"),
    ("What is the place of birth of the director of film The Midnight After?", "place"),
    ("What is the date of death of the composer of song Limehouse Blues?", "date"),
    ("Valuair was acquired in 2005 by a low-cost airline based where?", "place"),
    ("Hugo Rodriguez is a Spanish footballer who plays for a team in the autonomous community of what?", "entity"),
    ("What kind of musician does John Bonham count as?", "entity"),
])
def test_answer_type_reads_the_wh_phrase(question: str, kind: str) -> None:
    assert answer_type(question).kind == kind


def test_answer_type_names_units_options_and_what_it_accepts() -> None:
    how_long = answer_type("How long is the river that flows through Tarrow?")
    assert (how_long.kind, how_long.measure, how_long.unit) == ("number", True, "long")
    assert answer_type("How many members were in the group whose sub-unit is Bastarz?").unit == "members"
    assert answer_type("Is Rutgers University or Brown University public?").options == (
        "Rutgers University", "Brown University")
    assert answer_type("Who was born first Iain Pears or Richard Llewellyn ?").options == (
        "Iain Pears", "Richard Llewellyn")
    # "who" may be a band, "where" a university; "which actor" must be a person
    assert answer_type("Who released the album Hemispheres?").accepts == ("person", "organisation")
    assert answer_type("Where did Timothy Shriver's father study?").accepts == ("place", "organisation")
    assert answer_type("Which actor played Hook?").accepts == ("person",)


# --- span types ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text,span,kind", [
    (BRIDGE, "Port Aldmere", "place"),
    (BRIDGE, "Mira Tesk", "person"),  # "the engineer Mira Tesk"
    (BRIDGE, "Tarrow River", "place"),
    (ENGINEER, "Anna Tesk", "person"),  # "Anna Tesk, a weaver"
    (ENGINEER, "Kellhaven", "place"),  # "from Kellhaven"
    (ENGINEER, "Royal Academy of Aldport", "organisation"),
    (FILM, "Love in the Ruins", "title"),
    (FILM, "Los Angeles", "place"),
    (SHIP, "Tidewell Shipping Company", "organisation"),
    ("Henrik Saal (born 12 March 1901) drew the first poster.", "Henrik Saal", "person"),
    ("Thomas Aldrick kept the light for 31 years. He retired in 1951.", "Thomas Aldrick", "person"),
    ("The Salt Road is a 1958 drama film starring Ines Varga, Tomas Hale and Piet Morrow.", "Piet Morrow", "person"),
    ("The Rules of the Game is a 1939 French film directed by Jean Renoir.", "French", "nationality"),
    ("The earl died at Northampton during the Hundred Years' War.", "Hundred Years' War", "event"),
    ("He served under Prime Minister Hun Sen until 1998.", "Prime Minister Hun Sen", "person"),
])
def test_span_kind_reads_cues_around_the_span(text: str, span: str, kind: str) -> None:
    found = span_kind(span, text, text.index(span))
    assert found.kind == kind and found.cue


def test_a_span_with_no_cue_is_unknown_and_context_can_decide_it() -> None:
    text = "Kellhaven and Tarrow signed the charter."
    assert span_kind("Kellhaven", text, 0).kind == "unknown"
    assert kind_in_context("Kellhaven", [text, ENGINEER]).kind == "place"
    assert span_kind("5 June 1965").kind == "date" and span_kind("seven members").kind == "number"


# --- the answerer --------------------------------------------------------------------------------
@pytest.mark.parametrize("question,passage,expected,nearer_wrong", [
    # "Port Aldmere" comes first in the sentence and has two capitalised words, like a name
    ("Who designed the Orrin Bridge?", BRIDGE, "Mira Tesk", "Port Aldmere"),
    # "to Anna Tesk" looked like a place cue; she is a weaver
    ("Where was Mira Tesk born?", ENGINEER, "Kellhaven", "Anna Tesk"),
    ("Which film did Scott Derrickson direct in 1995?", FILM, "Love in the Ruins", "Los Angeles"),
    ("Which company built the research ship Aster Wren?", SHIP, "Tidewell Shipping Company", "Kellhaven"),
    ("How many lanes of traffic does the Orrin Bridge carry?", BRIDGE, "4", "212"),
    ("How long is the Orrin Bridge?", BRIDGE, "212 metres", "212"),
    # both are places; the text calls only one of them a river
    ("Which river flows through Kellhaven to the sea?", "Kellhaven is a port town. From its source in Aldmere "
     "County, the Lessary, the longest river of the county, flows through Kellhaven to the sea.", "Lessary",
     "Aldmere County"),
])
def test_the_answer_of_the_asked_type_beats_a_nearer_one(question: str, passage: str, expected: str,
                                                         nearer_wrong: str, embedder: HashingEmbedder) -> None:
    other = "The old town of Kellhaven grew around its fish market."
    answer, how = extractive_answer(question, [passage, other], embedder)
    assert answer == expected and answer != nearer_wrong
    assert how.startswith("extractive")


def test_a_number_counting_the_asked_noun_is_found_below_the_best_sentences(embedder: HashingEmbedder) -> None:
    passages = ["The Harbour Cup is awarded each winter at the league meeting in Kellhaven. The cup was first "
                "awarded in 1952 and is made of 3 kilograms of silver.",
                "The league meeting is attended by representatives of all 14 Aldport League clubs and their "
                "coaches."]
    answer, how = extractive_answer("How many clubs attend the meeting where the Harbour Cup is awarded?",
                                    passages, embedder)
    assert answer == "14" and "counting 'clubs'" in how


def test_a_name_with_an_initial_is_answered_whole(embedder: HashingEmbedder) -> None:
    passage = ["The Man in the High Castle (1962) is an alternate history novel by the writer Philip K. Dick."]
    answer, _ = extractive_answer("Who wrote The Man in the High Castle?", passage, embedder)
    assert answer == "Philip K. Dick"


def test_no_candidate_of_the_asked_type_abstains_and_says_why(embedder: HashingEmbedder) -> None:
    places_only = ["The Orrin Bridge is a stone arch bridge in Kellhaven, opened over the Tarrow River in 1921."]
    answer, how = extractive_answer("Who designed the Orrin Bridge?", places_only, embedder)
    assert answer == INSUFFICIENT
    assert "person" in how and "'Tarrow River' is place" in how
    no_date = ["Mira Tesk was a Danish engineer who designed the Orrin Bridge in Kellhaven."]
    answer, how = extractive_answer("When did Mira Tesk die?", no_date, embedder)
    assert answer == INSUFFICIENT and "a date" in how
    # a span no cue types is neither right nor wrong: it is still answered
    answer, _ = extractive_answer("Who designed the Orrin Bridge?",
                                  ["Edda Lunn designed the Orrin Bridge."], embedder)
    assert answer == "Edda Lunn"


# --- the judge -----------------------------------------------------------------------------------
def _judge(question: str, answer: str, items: list[tuple[str, str]]):
    claim = short_claim(question, answer)
    return check_claim(claim.text, items, HashingEmbedder(), focus=claim.focus, question=question)


def test_the_judge_refuses_a_wrong_type_answer_with_the_reason() -> None:
    items = [("doc:bridge#c0", BRIDGE)]
    wrong = _judge("Who designed the Orrin Bridge?", "Port Aldmere", items)
    assert wrong.label == "not_found" and wrong.evidence == ()
    assert wrong.reason.startswith(WRONG_TYPE_REASON)
    assert "a person" in wrong.reason and "'Port Aldmere' is a place" in wrong.reason
    right = _judge("Who designed the Orrin Bridge?", "Mira Tesk", items)
    assert right.label == "supported"
    late = _judge("In what year did the Orrin Bridge open?", "Tarrow River", items)
    assert late.label == "not_found" and "a date" in late.reason
    assert _judge("In what year did the Orrin Bridge open?", "1921", items).label == "supported"


def test_a_choice_answer_must_name_an_option() -> None:
    q = "Who was born first, Mira Tesk or Anna Tesk?"
    assert "neither" in type_mismatch(answer_type(q), "Kellhaven", [ENGINEER])
    assert type_mismatch(answer_type(q), "Mira Tesk", [ENGINEER]) == ""


def test_the_verdict_carries_the_type_mismatch_to_the_compare_page() -> None:
    reasoner = Reasoner(OfflineLLM(), HashingEmbedder())
    ctx = RetrievedContext(items=[ContextItem("doc:engineer#c0", "chunk", ENGINEER, n_tokens=30)])
    run = Run(method="text-rag", question="Where was Mira Tesk born?", params={}, context=ctx,
              answer="Anna Tesk", trace=[], usage=Usage(), mode="offline")
    verdict = verify_run(run, reasoner)
    assert verdict.hallucinated
    [claim] = verdict.claims
    assert claim.label == "not_found" and claim.reason.startswith(WRONG_TYPE_REASON)
    assert "'Anna Tesk' is a person" in claim.reason
    run.answer = "Kellhaven"
    assert not verify_run(run, reasoner).hallucinated
