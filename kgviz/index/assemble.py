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
    text: str = ""

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


@dataclass
class Assembled:
    triples: dict[str, TripleRow] = field(default_factory=dict)
    from_chunk: dict[tuple[str, str], str] = field(default_factory=dict)  # (triple, chunk) -> sentence
    mentions: dict[tuple[str, str], None] = field(default_factory=dict)
    entities: dict[str, EntityAgg] = field(default_factory=dict)
    n_dropped: int = 0  # triples whose subject or object normalised to nothing, or self-loops
    # facts an earlier build already wrote: they get this batch's FROM_CHUNK edges, nothing else
    stored: set[str] = field(default_factory=set)

    def _new(self) -> Iterator[TripleRow]:
        return (t for t in self.triples.values() if t.id not in self.stored)

    # the row makers below are iterators: the write stage loads them in bounded batches and never
    # holds a whole table of row dicts (issue 29)
    def from_chunk_rows(self) -> Iterator[dict[str, str]]:
        return ({"from": t, "to": c, "sentence": s} for (t, c), s in self.from_chunk.items())

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
        reads them: issue 29, an aggregate is ~1.2 KB, about half of the resolved rows)."""
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
) -> Assembled:
    """Rows for every chunk in ``docs_chunks`` ([(doc_id, chunks)]) that has an output."""
    acc = acc or Assembled()
    for doc_id, chunks in docs_chunks:
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
        aliases = document_aliases(forms)
        for c in chunks:
            out = outputs.get(c.id)
            if not out or not out.triples:
                continue
            sentences = split_sentences(c.text)
            for t in out.triples:
                sentence = t.sentence or best_sentence(t.natural(), sentences)
                rt = _resolve(t, aliases)
                if rt is None:
                    acc.n_dropped += 1
                    continue
                _register(rt, acc, doc_id, c.id, sentence)
    return acc


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


def _register(rt: _RT, acc: Assembled, doc_id: str, chunk_id: str, sentence: str) -> str:
    ids = []
    for kind, eid, payload in (rt.subject, rt.object):
        if kind == "triple":
            assert isinstance(payload, _RT)
            ids.append(_register(payload, acc, doc_id, chunk_id, sentence))
        else:
            assert not isinstance(payload, _RT)
            mention, key = payload
            agg = acc.entities.get(eid)
            if agg is None:
                agg = acc.entities[eid] = EntityAgg(eid, eid[len("ent:") :])
            agg.add(mention.text, key, mention.type, sentence, chunk_id)
            # the aggregate's id string, not this mention's equal copy: one object per entity
            # however many mentions and facts name it (issue 29)
            acc.mentions[(chunk_id, agg.id)] = None
            ids.append(agg.id)
    relation = " ".join(rt.triple.relation.split())
    tid = triple_id(ids[0], relation, ids[1], rt.triple.kind)
    row = acc.triples.get(tid)
    if row is None:
        row = acc.triples[tid] = TripleRow(
            tid, relation, ids[0], ids[1], rt.subject[0] == "triple", rt.object[0] == "triple",
            chunk_id, doc_id, sentence, rt.triple.kind,
        )
    acc.from_chunk.setdefault((row.id, chunk_id), sentence)  # the row's id string, as for entities
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

    Module functions, not closures: a recursive closure is a reference cycle (the function, its
    cell, the function), and one over ``acc`` kept every resolved row alive after the build let
    them go, until the cyclic garbage collector next ran a full pass (issue 29: through the
    doc_layer and ket stages, where ``memory.give_back`` found nothing freed to hand back)."""
    done: dict[str, tuple[str, str]] = {}  # id -> (bracketed form, natural text)
    for tid in acc.triples:
        _forms(acc, names, done, tid)


def _display_name(acc: Assembled, names: dict[str, str], eid: str) -> str:
    if eid in names:
        return names[eid]
    agg = acc.entities.get(eid)
    return agg.name if agg else eid


def _forms(acc: Assembled, names: dict[str, str], done: dict[str, tuple[str, str]], tid: str) -> tuple[str, str]:
    """(bracketed form, natural text) of triple ``tid``, its subject, object and text set."""
    if tid in done:
        return done[tid]
    t = acc.triples[tid]
    s_br, s_nat = (_forms(acc, names, done, t.subject_id) if t.subject_is_triple
                   else (_display_name(acc, names, t.subject_id),) * 2)
    o_br, o_nat = (_forms(acc, names, done, t.object_id) if t.object_is_triple
                   else (_display_name(acc, names, t.object_id),) * 2)
    t.subject = f"({s_br})" if t.subject_is_triple else s_br
    t.object = f"({o_br})" if t.object_is_triple else o_br
    t.text = f"{s_nat} {t.relation} {o_nat}"
    done[tid] = (f"{t.subject}; {t.relation}; {t.object}", t.text)
    return done[tid]
