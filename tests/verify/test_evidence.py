"""Claim -> evidence (kgviz.verify.evidence): the cited items' passages, the quoted span inside
them and the graph nodes to highlight, read from the judge's verdict fields only."""
from __future__ import annotations

from tests.support.fixture_graph import DOCS, FixtureGraph

from kgviz.methods.base import ContextItem, RetrievedContext
from kgviz.run import Run
from kgviz.types import Usage
from kgviz.verify.evidence import claim_evidence, find_span, find_words
from kgviz.verify.judge import ClaimVerdict

QUESTION = "Where is the Harbour Library?"


def _run(items: list[ContextItem], sources: list[ContextItem] | None = None) -> Run:
    return Run("kg-rag", QUESTION, {}, RetrievedContext(items=items, sources=sources or []), "Lisbon", [], Usage(),
               "offline")


def test_a_fact_is_shown_in_its_source_chunk_with_the_quoted_sentence_marked(kg: FixtureGraph) -> None:
    tid = kg.triples[("Marta Ruiz", "designed", "Harbour Library")]
    chunk = kg.chunks["Marta Ruiz"][0]
    fact = ContextItem(tid, "triple", "Marta Ruiz designed Harbour Library", source=chunk)
    quote = "She designed the Harbour Library in Lisbon, which opened in 1998."
    claim = ClaimVerdict("The Harbour Library is in Lisbon.", "supported", [tid], "states it", quote=quote,
                         matched=["Harbour Library", "Lisbon"])
    ev = claim_evidence(_run([fact]), claim, kg.store)
    [item] = ev.items
    assert item.passage == DOCS["Marta Ruiz"][0] and item.passage_id == chunk
    assert item.passage[item.span[0]: item.span[1]] == quote and item.span_is == "the judge's quote"
    assert [item.passage[a:b] for a, b in item.words] == ["Harbour Library", "Lisbon"]
    assert ev.node_ids == (tid, chunk)  # the fact and the chunk it was read from
    assert claim_evidence(_run([fact]), claim, None).items[0].passage == fact.text  # no store: the item itself


def test_a_contradicted_claim_marks_the_contradicting_span_and_unknown_ids_are_listed(kg: FixtureGraph) -> None:
    chunk = kg.chunks["Harbour Library"][1]
    item = ContextItem(chunk, "chunk", DOCS["Harbour Library"][1], source="Harbour Library")
    quote = "The Harbour Library opened in 1998 and holds about 400,000 books."
    claim = ClaimVerdict("It opened in 2001.", "contradicted", [chunk, "tri:gone"], "states 1998", quote=quote,
                         matched=["1998", "opened"])
    ev = claim_evidence(_run([], sources=[item]), claim, kg.store)  # a note's source (kg-infused) is evidence too
    assert ev.label == "contradicted" and ev.missing == ("tri:gone",)
    [cited] = ev.items
    assert cited.passage[cited.span[0]: cited.span[1]] == quote
    assert sorted(cited.passage[a:b] for a, b in cited.words) == ["1998", "opened"]


def test_an_llm_verdict_without_a_quote_shows_the_items_whole_and_marks_nothing() -> None:
    item = ContextItem("doc:x#c0", "chunk", "Lisbon is the capital of Portugal.")
    ev = claim_evidence(_run([item]), ClaimVerdict("Lisbon is a capital.", "supported", ["doc:x#c0"], "it says so"),
                        None)
    assert [(i.passage, i.span, i.words) for i in ev.items] == [(item.text, None, ())]
    assert not ev.quoted_found and ev.node_ids == ("doc:x#c0",)


def test_spans_tolerate_line_breaks_and_words_match_whole_words_only() -> None:
    passage = "It opened\nin 1998. Later in 19981 it closed."
    span = find_span(passage, "It opened in 1998.")
    assert span == (0, 18)
    assert find_words(passage, span, ["1998", "in"]) == ((10, 12), (13, 17))
    assert find_span(passage, "") is None and find_span(passage, "not here") is None
