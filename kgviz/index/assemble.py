"""Turn per-chunk extractions into graph rows (pure: no store, no embedder).

One call handles a batch of documents. Per document: entity keys and alias rules
(``kgviz.index.resolve``), then every triple and nested triple becomes a Triple row whose id
hashes (subject id, relation, object id, and the kind when it is not a stated relation).

One fact, one node: identical facts are one Triple wherever they were stated (chunk overlap, two
chunks, two documents, two builds: the id does not depend on where the fact came from), with a
FROM_CHUNK edge to every chunk that stated it, carrying the sentence it was read from. Before
issue 12 the document was part of the id, so a fact stated by four passages was four nodes and
kg-rag walked it twice / KET's skeleton channel listed it four times. The Triple row keeps the
first provenance seen (chunk_id, doc_id, sentence) for readers that show one; KG-Retriever's
per-document KG (§3.2.1) reads a document's facts through FROM_CHUNK, so a shared fact belongs to
every document that states it. Entities are shared across documents (rule 1 of resolve.py).
"""
from __future__ import annotations

import builtins
import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from kgviz.facts.triples import RELATION_KIND, ExtractedTriple, ExtractionOutput, Mention
from kgviz.index.resolve import EntityAgg, best_sentence, document_aliases, entity_id, normalise_key
from kgviz.text import split_sentences
from kgviz.types import Chunk

CORPUS = "corpus"


@dataclass(slots=True)  # one per fact: 1.4M at 100k passages, so no per-object __dict__ (issue 29)
class TripleRow:
    id: str
    relation: str
    subject_id: str
    object_id: str
    subject_is_triple: bool
    object_is_triple: bool
    chunk_id: str
    doc_id: str
    sentence: str
    kind: str = RELATION_KIND
    subject: str = ""  # filled by finalise() once entity names are known
    object: str = ""
    # the text of a fact about a fact (its inner fact reads as that fact's text, not as the
    # bracketed form); any other fact's text is made from its fields when asked (``text``): one
    # string fewer per fact (issue 29: 1.5M facts at 100k passages)
    nested_text: str = ""

    @property
    def text(self) -> str:
        """The fact as a sentence: subject, relation and object in words."""
        return self.nested_text or f"{self.subject} {self.relation} {self.object}"

    def to_row(self) -> dict[str, builtins.object]:  # builtins: `object` is a field here
        return {
            "id": self.id, "subject": self.subject, "relation": self.relation, "object": self.object,
            "subject_id": self.subject_id, "object_id": self.object_id, "text": self.text,
            "chunk_id": self.chunk_id, "doc_id": self.doc_id, "sentence": self.sentence, "origin": CORPUS,
            "kind": self.kind,
        }

    def embed_text(self) -> str:
        """What the Triple's vector is computed from: the fact's text, and for a sentence fact
        (whose relation only says "same sentence") its evidence sentence too, so a question
        finds the fact by what the sentence says."""
        return self.text if self.kind == RELATION_KIND or not self.sentence else f"{self.text}: {self.sentence}"


@dataclass(slots=True)
class Edges:
    """Edges in the order added, as flat columns, each edge added once; iterated as (from, to)
    pairs. Two or three list slots per edge where a dict keyed by (from, to) tuples held a tuple
    and a dict entry (issue 29: ~1.5M FROM_CHUNK and ~2M MENTIONS edges at 100k passages, each
    a small object that stayed in Python's arenas after the rows were let go)."""

    froms: list[str] = field(default_factory=list)
    tos: list[str] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)  # FROM_CHUNK's: the sentence each was read from

    def add(self, frm: str, to: str, sentence: str | None = None) -> None:
        self.froms.append(frm)
        self.tos.append(to)
        if sentence is not None:
            self.sentences.append(sentence)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return zip(self.froms, self.tos)

    def __len__(self) -> int:
        return len(self.froms)


@dataclass
class Assembled:
    triples: dict[str, TripleRow] = field(default_factory=dict)
    from_chunk: Edges = field(default_factory=Edges)  # (triple, chunk), with the sentence
    mentions: Edges = field(default_factory=Edges)  # (chunk, entity)
    entities: dict[str, EntityAgg] = field(default_factory=dict)
    n_dropped: int = 0  # triples whose subject or object normalised to nothing, or self-loops
    # facts an earlier build already wrote: they get this batch's FROM_CHUNK edges, nothing else
    stored: set[str] = field(default_factory=set)
    # an entity keeps this many of its sentences (its description is the first ones; None: all)
    max_sentences: int | None = None
    # each distinct relation text once, shared by the facts that state it
    relations: dict[str, str] = field(default_factory=dict, repr=False)
    chunks_read: set[str] = field(default_factory=set, repr=False)  # a chunk's rows are made once

    def _new(self) -> Iterator[TripleRow]:
        return (t for t in self.triples.values() if t.id not in self.stored)

    # the row makers below are iterators: the write stage loads them in bounded batches and never
    # holds a whole table of row dicts (issue 29)
    def from_chunk_rows(self) -> Iterator[dict[str, str]]:
        edges = self.from_chunk
        return ({"from": t, "to": c, "sentence": s} for t, c, s in zip(edges.froms, edges.tos, edges.sentences))

    def subj_rows(self, to_triple: bool) -> Iterator[dict[str, str]]:
        return ({"from": t.id, "to": t.subject_id} for t in self._new() if t.subject_is_triple == to_triple)

    def obj_rows(self, to_triple: bool) -> Iterator[dict[str, str]]:
        return ({"from": t.id, "to": t.object_id} for t in self._new() if t.object_is_triple == to_triple)

    def related_rows(self) -> Iterator[dict[str, str]]:
        return (
            {"from": t.subject_id, "to": t.object_id, "relation": t.relation, "triple_id": t.id, "origin": CORPUS}
            for t in self._new()
            if not t.subject_is_triple and not t.object_is_triple
        )

    def keep_entities(self, ids: Iterable[str]) -> None:
        """Keep only these entities' aggregates (the others' rows are written and nothing later
        reads them: issue 29, an aggregate is ~0.6 KB, about half of the resolved rows)."""
        self.entities = {eid: self.entities[eid] for eid in ids}

    def merges(self) -> list[tuple[str, list[str], int]]:
        """(canonical name, other surface forms merged into it, occurrences) for entities that
        were written more than one way in this batch."""
        out = []
        for e in self.entities.values():
            name = e.name
            others = [f for f in e.surface_forms if f != name]
            if others:
                out.append((name, others, e.n_occurrences))
        return sorted(out, key=lambda m: (-m[2], m[0]))


@dataclass
class _RT:
    """A triple with both ends resolved: (kind, id-or-None, payload) per end."""

    triple: ExtractedTriple
    subject: tuple[str, str, _RT | tuple[Mention, str]]
    object: tuple[str, str, _RT | tuple[Mention, str]]


def assemble(
    docs_chunks: Iterable[tuple[str, list[Chunk]]],
    outputs: dict[str, ExtractionOutput],
    acc: Assembled | None = None,
    *,
    max_sentences: int | None = None,
    consume: bool = False,
) -> Assembled:
    """Rows for every chunk in ``docs_chunks`` ([(doc_id, chunks)]) that has an output. A new
    ``acc`` keeps ``max_sentences`` sentences per entity (None: all; a description is the first
    ``BuildParams.description_max_sentences``). A chunk is read once: a chunk already read
    (here or into ``acc`` before) is a ValueError. With ``consume`` each chunk's output is taken
    out of ``outputs`` once its rows are made: a caller that lets the extraction go has it freed
    as the rows are made, and the rows reuse its memory (issue 29: at 100k passages the outputs
    and the rows were both held until the stage's end)."""
    acc = acc or Assembled(max_sentences=max_sentences)
    for doc_id, chunks in docs_chunks:
        aliases = document_aliases(_surface_forms(chunks, outputs))
        for c in chunks:
            if c.id in acc.chunks_read:
                raise ValueError(f"chunk {c.id} is assembled twice")
            acc.chunks_read.add(c.id)
            _read_chunk(acc, doc_id, c, outputs.pop(c.id, None) if consume else outputs.get(c.id), aliases)
    return acc


def _surface_forms(chunks: list[Chunk], outputs: dict[str, ExtractionOutput]) -> dict[str, Counter[str]]:
    """{key: surface forms with counts} of every mention in a document's chunks."""
    forms: dict[str, Counter[str]] = {}
    for c in chunks:
        out = outputs.get(c.id)
        for t in out.triples if out else []:
            for m in t.mentions():
                key = normalise_key(m.text)
                if key:  # a Counter made only for a new key, not for every mention
                    counts = forms.get(key)
                    if counts is None:
                        counts = forms[key] = Counter()
                    counts[m.text] += 1
    return forms


def _read_chunk(acc: Assembled, doc_id: str, c: Chunk, out: ExtractionOutput | None, aliases: dict[str, str]) -> None:
    """Register every fact of chunk ``c``'s output, with the sentence it was read from."""
    if not out or not out.triples:
        return
    sentences: list[str] | None = None  # split only for a fact that came without its sentence
    reading = _Reading(doc_id, c.id, set())
    for t in out.triples:
        sentence = t.sentence
        if not sentence:
            sentences = split_sentences(c.text) if sentences is None else sentences
            sentence = best_sentence(t.natural(), sentences)
        rt = _resolve(t, aliases)
        if rt is None:
            acc.n_dropped += 1
            continue
        _register(rt, acc, reading, sentence)


@dataclass(slots=True)
class _Reading:
    """The chunk whose facts are being registered. Its rows are registered together, so an edge
    from it is new when it is new in this chunk: ``linked`` holds the entities and facts it has
    an edge to so far (entity and fact ids never coincide: "ent:" and "tri:")."""

    doc_id: str
    chunk_id: str
    linked: set[str]


def _resolve_end(term: object, aliases: dict[str, str]) -> tuple[str, str, _RT | tuple[Mention, str]] | None:
    if isinstance(term, ExtractedTriple):
        inner = _resolve(term, aliases)
        return None if inner is None else ("triple", "", inner)
    assert isinstance(term, Mention)
    key = normalise_key(term.text)
    if not key:
        return None
    return ("entity", entity_id(aliases.get(key, key)), (term, key))


def _resolve(t: ExtractedTriple, aliases: dict[str, str]) -> _RT | None:
    s = _resolve_end(t.subject, aliases)
    o = _resolve_end(t.object, aliases)
    if s is None or o is None or not t.relation.strip():
        return None
    if s[0] == o[0] == "entity" and s[1] == o[1]:
        return None  # "Lunn married Edda Lunn" after aliasing: a self-loop says nothing
    return _RT(t, s, o)


def _register(rt: _RT, acc: Assembled, reading: _Reading, sentence: str) -> str:
    chunk_id = reading.chunk_id
    ids = []
    for kind, eid, payload in (rt.subject, rt.object):
        if kind == "triple":
            assert isinstance(payload, _RT)
            ids.append(_register(payload, acc, reading, sentence))
        else:
            assert not isinstance(payload, _RT)
            mention, key = payload
            agg = acc.entities.get(eid)
            if agg is None:
                agg = acc.entities[eid] = EntityAgg(eid, eid[len("ent:") :])
            agg.add(mention.text, key, mention.type, sentence, chunk_id, acc.max_sentences)
            # the aggregate's id string, not this mention's equal copy: one object per entity
            # however many mentions and facts name it (issue 29)
            if agg.id not in reading.linked:
                reading.linked.add(agg.id)
                acc.mentions.add(chunk_id, agg.id)
            ids.append(agg.id)
    relation = " ".join(rt.triple.relation.split())
    tid = triple_id(ids[0], relation, ids[1], rt.triple.kind)
    row = acc.triples.get(tid)
    if row is None:
        relation = acc.relations.setdefault(relation, relation)
        row = acc.triples[tid] = TripleRow(
            tid, relation, ids[0], ids[1], rt.subject[0] == "triple", rt.object[0] == "triple",
            chunk_id, reading.doc_id, sentence, rt.triple.kind,
        )
    if row.id not in reading.linked:  # the row's id string, as for entities
        reading.linked.add(row.id)
        acc.from_chunk.add(row.id, chunk_id, sentence)
    return row.id


def triple_id(subject_id: str, relation: str, object_id: str, kind: str = RELATION_KIND) -> str:
    """The id of a fact: the same (subject, relation, object) is one Triple wherever it was read
    (relation compared case- and space-insensitively). A kind other than a stated relation is
    part of the fact, so a sentence fact never merges into a stated one."""
    rel = " ".join(relation.split()).lower()
    extra = "" if kind == RELATION_KIND else f"|{kind}"
    digest = hashlib.sha1(f"{subject_id}|{rel}|{object_id}{extra}".encode("utf-8")).hexdigest()
    return f"tri:{digest[:16]}"


def finalise(acc: Assembled, names: dict[str, str]) -> None:
    """Fill subject/object/text of every triple from entity display names (``names`` holds
    names of entities already in the graph; new ones come from ``acc.entities``).

    One pass in the order the facts were made: a fact about a fact comes after it (its id is
    made from the inner one's), so an inner fact's forms are set when the outer one reads them.
    Module functions, not closures: a recursive closure is a reference cycle (the function, its
    cell, the function), and one over ``acc`` kept every resolved row alive after the build let
    them go, until the cyclic garbage collector next ran a full pass (issue 29: through the
    doc_layer and ket stages, where ``memory.give_back`` found nothing freed to hand back)."""
    for t in acc.triples.values():
        s_br, s_nat = _end(acc, names, t.subject_id, t.subject_is_triple)
        o_br, o_nat = _end(acc, names, t.object_id, t.object_is_triple)
        t.subject, t.object = s_br, o_br
        if t.subject_is_triple or t.object_is_triple:
            t.nested_text = f"{s_nat} {t.relation} {o_nat}"


def _display_name(acc: Assembled, names: dict[str, str], eid: str) -> str:
    if eid in names:
        return names[eid]
    agg = acc.entities.get(eid)
    return agg.name if agg else eid


def _end(acc: Assembled, names: dict[str, str], end_id: str, is_triple: bool) -> tuple[str, str]:
    """(the end as the bracketed form writes it, as the text reads it): an entity's display name
    both times; a fact as "(subject; relation; object)" and its text."""
    if not is_triple:
        name = _display_name(acc, names, end_id)
        return name, name
    inner = acc.triples[end_id]
    return f"({inner.subject}; {inner.relation}; {inner.object})", inner.text
