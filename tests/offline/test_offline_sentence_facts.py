"""Offline extraction recall (issue 12): every named mention, number and date of a sentence is
reachable through a fact; the fallback facts are typed; noise words never become entities."""
from __future__ import annotations

from kgviz.facts.triples import RELATION_KIND, SENTENCE_KIND, SENTENCE_RELATION, ExtractedTriple, Mention
from kgviz.offline.extract import extract_offline
from kgviz.offline.sentence_facts import NOISE_WORDS, PASSAGE_RELATION, is_noise, normalise_key, title_mention

TEXT = (
    "Orla Venn (born 3 March 1931) was a painter whose works hang in Aldport, Dunmore and Kell Harbour. "
    "In a career of more than 40 years, she sold 212 paintings to the Veyn Museum of Art. "
    "What remains of her studio burned in 1977."
)


def _mentions(triples: list[ExtractedTriple]) -> set[str]:
    return {m.text for t in triples for m in t.mentions()}


def test_every_name_number_and_date_of_a_sentence_is_reachable() -> None:
    out = extract_offline(TEXT)
    got = _mentions(out.triples)
    for want in ("Orla Venn", "3 March 1931", "Aldport", "Dunmore", "Kell Harbour", "40 years", "212 paintings",
                 "Veyn Museum of Art", "1977"):
        assert want in got, want
    # the pattern extractor alone reads none of the parenthesised date, the list or the numbers
    assert not any(t.kind == RELATION_KIND and "3 March 1931" in _mentions([t]) for t in out.triples)


def test_sentence_facts_are_typed_and_carry_their_sentence() -> None:
    out = extract_offline(TEXT)
    facts = [t for t in out.triples if t.kind == SENTENCE_KIND]
    stated = [t for t in out.triples if t.kind == RELATION_KIND]
    assert facts and stated
    assert {t.relation for t in facts} <= {SENTENCE_RELATION, PASSAGE_RELATION}
    assert not {t.relation for t in stated} & {SENTENCE_RELATION, PASSAGE_RELATION}
    sentences = [s for s in TEXT.split(". ")]
    for t in facts:
        assert t.sentence and any(t.sentence.rstrip(".") == s.rstrip(".") for s in sentences)
        assert isinstance(t.subject, Mention) and isinstance(t.object, Mention)
    # "she" resolves: the museum hangs on Orla Venn, not on a word "she"; the third sentence has
    # no subject of its own, so its year hangs on the chunk's running subject
    by_object = {t.object.text: t.subject.text for t in facts}
    assert by_object["Veyn Museum of Art"] == "Orla Venn" and by_object["1977"] == "Orla Venn"
    # stated relations come first, so a max_triples cut drops fallback facts before them
    kinds = [t.kind for t in out.triples]
    assert kinds == sorted(kinds, key=lambda k: k != RELATION_KIND)


def test_a_mention_a_pattern_already_holds_gets_no_sentence_fact() -> None:
    out = extract_offline("Mira Tesk founded Tesk Works in 1921.")
    assert all(t.kind == RELATION_KIND for t in out.triples)
    assert {"Mira Tesk", "Tesk Works", "1921"} <= _mentions(out.triples)


def test_noise_words_never_become_entities() -> None:
    text = ("What the Orrin Bridge needed was paint. Those who crossed It said nothing. However, They "
            "left. Which of them came back in 1950? It was Who.")
    out = extract_offline(text, title="Orrin Bridge")
    got = _mentions(out.triples)
    assert "Orrin Bridge" in got and "1950" in got
    assert not [m for m in got if normalise_key(m) in NOISE_WORDS]
    assert is_noise("What") and is_noise("  It ") and is_noise("those") and not is_noise("Kell")


def test_the_passage_title_ties_the_passage_together() -> None:
    text = "The studio stood near Dunmore. Kell Arden bought it in 1950."
    out = extract_offline(text, title="Orla Venn (painter)")
    # no sentence names Orla Venn: the title (without its disambiguator) is the topic
    assert any(t.subject == Mention("Orla Venn") and t.object.text == "Dunmore" for t in out.triples)
    assert ExtractedTriple(Mention("Orla Venn"), PASSAGE_RELATION, Mention("Kell Arden"), kind=SENTENCE_KIND) in out.triples
    # a loader's record id is no title
    assert title_mention("musique-hr-00012") is None and title_mention("") is None
    plain = extract_offline(text, title="musique-hr-00012")
    assert "musique-hr-00012" not in _mentions(plain.triples)


def test_extraction_is_deterministic() -> None:
    a = extract_offline(TEXT, title="Orla Venn")
    b = extract_offline(TEXT, title="Orla Venn")
    assert [(t.render(), t.kind, t.sentence) for t in a.triples] == [(t.render(), t.kind, t.sentence) for t in b.triples]
    assert a.raw == b.raw


def test_place_compounds_counted_nouns_and_dates_inside_name_runs_are_mentions() -> None:
    text = ("Orla Venn was born in Dunmore, Veyn and died in Aldport. Aldport, Dunmore and Kell Harbour are towns. "
            "Single by Orla Venn Recorded August 16, 1967 Label Tesk. She opened 35 stores on June 6 for the 12th time.")
    got = _mentions(extract_offline(text).triples)
    assert {"Dunmore, Veyn", "August 16, 1967", "35 stores", "June 6", "12th"} <= got
    # a list is not a compound, and a date is not swallowed by the capitalised words before it
    assert not {"Aldport, Dunmore", "Dunmore, Kell Harbour", "Recorded August"} & got


def test_sentence_adverbs_are_no_topic() -> None:
    out = extract_offline("Similarly, the Orrin Bridge crossed the Vell near Dunmore.")
    assert "Similarly" not in _mentions(out.triples)
