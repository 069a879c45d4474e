"""The Explore page's and the trace labels' reads answered from the graph held in memory (issue 29).

Each function returns the rows of the ``kgviz.graph.explore`` / ``kgviz.graph.reads`` statement of
the same name (same keys, same values; ``tests/graph/test_memory_explore.py`` compares them on a
graph with hubs, self-loops, parallel edges, facts about facts and NULL columns). As statements
they scan whole tables whatever they return: at 100,000 passages (647k entities, 1.47M facts) an
entity's RELATED edges took 1.3-1.6 s, its facts (``subject_id = $id OR object_id = $id``) 1.5-2.1 s,
and a trace's fact ends and labels 2-3.4 s, so every Explore search and every Trace run waited
seconds for a handful of rows. Here they come from ``kgviz.graph.triple_graph`` (loaded once per
database state, shared with retrieval), and the columns it does not hold (an entity's type and
mention count, a fact's document) from primary-key lookups, the one read Kùzu 0.11.3 answers
without a scan. The entity name search (``explore.entities_named``: a ``lower(name) CONTAINS``
scan of 647k names, 0.09-0.34 s a search at 100,000 passages) reads every entity's name folded by
Kùzu's own ``lower`` (its case mapping is neither Python's nor Arrow's), held once per database
state in the statement's rank order (~0.3-0.5 s to load there), so a search is a byte search that
stops at its ``limit``-th match (5 ms there).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kgviz.graph import read_model, reads
from kgviz.graph.memory_reads import _distinct, _order  # one id list's distinct ids; Kùzu's string order
from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import (
    ChunkDocumentRow, DocumentRow, EntityInfoRow, EntitySummaryRow, EntityTripleRow, ExtractionRecordRow,
    RelatedAtRow, TripleLinkRow,
)
from kgviz.graph.triple_graph import triple_graph

Q_ENTITY_INFO = ("MATCH (e:Entity {id: $id}) RETURN e.id AS id, e.name AS name, e.type AS type, "
                 "e.description AS description, e.n_mentions AS n, e.origin AS origin")
Q_TRIPLE_DOC = "MATCH (t:Triple {id: $id}) RETURN t.doc_id AS doc_id"
Q_CHUNK = "MATCH (c:Chunk {id: $id}) RETURN c.id AS id, c.text AS text, c.doc_id AS doc_id"
Q_DOCUMENT_TITLE = "MATCH (d:Document {id: $id}) RETURN d.title AS title"
Q_DOCUMENT_LABEL = "MATCH (d:Document {id: $id}) RETURN d.id AS id, d.title AS title, d.text AS text"
Q_LABEL_TEXT = {t: f"MATCH (c:{t} {{id: $id}}) RETURN c.id AS id, c.text AS text" for t in ("Chunk", "SubChunk")}
# every entity's name as ``explore.entities_named`` compares it (lower() by Kùzu), with its rank keys
Q_ENTITY_NAMES = ("MATCH (e:Entity) RETURN e.id AS id, e.name AS name, lower(e.name) AS folded, e.type AS type, "
                  "e.n_mentions AS n")
Q_FOLD = "RETURN lower($q) AS q"  # the search text folded as the statement folds it (no table read)
NAMES_KEY = "graph.entity_names"
Q_EXTRACTION = ("MATCH (x:Extraction {chunk_id: $id}) RETURN x.chunk_id AS chunk_id, x.mode AS mode, "
                "x.prompt_name AS prompt_name, x.raw AS raw, x.status AS status, x.n_triples AS n_triples, "
                "x.n_malformed AS n_malformed, x.error AS error")


def related_at(store: GraphStore, ids: Sequence[str], limit: int) -> list[RelatedAtRow]:
    """RELATED edges with either end in ``ids``, each once, at most ``limit``: src, dst, rel, tid
    (``explore.related_at``). In edge order, so the rows kept under the limit are always the same
    ones (the statement's LIMIT kept whichever its scan met first)."""
    g = triple_graph(store)
    rows = [n for i in _distinct(ids) if (n := g.entity_at.get(i)) is not None]
    if not rows or limit <= 0:
        return []
    edges = np.unique(np.concatenate([g.related_out.edges(n) for n in rows] + [g.related_in.edges(n) for n in rows]))
    names, rel = g.entity_list, g.rel_values
    out = []
    for e in edges[:limit].tolist():
        out.append({"src": names[int(g.rel_src[e])], "dst": names[int(g.rel_dst[e])], "rel": rel["relation"][e],
                    "tid": rel["triple_id"][e]})
    return cast("list[RelatedAtRow]", out)


def triples_of_entity(store: GraphStore, entity_id: str, limit: int) -> list[EntityTripleRow]:
    """Facts with ``entity_id`` as subject or object, by (chunk_id, id), at most ``limit``: id,
    subject, relation, object, sentence, chunk_id, doc_id, origin, kind (``explore.triples_of_entity``)."""
    if limit <= 0:
        return []
    t = triple_graph(store).triples
    hit = pc.or_(pc.equal(t.column("subject_id"), entity_id), pc.equal(t.column("object_id"), entity_id))
    at = np.flatnonzero(pc.fill_null(hit, False).to_numpy(zero_copy_only=False))
    if not at.size:
        return []
    names = ("id", "subject", "relation", "object", "sentence", "chunk_id", "origin", "kind")
    taken = t.select(list(names)).take(pa.array(at, type=pa.int64()))
    rows = [dict(zip(names, values)) for values in zip(*(taken.column(n).to_pylist() for n in names))]
    rows.sort(key=lambda r: (_order(r["chunk_id"]), _order(r["id"])))
    out = []
    for r in rows[:limit]:
        found = store.query(Q_TRIPLE_DOC, {"id": r["id"]})
        out.append({"id": r["id"], "subject": r["subject"], "relation": r["relation"], "object": r["object"],
                    "sentence": r["sentence"], "chunk_id": r["chunk_id"],
                    "doc_id": found[0]["doc_id"] if found else None, "origin": r["origin"], "kind": r["kind"]})
    return cast("list[EntityTripleRow]", out)


def entity_infos(store: GraphStore, ids: Sequence[str]) -> list[EntityInfoRow]:
    """id, name, type, description, n, origin of the entities ``ids``, one row per distinct id in
    the order asked (``explore.entity_infos``), by primary-key lookups."""
    out: list[EntityInfoRow] = []
    for i in _distinct(ids):
        out += cast("list[EntityInfoRow]", store.query(Q_ENTITY_INFO, {"id": i}))
    return out


def chunks_with_documents(store: GraphStore, ids: Sequence[str]) -> list[ChunkDocumentRow]:
    """id, text, doc_id, title (None when the document is missing) of the chunks ``ids``, one row
    per distinct chunk in the order asked (``explore.chunks_with_documents``), by lookups."""
    out: list[ChunkDocumentRow] = []
    titles: dict[str, str | None] = {}
    for i in _distinct(ids):
        for r in store.query(Q_CHUNK, {"id": i}):
            doc = r["doc_id"]
            if doc not in titles:
                found = store.query(Q_DOCUMENT_TITLE, {"id": doc}) if doc is not None else []
                titles[doc] = found[0]["title"] if found else None
            out.append(cast(ChunkDocumentRow, {**r, "title": titles[doc]}))
    return out


def extraction_records(store: GraphStore, chunk_ids: Sequence[str]) -> list[ExtractionRecordRow]:
    """The Extraction rows of the chunks, one per distinct chunk that has one, in the order asked
    (``explore.extraction_records``), by lookups (chunk_id is the table's key)."""
    out: list[ExtractionRecordRow] = []
    for i in _distinct(chunk_ids):
        out += cast("list[ExtractionRecordRow]", store.query(Q_EXTRACTION, {"id": i}))
    return out


def triple_links(store: GraphStore, ids: Sequence[str]) -> list[TripleLinkRow]:
    """Subject and object of the facts ``ids``: id, s, o, s_name, o_name (``reads.triple_links``),
    one row per distinct id that is a fact, in the order asked."""
    g = triple_graph(store)
    rows = [n for i in _distinct(ids) if (n := g.triple_at.get(i)) is not None]
    picked = g.triple_columns(rows, ("id", "subject_id", "object_id", "subject", "object"))
    return cast("list[TripleLinkRow]", [{"id": r["id"], "s": r["subject_id"], "o": r["object_id"],
                                         "s_name": r["subject"], "o_name": r["object"]} for r in picked])


def triple_labels(store: GraphStore, ids: Sequence[str]) -> dict[str, str | None]:
    """{fact id: text} of the ids that are facts (``reads.triple_labels``)."""
    g = triple_graph(store)
    rows = [n for i in _distinct(ids) if (n := g.triple_at.get(i)) is not None]
    return {r["id"]: r["text"] for r in g.triple_columns(rows, ("id", "text"))}


# --- the entity name search (Explore) -----------------------------------------------------------------
class EntityNames:
    """Every entity's folded name in the order ``ORDER BY n DESC, name`` gives (Kùzu: a NULL count
    first, names bytewise; equal keys in table order, as its sort keeps them), as one UTF-8 byte
    string with each name's start and end offset. A substring of the bytes that lies inside one
    name is a substring of that name (UTF-8 never matches inside a character), so the first
    ``limit`` names holding the text are the statement's rows, found without looking past them."""

    def __init__(self, store: GraphStore) -> None:
        table = read_model.table(store, Q_ENTITY_NAMES)
        n = table.column("n")
        keys = pa.table({"counted": pc.is_valid(n), "n": pc.fill_null(n, 0), "name": table.column("name")})
        # a NULL count ranks above every count; Arrow's sort is stable and compares strings bytewise
        rank = pc.sort_indices(keys, sort_keys=[("counted", "ascending"), ("n", "descending"), ("name", "ascending")])
        # the rows stay where the read model holds them (a mapped file): a search takes its few
        self.rows, self.rank = table.select(["id", "name", "type", "n"]), rank.to_numpy()
        # a NULL name never matches (lower(NULL) CONTAINS q is NULL): an empty name cannot either
        folded = pc.fill_null(table.column("folded").take(rank), "").combine_chunks().cast(pa.large_string())
        self.ends: np.ndarray = np.frombuffer(folded.buffers()[1], dtype=np.int64)[folded.offset:folded.offset + len(folded) + 1]
        data = folded.buffers()[2]
        self.data: bytes = data.to_pybytes() if data is not None else b""

    def first(self, needle: bytes, limit: int) -> list[int]:
        """Rank positions of the first ``limit`` names that hold ``needle`` (not empty)."""
        found: list[int] = []
        at = int(self.ends[0]) if len(self.ends) else 0
        while len(found) < limit:
            p = self.data.find(needle, at)
            if p < 0:
                break
            row = int(np.searchsorted(self.ends, p, side="right")) - 1  # the name the match starts in
            end = int(self.ends[row + 1])
            if p + len(needle) <= end:  # inside it, not running on into the next name
                found.append(row)
            at = end  # a later match starting in this name runs past its end too
        return found


def entity_names(store: GraphStore) -> EntityNames:
    names: EntityNames = store.derived(NAMES_KEY, EntityNames)
    return names


def entities_named(store: GraphStore, text: str, limit: int) -> list[EntitySummaryRow]:
    """Entities whose name contains ``text`` (both folded by Kùzu's ``lower``), most mentioned
    first, then by name: id, name, type, n (``explore.entities_named``; as there, an empty text
    matches nothing). A negative ``limit`` is an error, as the statement's LIMIT."""
    if int(limit) < 0:
        raise ValueError(f"entities_named: limit must be 0 or more (got {limit})")
    if int(limit) == 0:
        return []
    folded = store.query(Q_FOLD, {"q": text})[0]["q"]
    if not folded:  # NULL, or '' (Kùzu: CONTAINS '' holds for no name)
        return []
    names = entity_names(store)
    at = names.first(str(folded).encode("utf-8"), int(limit))
    rows = names.rows.take(pa.array(names.rank[at], type=pa.int64())).to_pylist()
    return cast("list[EntitySummaryRow]", rows)


# --- the trace's human labels: documents and chunks by primary key --------------------------------------
# a key lookup is ~0.2 ms at 100,000 passages, an id list one scan of the table (IN) or one hash
# join against it (UNWIND, kgviz.graph.batching): 25-35 ms whatever the list's length (measured on
# the 1,261 documents and 1,295 sub-chunks of a ket-rag trace: 245 / 205 ms by key, 35 / 29 ms as
# one UNWIND). A longer list than this is read by the list statement, so no run pays more than before.
LABEL_LOOKUPS_MAX = 128


def _keyed(store: GraphStore, one: str, ids: Sequence[str], listed: Callable[[list[str]], list[dict[str, Any]]]
           ) -> list[dict[str, Any]]:
    """The row of each distinct id of ``ids`` that exists, in the order asked: by the key lookup
    ``one`` (a statement of ``$id``) per id, or for a long list by ``listed`` (its id-list read)."""
    asked = _distinct(ids)
    if len(asked) > LABEL_LOOKUPS_MAX:
        found = {r["id"]: r for r in listed(asked)}
        return [found[i] for i in asked if i in found]
    return [r for i in asked for r in store.query(one, {"id": i})]


def documents_for_labels(store: GraphStore, ids: Sequence[str]) -> list[DocumentRow]:
    """id, title, text of the documents ``ids``, one row per distinct id that is a document, in
    the order asked (``reads.documents_for_labels``), by primary-key lookups (``_keyed``)."""
    rows = _keyed(store, Q_DOCUMENT_LABEL, ids, lambda asked: cast("list[dict[str, Any]]",
                                                                    reads.documents_for_labels(store, asked)))
    return cast("list[DocumentRow]", rows)


def chunk_label_texts(store: GraphStore, table: str, ids: Sequence[str]) -> dict[str, str | None]:
    """{id: text} of the Chunk or SubChunk rows ``ids`` that exist (``reads.chunk_label_texts``),
    in the order asked, by primary-key lookups (``_keyed``)."""
    if table not in Q_LABEL_TEXT:
        raise ValueError(f"chunk_label_texts: {table!r} is not Chunk or SubChunk")
    rows = _keyed(store, Q_LABEL_TEXT[table], ids, lambda asked: [
        {"id": i, "text": t} for i, t in reads.chunk_label_texts(store, table, asked).items()])
    return {r["id"]: r["text"] for r in rows}
