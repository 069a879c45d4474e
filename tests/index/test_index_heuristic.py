"""The offline pattern extractor, sentence by sentence."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kgviz.offline.extract import extract_offline
from kgviz.facts.parse import parse_triples

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data" / "corpus"


def triples(text: str) -> list[str]:
    return [t.render() for t in extract_offline(text).triples]


def plain(text: str) -> set[str]:
    """Rendered triples with [type] tags removed, for readable assertions."""
    import re

    return {re.sub(r" \[[a-z]+\]", "", t) for t in triples(text)}


def test_born_in_with_year_hypernode() -> None:
    got = plain("Mira Tesk was born in Aldport in 1890.")
    assert "(Mira Tesk; was born in; Aldport)" in got
    assert "((Mira Tesk; was born in; Aldport); in year; 1890)" in got


def test_founded_in_year_hypernode_and_leading_adverbial() -> None:
    expected = {"(Kell Arden; founded; Tesk Works)", "((Kell Arden; founded; Tesk Works); in year; 1921)"}
    assert expected <= plain("Kell Arden founded Tesk Works in 1921.")
    assert expected <= plain("In 1921, Kell Arden founded Tesk Works.")


def test_said_that_hypernode() -> None:
    out = extract_offline("Mira Tesk said that the Orrin Bridge was unsafe.")
    (t,) = out.triples
    assert t.relation == "said" and t.subject.text == "Mira Tesk"
    assert t.object.render().startswith("(Orrin Bridge") and t.object.object.text == "unsafe"
    assert plain("According to Jon Varr, the Orrin Bridge opened in 1923.") == {
        "(Jon Varr; stated; (Orrin Bridge; opened in; 1923))"
    }


def test_passives_are_turned_active() -> None:
    assert "(Mira Tesk; designed; Orrin Bridge)" in plain("The Orrin Bridge was designed by Mira Tesk.")
    assert "(Ana Pell; wrote; The Salt Road)" in plain('"The Salt Road" was written by Ana Pell.')
    got = plain("The Orrin Bridge, designed by Mira Tesk, spans the River Vell.")
    assert {"(Mira Tesk; designed; Orrin Bridge)", "(Orrin Bridge; spans; River Vell)"} <= got


def test_common_relations() -> None:
    got = plain(
        "Aldport is the capital of Veyn. Dunmore is located in Veyn. Kell Arden works for Tesk Works. "
        "Mira Tesk married Jon Varr. Jon Varr directed Tesk Works. Mira Tesk studied at the University of Aldport."
    )
    assert {
        "(Aldport; is the capital of; Veyn)", "(Dunmore; is located in; Veyn)", "(Kell Arden; works for; Tesk Works)",
        "(Mira Tesk; married; Jon Varr)", "(Jon Varr; directed; Tesk Works)",
        "(Mira Tesk; studied at; University of Aldport)",
    } <= got


def test_pronouns_resolve_to_the_last_subject() -> None:
    got = plain("Mira Tesk was born in Aldport. She designed the Orrin Bridge. It crosses the River Vell.")
    assert "(Mira Tesk; designed; Orrin Bridge)" in got
    assert "(Orrin Bridge; crosses; River Vell)" in got


def test_appositive_and_copula() -> None:
    got = plain("Mira Tesk, a professor of engineering at the University of Aldport, designed the Orrin Bridge.")
    assert {
        "(Mira Tesk; is a; professor of engineering)",
        "(Mira Tesk; professor of engineering at; University of Aldport)",
        "(Mira Tesk; designed; Orrin Bridge)",
    } <= got
    assert "(Jon Varr; was a; journalist)" in plain("Jon Varr was a journalist.")


def test_coordination_and_shared_subject() -> None:
    got = plain("Mira Tesk and Jon Varr founded Tesk Works. Mira Tesk designed the Orrin Bridge and founded Vell Press.")
    assert {"(Mira Tesk; founded; Tesk Works)", "(Jon Varr; founded; Tesk Works)", "(Mira Tesk; founded; Vell Press)"} <= got


def test_types_and_values() -> None:
    out = extract_offline("Mira Tesk was born in Aldport on 5 June 1890. The Orrin Bridge is 146 metres long.")
    types = {m.text: m.type for t in out.triples for m in t.mentions()}
    assert types["Mira Tesk"] == "person" and types["5 June 1890"] == "date"


def test_nothing_from_lowercase_subjects_and_deterministic() -> None:
    assert triples("the bridge collapsed in the storm.") == []
    text = (SAMPLE / "tarrow.txt").read_text() if SAMPLE.exists() else "Mira Tesk founded Tesk Works."
    assert triples(text) == triples(text)


def test_raw_output_round_trips_through_the_parser() -> None:
    out = extract_offline("Kell Arden founded Tesk Works in 1921. Mira Tesk said that the Orrin Bridge was unsafe.")
    again = parse_triples(out.raw)
    assert [t.render() for t in again.triples] == [t.render() for t in out.triples]
    assert again.n_malformed == 0


@pytest.mark.skipif(not SAMPLE.exists(), reason="sample_data absent")
def test_sample_corpus_gives_a_usable_graph() -> None:
    facts: set[str] = set()
    for path in sorted(SAMPLE.iterdir()):
        facts |= plain(path.read_text())
    assert len(facts) > 80
    for fact in [
        "(Tobias Marrec; founded; Tidewell Line)",
        "(Edda Lunn; designed; Orrin Bridge)",
        "(Agnes Vohl; founded; Ossel Marine Institute)",
        "(Mira Tesk; said; (Orrin Bridge; was; unsafe))",
        "(Thomas Aldrick; founded; Saltwind Festival)",
    ]:
        assert fact in facts, fact


_WORDS = ["Mira", "Tesk", "the", "was", "born", "in", "1921", "said", "that", "He", "It", "She", ",", ".", "'s",
          "designed", "by", "University", "of", "and", "a", "(", ")", '"', "According", "to", "founded", "is"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=40).map(" ".join) | st.text(max_size=200))
@example("0,\u00c0")  # found by hypothesis: a number ending in a comma ("0,") did not survive the round trip
@example("It cost 7,Smith said")
def test_fuzz_any_text_never_raises_and_round_trips(text: str) -> None:
    out = extract_offline(text)
    again = parse_triples(out.raw)  # what a resumed build reads back must be what was extracted
    assert [t.render() for t in again.triples] == [t.render() for t in out.triples]
