"""Mention spans (kgviz.offline.mentions): the context-free part of a sentence's spans is
remembered per sentence text (issue 29); what depends on the context (pronouns) never is."""
from __future__ import annotations

from kgviz.facts.triples import Mention
from kgviz.offline import mentions
from kgviz.offline.mentions import Context, find_mentions

SENTENCE = 'He met Ada Lovelace in June 1843 and read "Sketch of the Engine" with 3 friends.'


def test_a_sentence_read_again_gets_the_same_spans_and_its_own_pronouns() -> None:
    mentions._text_mentions.cache_clear()
    nobody = find_mentions(SENTENCE, Context())
    ctx = Context()
    ctx.set_subject(Mention("Charles Babbage", "person"))
    babbage = find_mentions(SENTENCE, ctx)
    assert mentions._text_mentions.cache_info().hits == 1  # the second reading was remembered
    assert [s.text for s in nobody] == ["Ada Lovelace", "June 1843", "Sketch of the Engine", "3 friends"]
    assert babbage[0] == mentions.Span(0, 2, "He", "pron", "person")  # the context still decides pronouns
    assert babbage[1:] == nobody
    # a caller changing its list changes nothing remembered
    nobody.clear()
    assert find_mentions(SENTENCE, Context())[0].text == "Ada Lovelace"


def test_remembered_spans_equal_freshly_made_ones() -> None:
    texts = [SENTENCE, "It was built in 1901 by the Orrin Bridge Company.", "The 12th Duke of York, Prince Andrew, lived there."]
    ctx = Context()
    ctx.set_subject(Mention("Orrin Bridge", "place"))
    mentions._text_mentions.cache_clear()
    fresh = [find_mentions(t, ctx) for t in texts]
    again = [find_mentions(t, ctx) for t in texts]
    assert again == fresh and mentions._text_mentions.cache_info().hits == len(texts)
