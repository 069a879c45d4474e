"""The offline judge's sentence-level support (issue 22.3): the answer tied to the asked relation in
one sentence about the question's subject, and an explanation that quotes exactly what matched."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kgviz.claims import short_claim
from kgviz.offline.judge import CheckResult, check_claim
from kgviz.offline.support import fold, sentences

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"
# wrong answers a method gave (sample_recorded/README.md) or that sit next to the right words
WRONG = {"s01": ["1936"], "s02": ["52 metres"], "s03": ["Ventholm", "Kellhaven"], "s04": ["1911", "1930"],
         "s07": ["Mira Tesk"], "s08": ["Thomas Aldrick"], "s09": ["1921"], "s10": ["58 kilometres"],
         "s11": ["Agnes Vohl"], "s12": ["Tomas Aldric"]}


def _corpus() -> list[tuple[str, str]]:
    items = []
    for f in sorted((SAMPLE / "corpus").iterdir()):
        text = f.read_text(encoding="utf-8")
        items.append((f.stem, text.split("\n", 1)[1] if f.suffix == ".md" else text))
    return items


def _questions() -> list[dict]:
    return [json.loads(ln) for ln in (SAMPLE / "questions.jsonl").read_text(encoding="utf-8").splitlines() if ln]


def _judge(question: str, answer: str, items: list[tuple[str, str]]) -> CheckResult:
    claim = short_claim(question, answer)
    return check_claim(claim.text, items, focus=claim.focus, question=question)


def _verdicts() -> list[tuple[str, str, bool, CheckResult]]:
    items = _corpus()
    out = []
    for q in _questions():
        for answer, right in [(q["answers"][0], True)] + [(w, False) for w in WRONG.get(q["id"], [])]:
            out.append((q["id"], answer, right, _judge(q["question"], answer, items)))
    return out


VERDICTS = _verdicts()


def test_every_quote_is_a_sentence_of_the_evidence_and_every_matched_word_is_in_it() -> None:
    texts = dict(_corpus())
    quoted = [v for *_, v in VERDICTS if v.quote]
    assert len(quoted) >= 10  # most verdicts rest on a sentence
    for v in quoted:
        assert v.evidence, v
        assert v.quote in texts[v.evidence[0]], v  # verbatim, in the cited item
        for m in v.matched:
            for w in m.split():  # as written, a whole word of the quoted sentence
                assert re.search(rf"(?<!\w){re.escape(w)}(?!\w)", v.quote), (w, v.quote)
        assert f'"{v.quote}"' in v.reason  # the explanation quotes the same sentence


def test_the_sample_separates_right_from_wrong_answers() -> None:
    right = [v.label == "supported" for _, _, ok, v in VERDICTS if ok]
    wrong = [v.label == "supported" for _, _, ok, v in VERDICTS if not ok]
    passed = [(q, a, v.reason) for q, a, ok, v in VERDICTS if not ok and v.label == "supported"]
    assert sum(right) >= 10 and sum(wrong) == 0, passed


def test_a_two_hop_answer_is_supported_through_a_bridge_sentence_and_a_lookalike_is_not() -> None:
    by = {(q, a): v for q, a, _, v in VERDICTS}
    tarrow = by[("s03", "Tarrow")]
    assert tarrow.label == "supported" and "born" in tarrow.matched
    assert tarrow.quote == "Vohl was born in Tarrow on 3 March 1882."
    assert "Agnes Vohl founded the Ossel Marine Institute" in tarrow.reason  # the bridge, quoted
    # Thomas Aldrick was born in Ventholm; nothing says he founded the institute
    assert by[("s03", "Ventholm")].label == "not_found"


def test_the_answer_needs_the_asked_relation_in_its_own_sentence() -> None:
    items = [("c1", "Mira Tesk was the editor of the Kellhaven Courier. Edda Lunn designed the Orrin Bridge."),
             ("c2", "Mira Tesk said that the Orrin Bridge was unsafe.")]
    q = "Who designed the bridge that Mira Tesk said was unsafe?"
    assert _judge(q, "Edda Lunn", items).label == "supported"
    res = _judge(q, "Mira Tesk", items)
    assert res.label == "not_found" and "designed" in res.reason


def test_a_negated_relation_is_no_support() -> None:
    items = [("c1", "The Orrin Bridge was not designed by Edda Lunn."),
             ("c2", "Mira Tesk said that the Orrin Bridge was unsafe.")]
    res = _judge("Who designed the bridge that Mira Tesk said was unsafe?", "Edda Lunn", items)
    assert res.label == "contradicted" and res.quote == "The Orrin Bridge was not designed by Edda Lunn."
    assert all(m in res.quote for m in res.matched) and "designed" in res.matched


def test_a_name_shared_only_by_a_negated_sentence_is_no_bridge() -> None:
    items = [("c1", "Thomas Aldrick was born in Ventholm."),
             ("c2", "Thomas Aldrick should not be confused with the founder of the Ossel Marine Institute.")]
    res = _judge("In which town was the founder of the Ossel Marine Institute born?", "Ventholm", items)
    assert res.label == "not_found"


@pytest.mark.parametrize("answer, label", [("Agnes Vohl", "supported"), ("Tomas Aldric", "contradicted")])
def test_a_choice_question_compares_the_options_dates(answer: str, label: str) -> None:
    items = [("a", "Agnes Vohl (1882–1957) was an oceanographer from Lessary."),
             ("b", "Tomas Aldric (1895–1971) was a physicist and inventor.")]
    res = _judge("Who was born first, Agnes Vohl or Tomas Aldric?", answer, items)
    assert res.label == label and "1882" in res.reason and "1895" in res.reason
    assert res.quote in (items[0][1], items[1][1])


def test_a_choice_between_options_whose_dates_are_missing_is_not_found() -> None:
    items = [("a", "Agnes Vohl (1882–1957) was an oceanographer from Lessary."),
             ("b", "Tomas Aldric was a physicist and inventor.")]
    res = _judge("Who was born first, Agnes Vohl or Tomas Aldric?", "Agnes Vohl", items)
    assert res.label == "not_found" and "Tomas Aldric" in res.reason


def test_a_choice_question_reads_a_holders_date_through_one_bridge() -> None:
    items = [("a", "Mr. Fix-It is a 1918 American comedy film directed by Allan Dwan."),
             ("b", "Allan Dwan (April 3, 1885 – December 28, 1981) was a film director."),
             ("c", "People Not As Bad As They Seem is a 1997 film directed by Ivan Varga."),
             ("d", "Ivan Varga (born 1950) is a director.")]
    q = "Which film whose director is younger, Mr. Fix-It or People Not As Bad As They Seem?"
    assert _judge(q, "People Not As Bad As They Seem", items).label == "supported"
    assert _judge(q, "Mr. Fix-It", items).label == "contradicted"


def test_yes_no_answers_are_not_checked() -> None:
    res = _judge("Are Agnes Vohl and Tomas Aldric from the same town?", "no", [("a", "Agnes Vohl was born in Tarrow.")])
    assert res.label == "not_found" and "yes/no" in res.reason


def test_sentences_keep_their_text_verbatim_and_fold_accents() -> None:
    text = "Aschenbrödel is a ballet.  It was written by Johann Strauss II."
    ss = sentences([("x", text)])
    assert [s.text for s in ss] == ["Aschenbrödel is a ballet.", "It was written by Johann Strauss II."]
    assert ss[0].has("Aschenbrodel") and fold("Fix-It") == fold("Fix- It")
    assert ss[1].refers_back and ss[1].referents[0] is ss[0]


def test_sentences_read_through_the_caches_equal_a_plain_reading_and_share_nothing_mutable() -> None:
    """Parsed sentences are kept per text (kgviz.offline.support's caches): what a sentence holds is
    what reading its text afresh gives, the same text under two item ids gives two independent
    sentences, and the verdicts do not depend on whether the caches were warm."""
    from kgviz.offline import support
    from kgviz.offline.stem import stem
    from kgviz.text import sentence_spans

    items = _corpus()
    for cache in (support.fold, support._parse, support._spans, support._names):
        cache.cache_clear()
    cold = [(q, a, r.label, r.reason, r.quote) for q, a, _, r in _verdicts()]
    for item_id, text in items + [("copy", items[0][1])]:
        got = [s for s in sentences([(item_id, text)])]
        assert [(s.text, s.pos) for s in got] == [(text[a:b], n) for n, (a, b) in enumerate(sentence_spans(text))]
        for s, (a, _b) in zip(got, sentence_spans(text)):
            words = re.findall(r"[^\W_][\w'\u2019\-\.]*[^\W_]|[^\W_]", s.text)
            assert s.words == words and s.folded == [fold(w) for w in words]
            assert s.padded == " " + " ".join(f for f in s.folded if f) + " "
            assert s.before == " " + fold(text[:a]) + " "
            assert all(stem(part) in s.stems for f in s.folded for part in f.split())
    one, two = sentences([("a", items[0][1])])[0], sentences([("b", items[0][1])])[0]
    one.words.append("changed")
    one.stems["changed"] = "changed"
    assert "changed" not in two.words and "changed" not in two.stems and two.item == "b"
    assert [(q, a, r.label, r.reason, r.quote) for q, a, _, r in _verdicts()] == cold


def test_a_name_written_twice_in_the_quote_is_matched_once() -> None:
    # kg-retriever's evidence on the sample's first question: the triple's note names the subject, and
    # so does the sentence it quotes; the explanation showed 'Tidewell Line Tidewell Line'
    items = [("tri:db16", "Tidewell Line passage mentions Tobias Marrec: Tobias Marrec founded the Tidewell Line "
                          "in 1898 with two second-hand steamers.")]
    res = _judge("In what year was the Tidewell Line founded?", "1898", items)
    assert res.label == "supported"
    assert res.matched == ("1898", "founded", "Tidewell Line")
    assert "'Tidewell Line Tidewell Line'" not in res.reason and "'Tidewell Line'" in res.reason


def test_a_pronoun_after_a_name_is_no_bridge_to_the_sentence_before() -> None:
    # skeleton-rag's evidence on the sample's first question: "its" in the Tidewell Line's sentence is
    # the Tidewell Line's own, so nothing ties the university's founding year to the Tidewell Line
    items = [("ent:1874", "1874: Kellhaven University was founded in the city in 1874."),
             ("kellhaven", "Kellhaven is the capital of Lessary. Kellhaven University was founded in the city "
                           "in 1874. The Tidewell Line, the largest shipping company on the coast, has its "
                           "headquarters on Quay Street.")]
    res = _judge("In what year was the Tidewell Line founded?", "1874", items)
    assert res.label == "not_found" and "Tidewell Line" in res.reason, res
    # a pronoun before any name still speaks of the sentence before it
    items = [("vohl", "Agnes Vohl was an oceanographer. In 1882 she was born in Tarrow.")]
    assert _judge("In which town was Agnes Vohl born?", "Tarrow", items).label == "supported"


def test_a_chain_that_states_nothing_more_of_the_question_is_no_bridge() -> None:
    # skeleton-rag's evidence on the sample's first question: the university's founding year reaches the
    # Tidewell Line only through the city both are in; no sentence says when the Tidewell Line was founded
    items = [("univ", "Kellhaven University is a public university located in Kellhaven. It was founded in 1874 "
                      "by Oskar Fenn."),
             ("city", "Kellhaven is the capital of Lessary. The Tidewell Line, the largest shipping company on "
                      "the coast, has its headquarters on Quay Street.")]
    res = _judge("In what year was the Tidewell Line founded?", "1874", items)
    assert res.label == "not_found" and "'Tidewell Line'" in res.reason and "another subject" in res.reason, res
