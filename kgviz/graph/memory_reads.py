"""The named reads of KET-RAG, KG-Infused RAG and KG-Retriever answered from the graph held in memory.

Each function returns the rows of the ``kgviz.graph.reads`` function of the same name (same
columns, same values; ``tests/graph/test_memory_reads.py`` compares them on a graph with hubs,
cycles, self-loops and parallel edges) without a Kùzu statement: on HotpotQA's 1,965 passages
those statements were ~60 ms of ket-rag's ~75 ms per question (an id list of more than a few ids
scans a whole table in Kùzu 0.11.3, ``kgviz.graph.batching``). Rows of a read without an order
come back in the order of the ids asked for (Kùzu's was no fixed order), one per distinct id;
``related_edges`` sorts as its statement's ORDER BY does. KG-Retriever's document layer comes as
the arrow table its statement gives, each vector bit for bit from the exact search's vector file;
where a vector is not there, the statement runs instead.

Entity and Triple rows come from ``kgviz.graph.triple_graph``; the MENTIONS and FROM_CHUNK links
from ``ChunkLinks`` and the sub-chunk texts from a dict, each loaded once per database state, from
the tables stored in the workspace for that state where there are some (``kgviz.graph.read_model``).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kgviz.graph import read_model, reads, vector_home
from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import (
    ChunkRow, EntityChunksRow, EntityRow, RelatedEdgeRow, SimilarDocRow, TripleAtEntityRow, TripleChunkRow,
    TripleSourceRow,
)
from kgviz.graph.triple_graph import triple_graph

Q_MENTIONS = "MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) RETURN e.id AS e, c.id AS c"
Q_FROM_CHUNK = "MATCH (t:Triple)-[:FROM_CHUNK]->(c:Chunk) RETURN t.id AS t, c.id AS c"
Q_HAS_CHUNK = "MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk) RETURN d.id AS d, c.id AS c"
Q_CHUNKS = ("MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk) RETURN c.id AS id, c.text AS text, c.ord AS ord, "
            "d.title AS title")
Q_DOCUMENTS = "MATCH (d:Document) RETURN d.id AS id, d.title AS title"
Q_SIMILAR_DOCS = "MATCH (a:Document)-[r:SIMILAR_DOC]->(b:Document) RETURN a.id AS src, b.id AS dst, r.weight AS weight"
Q_SUBCHUNK_TEXTS = "MATCH (s:SubChunk) RETURN s.id AS id, s.text AS text"
LINKS_KEY = "graph.chunk_links"
SUBCHUNKS_KEY = "graph.subchunk_texts"
DOCUMENTS_KEY = "graph.documents"


class ChunkLinks:
    """The chunks that mention each entity (MENTIONS), that each triple was read from
    (FROM_CHUNK) and of each document (HAS_CHUNK), and the reverse of the first two (what each
    chunk mentions / gave); one list entry per edge, in load order. Each is read and grouped
    when a method first needs it, once per database state (``GraphStore.derived``: ket-rag reads
    MENTIONS only, so it no longer waits for the other two at its first question)."""

    def __init__(self, store: GraphStore) -> None:
        self._store = store

    def _groups(self, query: str, key: str, value: str) -> _Groups:
        # the statement runs inside the load (not shared between the two groupings of one rel
        # table): a grouping is then always of the database state it is kept for
        groups: _Groups = self._store.derived(f"{LINKS_KEY}|{key}>{value}",
                                              lambda s: _Groups(read_model.table(s, query), key, value))
        return groups

    @property
    def mentions(self) -> _Groups:
        return self._groups(Q_MENTIONS, "e", "c")

    @property
    def chunk_entities(self) -> _Groups:
        return self._groups(Q_MENTIONS, "c", "e")

    @property
    def from_chunk(self) -> _Groups:
        return self._groups(Q_FROM_CHUNK, "t", "c")

    @property
    def chunk_triples(self) -> _Groups:
        return self._groups(Q_FROM_CHUNK, "c", "t")

    @property
    def has_chunk(self) -> _Groups:
        return self._groups(Q_HAS_CHUNK, "d", "c")


class _Groups:
    """{key: its values, one per edge, in load order}, read with ``get``: the edges sorted by key
    once (a stable sort of the keys' codes) and a key's list made when it is asked for. Making
    every list up front (an Arrow group-by to Python lists) was ~0.7 s of the first question at
    10,000 passages, for the few dozen keys a question reads; a Python loop over the edges took
    seconds."""

    def __init__(self, edges: pa.Table, key: str, value: str) -> None:
        codes = pc.dictionary_encode(edges.column(key).combine_chunks()) if edges.num_rows else None
        keys = codes.dictionary.to_pylist() if codes is not None else []
        self._at = {k: i for i, k in enumerate(keys)}
        index = np.asarray(codes.indices, dtype=np.int64) if codes is not None else np.zeros(0, np.int64)
        self._order = np.argsort(index, kind="stable").tolist()
        self._ptr = np.concatenate([[0], np.cumsum(np.bincount(index, minlength=len(keys)))]).tolist()
        self._values = edges.column(value).to_pylist() if edges.num_rows else []

    def get(self, key: str, default: Sequence[str] = ()) -> Sequence[str]:
        i = self._at.get(key)
        if i is None:
            return default
        return [self._values[j] for j in self._order[self._ptr[i]:self._ptr[i + 1]]]


def chunk_links(store: GraphStore) -> ChunkLinks:
    return ChunkLinks(store)


def _distinct(ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def entities(store: GraphStore, ids: Sequence[str]) -> list[EntityRow]:
    """Entities by id: id, name, description."""
    g = triple_graph(store)
    rows = [{"id": i, "name": g.entity_names[n], "description": g.entity_descriptions[n]}
            for i in _distinct(ids) if (n := g.entity_at.get(i)) is not None]
    return cast("list[EntityRow]", rows)


def entities_with_chunks(store: GraphStore, ids: Sequence[str]) -> list[EntityChunksRow]:
    """Entities by id with the chunks that mention them: id, name, description, origin, chunks."""
    g, links = triple_graph(store), chunk_links(store)
    rows = [{"id": i, "name": g.entity_names[n], "description": g.entity_descriptions[n],
             "origin": g.entity_origins[n], "chunks": list(links.mentions.get(i, ())) or None}
            for i in _distinct(ids) if (n := g.entity_at.get(i)) is not None]
    return cast("list[EntityChunksRow]", rows)


def triples_at_entities(store: GraphStore, ids: Sequence[str]) -> list[TripleAtEntityRow]:
    """Distinct triples with one of the entities as subject or object: id, text, s, o, sname,
    oname, relation, origin, chunk_id, kind, sentence (the first provenance)."""
    g = triple_graph(store)
    at = g.triples_at("Entity", _distinct(ids))
    seen: dict[str, TripleAtEntityRow] = {}
    for rows in at.values():
        for r in rows:
            if r["id"] not in seen:
                seen[r["id"]] = cast(TripleAtEntityRow, {
                    "id": r["id"], "text": r["text"], "s": r["subject_id"], "o": r["object_id"], "sname": r["subject"],
                    "oname": r["object"], "relation": r["relation"], "origin": r["origin"], "chunk_id": r["chunk_id"],
                    "kind": r["kind"], "sentence": r["sentence"]})
    return list(seen.values())


def triple_chunks(store: GraphStore, ids: Sequence[str]) -> list[TripleChunkRow]:
    """FROM_CHUNK links of triples: tid, cid (one row per edge)."""
    links = chunk_links(store)
    return [{"tid": t, "cid": c} for t in _distinct(ids) for c in links.from_chunk.get(t, ())]


def triple_sources(store: GraphStore, ids: Sequence[str]) -> list[TripleSourceRow]:
    """Triples by id: id, text, sentence, chunk_id."""
    g = triple_graph(store)
    rows = [n for i in _distinct(ids) if (n := g.triple_at.get(i)) is not None]
    return cast("list[TripleSourceRow]", g.triple_columns(rows, ("id", "text", "sentence", "chunk_id")))


def _order(value: str | None) -> tuple[bool, bytes]:
    """Kùzu's order of a string: bytewise, NULL last."""
    return value is None, (value or "").encode()


def related_edges(store: GraphStore, ids: Sequence[str], origin: str, *, incoming: bool) -> list[RelatedEdgeRow]:
    """RELATED edges at ``ids`` whose other end has ``origin``: src, src_name, relation,
    triple_id, dst, dst_name; outgoing (the id is the head) or incoming (the id is the tail),
    ordered by (anchor, triple_id, other end)."""
    g = triple_graph(store)
    anchor, other = ("dst", "src") if incoming else ("src", "dst")
    rows = [r for rs in g.related("in" if incoming else "out", _distinct(ids)).values() for r in rs
            if r[f"{other}_origin"] == origin]
    rows.sort(key=lambda r: (_order(r[anchor]), _order(r["triple_id"]), _order(r[other])))
    return [cast(RelatedEdgeRow, {"src": r["src"], "src_name": r["src_name"], "relation": r["relation"],
                                  "triple_id": r["triple_id"], "dst": r["dst"], "dst_name": r["dst_name"]})
            for r in rows]


def _all_subchunk_texts(store: GraphStore) -> dict[str, str]:
    t = read_model.table(store, Q_SUBCHUNK_TEXTS)
    return {i: x or "" for i, x in zip(t.column("id").to_pylist(), t.column("text").to_pylist())}


def subchunk_texts(store: GraphStore, ids: Sequence[str]) -> dict[str, str]:
    """{sub-chunk id: text ('' when none)} of the ids that exist (every sub-chunk's text held once
    per database state: the statement scanned the SubChunk table, ~10 ms a call on HotpotQA)."""
    texts: dict[str, str] = store.derived(SUBCHUNKS_KEY, _all_subchunk_texts)
    return {i: texts[i] for i in ids if i in texts}


# --- KG-Retriever's document layer: rows with their stored vectors, as arrow tables -------------------
_DOCUMENT_TRIPLE_COLUMNS = ("id", "text", "subject", "relation", "object", "subject_id", "object_id", "chunk_id",
                            "kind", "sentence")


def _vector_column(store: GraphStore, table: str, ids: Sequence[str]) -> pa.FixedSizeListArray | None:
    """The stored vector of each of ``ids`` (a row per id, repeats allowed), bit for bit from the
    exact search's vector file (``GraphStore.stored_vectors``), as a statement's FLOAT[dim] column;
    None when some id's vector is not there (no embedding, or no vector file) and Kùzu holds the
    table's vectors: the caller runs the statement then."""
    found, rest = store.stored_vectors(table, list(dict.fromkeys(ids)))
    if rest and not vector_home.in_files(vector_home.state(store, table)):
        return None
    # a table that keeps its vectors in the files only (kgviz.graph.vector_home): a row not in them
    # has no embedding, and Kùzu has none of the others
    dim = int(store.dim)
    none = np.zeros(dim, dtype=np.float32)
    flat = (np.concatenate([found.get(i, none) for i in ids]) if len(ids) else np.zeros(0, dtype=np.float32))
    mask = pa.array([i not in found for i in ids], type=pa.bool_()) if rest else None
    return pa.FixedSizeListArray.from_arrays(pa.array(np.asarray(flat, dtype=np.float32), type=pa.float32()), dim,
                                             mask=mask)


def _with_vectors(store: GraphStore, table: str, rows: list[dict[str, Any]], columns: Sequence[str]) -> pa.Table | None:
    """``rows`` as an arrow table of ``columns`` plus ``emb``, each row's stored vector
    (``_vector_column`` of the rows' ids); None where that is None."""
    emb = _vector_column(store, table, [r["id"] for r in rows])
    if emb is None:
        return None
    return pa.table({**{c: pa.array([r[c] for r in rows], type=pa.string()) for c in columns}, "emb": emb})


def document_entities(store: GraphStore, doc_ids: Sequence[str]) -> pa.Table:
    """Entities mentioned by the documents' chunks: doc, chunk, id, name, emb (arrow; one row per
    document-chunk-entity path, as ``reads.document_entities``)."""
    g, links = triple_graph(store), chunk_links(store)
    rows = [{"doc": d, "chunk": c, "id": e, "name": g.entity_names[g.entity_at[e]]}
            for d in _distinct(doc_ids) for c in links.has_chunk.get(d, ()) for e in links.chunk_entities.get(c, ())]
    got = _with_vectors(store, "Entity", rows, ("doc", "chunk", "id", "name"))
    return got if got is not None else reads.document_entities(store, doc_ids)


def document_triples(store: GraphStore, doc_ids: Sequence[str]) -> pa.Table:
    """Triples extracted from the documents' chunks (distinct): id, text, subject, relation,
    object, subject_id, object_id, chunk_id, kind, sentence (the first provenance), emb (arrow)."""
    g, links = triple_graph(store), chunk_links(store)
    tids = list(dict.fromkeys(t for d in _distinct(doc_ids) for c in links.has_chunk.get(d, ())
                              for t in links.chunk_triples.get(c, ())))
    rows = g.triple_rows([g.triple_at[t] for t in tids])
    got = _with_vectors(store, "Triple", rows, _DOCUMENT_TRIPLE_COLUMNS)
    return got if got is not None else reads.document_triples(store, doc_ids)


# --- chunks and documents (text-rag, KG-Infused RAG, KET-RAG, KG-Retriever) ------------------------------
class Documents:
    """Every chunk with its document's title (one row per HAS_CHUNK edge), every document's title
    and the SIMILAR_DOC edges out of each document, in load order."""

    def __init__(self, store: GraphStore) -> None:
        self.chunks: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in read_model.table(store, Q_CHUNKS).to_pylist():
            self.chunks[r["id"]].append(r)
        t = read_model.table(store, Q_DOCUMENTS)
        self.titles: dict[str, Any] = dict(zip(t.column("id").to_pylist(), t.column("title").to_pylist()))
        self.similar: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in read_model.table(store, Q_SIMILAR_DOCS).to_pylist():
            self.similar[r["src"]].append(r)


def documents(store: GraphStore) -> Documents:
    docs: Documents = store.derived(DOCUMENTS_KEY, Documents)
    return docs


def chunks(store: GraphStore, ids: Sequence[str]) -> list[ChunkRow]:
    """Chunks by id with their document's title: id, text, ord, title."""
    held = documents(store).chunks
    return [cast(ChunkRow, dict(r)) for i in _distinct(ids) for r in held.get(i, ())]


def document_titles(store: GraphStore, ids: Sequence[str]) -> dict[str, str | None]:
    """{document id: title} of the ids that exist."""
    titles = documents(store).titles
    return {i: titles[i] for i in ids if i in titles}


def similar_documents(store: GraphStore, ids: Sequence[str]) -> list[SimilarDocRow]:
    """SIMILAR_DOC edges out of ``ids``: src, dst, weight (``reads.similar_documents`` without
    vectors)."""
    similar = documents(store).similar
    return [cast(SimilarDocRow, dict(r)) for i in _distinct(ids) for r in similar.get(i, ())]


def similar_documents_with_vectors(store: GraphStore, ids: Sequence[str]) -> pa.Table:
    """``reads.similar_documents`` with vectors: src, dst, weight, src_emb, emb (arrow), each end's
    stored vector from the vector files (``_vector_column``: Document vectors may be kept there
    only, kgviz.graph.vector_home); the statement where Kùzu holds vectors the files lack."""
    rows = similar_documents(store, ids)
    srcs, dsts = [r["src"] for r in rows], [r["dst"] for r in rows]
    ends = _vector_column(store, "Document", srcs + dsts)  # both ends in one lookup
    if ends is None:
        return cast(pa.Table, reads.similar_documents(store, ids, vectors=True))
    return pa.table({"src": pa.array(srcs, type=pa.string()), "dst": pa.array(dsts, type=pa.string()),
                     "weight": pa.array([r["weight"] for r in rows], type=pa.float64()),
                     "src_emb": ends.slice(0, len(srcs)), "emb": ends.slice(len(srcs))})
