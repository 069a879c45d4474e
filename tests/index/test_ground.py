"""kgviz.index.ground: a fact is kept only when its names are in its chunk (issue 23)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kgviz.facts.parse import parse_triples
from kgviz.index.ground import (
    NOT_IN_TEXT,
    PROMPT_EXAMPLE,
    Source,
    example_names,
    fact_names,
    ground_output,
    grounding_note,
)
from kgviz.ingest import chunk_document, load_paths
from kgviz.offline.extract import extract_offline
from kgviz.offline.lexicon import split_predicate
from kgviz.prompts.extraction import EXTRACT_TRIPLES_EXAMPLES

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data" / "corpus"
TEXT = ("The Ossel Marine Institute was founded in 1921 by Agnes Vohl. Vohl led the Institute for "
        "twenty-six years. Its ship, the Aster Wren, measured 2,140 metres at the Ossel Trench. "
        "The KMI archive holds the logs. Lunn's bridge over the Tarrow crosses the river.")


def reply_of_examples() -> str:
    return "\n".join(ln for ln in EXTRACT_TRIPLES_EXAMPLES.splitlines() if ln.startswith("("))


def grounded(reply: str, text: str = TEXT, title: str = ""):  # noqa: ANN201
    return ground_output(parse_triples(reply, split_predicate=split_predicate), text, title)


@pytest.mark.parametrize("name", [
    "Ossel Marine Institute", "the Ossel Marine Institute", "ossel marine institute", "An Aster Wren",
    "2,140 metres", "2140 metres", "twenty-six years", "Institute's", "Lunn", "Tarrow",
])
def test_names_written_as_the_text_writes_them_are_found(name: str) -> None:
    assert Source(TEXT).find(name) is not None


@pytest.mark.parametrize("name", ["Tarroin", "Tarroin Bridge", "Ana Pell", "1926", "Ossel Marine College", "Vey Dam"])
def test_names_the_text_does_not_hold_are_not_found(name: str) -> None:
    assert Source(TEXT).find(name) is None


def test_alias_rules_surname_and_acronyms_both_ways() -> None:
    src = Source(TEXT)
    assert src.find("Agnes Vohl").how == "text"
    assert src.find("Edda Lunn").how == "surname"  # the chunk says "Lunn's bridge"
    assert src.find("Tarrow Bridge") is None  # a head noun is never matched by its last word
    kmi = Source("The Kellhaven Marine Institute opened in 1901.")
    assert kmi.find("KMI").how == "acronym"
    assert src.find("Kellhaven Marine Institute").how == "acronym"  # the chunk says "KMI"


def test_a_misspelt_first_name_is_not_found_through_the_surname_rule() -> None:
    src = Source(TEXT)  # "founded in 1921 by Agnes Vohl. Vohl led the Institute ..."
    assert src.find("Ange Vohl") is None  # the text's own first name is Agnes
    assert src.find("Karl Vohl") is None
    assert src.find("Agnes Maria Vohl") is None  # a given name of the model's own
    assert src.find("Agnes Vohl").how == "text"


@pytest.mark.parametrize("text, name", [
    ("Lunn's bridge over the Tarrow crosses the river.", "Edda Lunn"),  # the surname alone
    ("The bridge was built by E. Lunn in 1821.", "Edda Lunn"),  # an initial in the text
    ("The bridge was built by Edda Lunn in 1821. Lunn trained apprentices.", "E. Lunn"),  # ... in the name
    ("The bridge was built by Edda Maria Lunn in 1821.", "Edda Lunn"),  # a middle name the model left out
    ("Dr Lunn built the bridge in 1821.", "Edda Lunn"),  # an honorific is no given name
    ("In 1821 the bridge opened. Then Lunn built forty more.", "Edda Lunn"),  # nor a stopword
    ("The bridge opened in 1821. Lunn built forty more.", "Edda Lunn"),  # nor a word across a stop
])
def test_real_aliases_stay_found_through_the_surname_rule(text: str, name: str) -> None:
    m = Source(text).find(name)
    assert m is not None and m.how == "surname"


def test_a_descriptive_phrase_is_found_when_its_words_are_in_one_sentence() -> None:
    src = Source(TEXT)
    m = src.find("the logs the KMI archive holds")
    assert m is not None and m.how == "words"
    assert src.find("the logs of the Tarroin archive") is None  # a word of the model's own
    assert src.find("logs of the Aster Wren") is None  # words from two sentences


def test_a_reply_made_of_the_prompts_examples_keeps_nothing() -> None:
    out = grounded(reply_of_examples())
    parsed = parse_triples(reply_of_examples())
    assert out.triples == [] and len(out.rejected) == len(parsed.triples) == 26
    assert {r.reason for r in out.rejected} == {PROMPT_EXAMPLE}
    assert out.status == "partial" and "26 fact(s) not found" in out.warnings[-1]
    assert {"ana pell", "vey dam", "halberg", "salt road", "pell"} <= example_names()


def test_example_names_count_only_when_the_chunk_lacks_them() -> None:
    text = "The Vey Dam holds back the River Sarn. It was designed by Oskar Linde."
    out = grounded("(Vey Dam; holds back; River Sarn)\n(Oskar Linde; designed; Vey Dam)", text)
    assert len(out.triples) == 2 and out.rejected == []


def test_invented_names_are_rejected_as_not_in_the_text_and_hypernodes_keep_their_found_fact() -> None:
    reply = ("(Tarroin Bridge; crosses; Tarrow)\n"
             "((Agnes Vohl; founded; Ossel Marine Institute); in year; 1921)\n"
             "((Agnes Vohl; led; the Institute); in year; 1926)\n"
             "(Théodore Brandt; studied at; Ossel Marine Institute)")
    out = grounded(reply)
    kept = [t.render() for t in out.triples]
    assert kept == ["((Agnes Vohl; founded; Ossel Marine Institute); in year; 1921)", "(Agnes Vohl; led; the Institute)"]
    assert [(r.reason, r.name) for r in out.rejected] == [
        (NOT_IN_TEXT, "Tarroin Bridge"), (NOT_IN_TEXT, "1926"), (PROMPT_EXAMPLE, "Théodore Brandt")]


def test_a_counting_loop_is_cut_and_its_invented_years_rejected() -> None:
    loop = "\n".join(f"((Ossel Marine Institute; was led for; twenty-six years); in year; {y})"
                     for y in range(1921, 1930))
    parsed = parse_triples(loop, split_predicate=split_predicate)
    assert len(parsed.triples) == 3 and parsed.n_malformed == 1 and "counts on" in parsed.warnings[0]
    out = ground_output(parsed, TEXT)
    assert [t.render() for t in out.triples] == [
        "((Ossel Marine Institute; was led for; twenty-six years); in year; 1921)",
        "(Ossel Marine Institute; was led for; twenty-six years)"]
    assert [r.name for r in out.rejected] == ["1922", "1923"]


def test_offline_facts_of_the_sample_are_all_found() -> None:
    """The offline extractor reads names from the text: the check must accept every one (the
    golden traces and the offline graph rest on it)."""
    docs = load_paths([SAMPLE]).documents
    n = 0
    for d in docs:
        for c in chunk_document(d, chunk_tokens=300, overlap=30):
            out = extract_offline(c.text, 80, d.title)
            checked = ground_output(out, c.text, d.title)
            assert checked.rejected == [], [r.describe() for r in checked.rejected]
            assert checked is out
            n += len(out.triples)
    assert n > 300


def test_grounding_note_marks_the_names_in_their_sentence() -> None:
    sentence = "The Ossel Marine Institute was founded in 1921 by Agnes Vohl."
    note = grounding_note(fact_names("Agnes Vohl", "((Agnes Vohl; founded; Ossel Marine Institute); in year; 1921)"), sentence)
    assert note == "The «Ossel Marine Institute» was founded in «1921» by «Agnes Vohl»."
    assert grounding_note(["Tarroin"], sentence).endswith("[not in this sentence: Tarroin]")
    assert grounding_note(["x"], "") == ""
