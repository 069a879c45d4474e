"""The resolved rows' size (issue 29): an edge is list slots, not an object; an entity keeps the
sentences its description can use; the rows and their order are the ones the rules give."""
from __future__ import annotations

import tracemalloc
import weakref
from typing import Iterator

import pytest

from kgviz.facts.parse import parse_triples
from kgviz.facts.triples import ExtractedTriple, ExtractionOutput, Mention
from kgviz.index.assemble import assemble, finalise
from kgviz.index.resolve import merge_descriptions
from kgviz.types import Chunk

SENTENCE = "Edda Lunn designed the Orrin Bridge."


def _chunk(doc: str, n: int, text: str) -> Chunk:
    return Chunk(id=f"{doc}#c{n}", doc_id=doc, ord=n, text=text, n_tokens=len(text.split()))


def _same_fact_in(n_chunks: int) -> tuple[list[tuple[str, list[Chunk]]], dict[str, ExtractionOutput]]:
    """``n_chunks`` one-chunk documents, each stating the same fact with one shared sentence."""
    fact = ExtractedTriple(Mention("Edda Lunn", "person"), "designed", Mention("Orrin Bridge"), sentence=SENTENCE)
    chunks = [_chunk(f"doc:{i}", 0, SENTENCE) for i in range(n_chunks)]
    return [(c.doc_id, [c]) for c in chunks], {c.id: ExtractionOutput([fact]) for c in chunks}


def _blocks_held_by_assemble(n_chunks: int) -> int:
    docs, outputs = _same_fact_in(n_chunks)
    tracemalloc.start()
    try:
        acc = assemble(docs, outputs)
        blocks = sum(s.count for s in tracemalloc.take_snapshot().statistics("filename"))
    finally:
        tracemalloc.stop()
    assert len(acc.triples) == 1 and len(acc.from_chunk) == n_chunks and len(acc.mentions) == 2 * n_chunks
    return blocks


def test_an_edge_is_list_slots_not_an_object_per_edge() -> None:
    """One fact stated by 4,000 chunks: 4,000 FROM_CHUNK and 8,000 MENTIONS edges. Before, each
    edge was a (from, to) tuple kept as a dict key, and each entity kept a set of its chunks:
    three objects per chunk; now the edges are flat lists (a few reallocated blocks in all)."""
    small, large = _blocks_held_by_assemble(2000), _blocks_held_by_assemble(6000)
    per_chunk = (large - small) / 4000
    assert per_chunk < 0.1, f"{per_chunk:.2f} allocated blocks kept per chunk"


def test_edges_iterate_as_the_pairs_first_seen_each_once() -> None:
    c0 = _chunk("doc:a", 0, "Edda Lunn designed the Orrin Bridge. Lunn designed the Orrin Bridge.")
    c1 = _chunk("doc:a", 1, "The Orrin Bridge crosses the River Ossel. Edda Lunn designed it.")
    outputs = {
        c0.id: parse_triples("(Edda Lunn; designed; Orrin Bridge)\n(Lunn; designed; the Orrin Bridge)"),
        c1.id: parse_triples("(Orrin Bridge; crosses; River Ossel)\n(Edda Lunn; designed; Orrin Bridge)"),
    }
    acc = assemble([("doc:a", [c0, c1])], outputs)
    designed, crosses = list(acc.triples)
    assert list(acc.from_chunk) == [(designed, c0.id), (crosses, c1.id), (designed, c1.id)]
    assert list(acc.mentions) == [(c0.id, "ent:edda lunn"), (c0.id, "ent:orrin bridge"),
                                  (c1.id, "ent:orrin bridge"), (c1.id, "ent:river ossel"), (c1.id, "ent:edda lunn")]
    rows = list(acc.from_chunk_rows())
    assert [r["sentence"] for r in rows] == [
        "Edda Lunn designed the Orrin Bridge.", "The Orrin Bridge crosses the River Ossel.", "Edda Lunn designed it."]
    assert acc.entities["ent:orrin bridge"].chunks == [c0.id, c1.id]


def test_a_chunk_read_twice_is_an_error_not_double_counted() -> None:
    docs, outputs = _same_fact_in(1)
    acc = assemble(docs, outputs)
    with pytest.raises(ValueError, match="assembled twice"):
        assemble(docs, outputs, acc)
    with pytest.raises(ValueError, match="assembled twice"):
        assemble(docs + docs, outputs)


def test_an_entity_keeps_the_sentences_its_description_uses() -> None:
    """With ``max_sentences`` an entity keeps its first distinct sentences only: the description
    and a merge into an earlier build's description are the ones all its sentences give."""
    sents = [f"Lunn built bridge number {i}." for i in range(40)]
    c = _chunk("doc:a", 0, " ".join(sents + sents))
    outputs = {c.id: ExtractionOutput([ExtractedTriple(Mention("Lunn"), "built", Mention(f"Bridge {i % 40}"), sentence=s)
                                       for i, s in enumerate(sents + sents)])}
    full = assemble([("doc:a", [c])], outputs)
    capped = assemble([("doc:a", [c])], outputs, max_sentences=3)
    lunn_full, lunn = full.entities["ent:lunn"], capped.entities["ent:lunn"]
    assert lunn_full.sentences == sents and lunn.sentences == sents[:3]
    assert lunn.description(3) == lunn_full.description(3)
    for old in ("", sents[1], f"{sents[0]} {sents[2]}", "Lunn was an engineer."):
        assert merge_descriptions(old, lunn.sentences, 3) == merge_descriptions(old, lunn_full.sentences, 3)
    finalise(capped, {})
    finalise(full, {})
    assert [t.to_row() for t in capped.triples.values()] == [t.to_row() for t in full.triples.values()]


def test_nested_facts_take_their_forms_in_one_pass() -> None:
    """A fact about a fact about a fact: finalise fills each from the one inside it."""
    c = _chunk("doc:a", 0, "Mira said that Tesk claimed the Orrin Bridge crosses the Ossel in 1903.")
    outputs = {c.id: parse_triples("(Mira; said; (Tesk; claimed; ((Orrin Bridge; crosses; Ossel); since; 1903)))")}
    acc = assemble([("doc:a", [c])], outputs)
    finalise(acc, {"ent:ossel": "River Ossel"})
    said = next(t for t in acc.triples.values() if t.relation == "said")
    assert said.object == "(Tesk; claimed; ((Orrin Bridge; crosses; River Ossel); since; 1903))"
    assert said.text == "Mira said Tesk claimed Orrin Bridge crosses River Ossel since 1903"


def test_consume_frees_each_chunks_output_once_its_rows_are_made() -> None:
    """With ``consume`` a document's extraction outputs are gone (freed, not only unlisted) before
    the next document is read, and the rows are the ones the outputs give when kept."""
    docs, outputs = _same_fact_in(3)
    kept = assemble(docs, dict(outputs))
    refs = {cid: weakref.ref(out) for cid, out in outputs.items()}
    alive_when_read: list[list[str]] = []

    def documents() -> Iterator[tuple[str, list[Chunk]]]:
        for doc in docs:
            alive_when_read.append(sorted(cid for cid, ref in refs.items() if ref() is not None))
            yield doc

    acc = assemble(documents(), outputs, consume=True)
    ids = [c.id for _, chunks in docs for c in chunks]
    assert alive_when_read == [ids, ids[1:], ids[2:]] and outputs == {}
    finalise(acc, {})
    finalise(kept, {})
    assert [t.to_row() for t in acc.triples.values()] == [t.to_row() for t in kept.triples.values()]
    assert list(acc.from_chunk_rows()) == list(kept.from_chunk_rows()) and list(acc.mentions) == list(kept.mentions)
