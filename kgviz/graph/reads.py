"""Named reads of the graph for methods, verification and the KET caches.

Every statement here is fixed text with $params; id lists follow the one batching policy of
``kgviz.graph.batching`` (IN up to IN_LIST_MAX ids, UNWIND beyond, ID_BATCH ids a statement).
Rows come back as dicts keyed by the column aliases named in each docstring: the methods record
them into traces as they are, so a dataclass would only be unpacked again. Their shapes are
declared in ``kgviz.graph.rows`` (TypedDicts: typed for the checker, plain dicts at run time).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from kgviz.graph import read_model
from kgviz.graph.batching import id_list_statements
from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import (
    ChunkDocRow, ChunkLabelRow, ChunkOverviewRow, ChunkRankRow, ChunkRow, ChunkTextRow, CoreChunkRow, DocumentRow,
    EntityChunksRow, EntityNameRow, EntityRow, ExtractionSummaryRow, RelatedEdgeRow, SimilarDocRow, TripleAtEntityRow,
    TripleChunkRow, TripleEndRow, TripleFactRow, TripleLinkRow, TripleSourceRow, typed,
)


def rows_by_ids(store: GraphStore, match: str, key: str, returns: str, ids: Sequence[str],
                params: Mapping[str, Any] | None = None, *, where: str = "",
                order: str = "") -> list[dict[str, Any]]:
    """Rows of ``MATCH match`` whose ``key`` is one of ``ids``, in statements of the batching
    policy (for the functions of kgviz/graph: ``match``, ``key``, ``returns``, ``where`` are their
    fixed text). ``where`` adds conditions (with $params of ``params``); ``order`` sorts each batch.
    The store's raw records: each named read below declares its row shape (kgviz.graph.rows)."""
    out: list[dict[str, Any]] = []
    for cypher, batch in id_list_statements(match, key, _rest(returns, where, order), list(ids)):
        out += store.query(cypher, {**(params or {}), "ids": batch})
    return out


def _rest(returns: str, where: str = "", order: str = "") -> str:
    return (f"AND {where} " if where else "") + f"RETURN {returns}" + (f" ORDER BY {order}" if order else "")


def count_nodes(store: GraphStore, table: str) -> int:
    """Number of rows of a node table (``table`` is one of the schema's fixed names)."""
    if table not in _COUNT_NODES:
        raise ValueError(f"count_nodes: unknown table {table!r}")
    return int(store.query(_COUNT_NODES[table])[0]["n"])


_COUNT_NODES = {t: f"MATCH (n:{t}) RETURN count(n) AS n" for t in
                ("Document", "Chunk", "Entity", "Triple", "Keyword", "SubChunk", "Description")}
_COUNT_RELS = {r: f"MATCH ()-[r:{r}]->() RETURN count(r) AS n" for r in ("KNN", "HAS_KEYWORD")}


def count_rels(store: GraphStore, rel: str) -> int:
    if rel not in _COUNT_RELS:
        raise ValueError(f"count_rels: unknown rel table {rel!r}")
    return int(store.query(_COUNT_RELS[rel])[0]["n"])


# --- chunks and documents --------------------------------------------------------------------------
def chunks(store: GraphStore, ids: Sequence[str]) -> list[ChunkRow]:
    """Chunks by id with their document's title: id, text, ord, title (any order)."""
    return typed(ChunkRow, rows_by_ids(store, "(d:Document)-[:HAS_CHUNK]->(c:Chunk)", "c.id",
                   "c.id AS id, c.text AS text, c.ord AS ord, d.title AS title", ids))


def chunk_labels(store: GraphStore) -> list[ChunkLabelRow]:
    """Every chunk: id, ord, title."""
    return typed(ChunkLabelRow, store.query(
        "MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk) RETURN c.id AS id, c.ord AS ord, d.title AS title"))


def chunk_texts(store: GraphStore, ids: Sequence[str]) -> dict[str, str]:
    """{chunk id: text} of the ids that exist."""
    return {r["id"]: r["text"] for r in rows_by_ids(store, "(c:Chunk)", "c.id", "c.id AS id, c.text AS text", ids)}


def all_chunk_ids(store: GraphStore) -> list[str]:
    """Every chunk id, sorted."""
    return [r["id"] for r in store.query("MATCH (c:Chunk) RETURN c.id AS id ORDER BY c.id")]


def all_chunks(store: GraphStore) -> list[ChunkDocRow]:
    """Every chunk: id, doc, text, sorted by id."""
    return typed(ChunkDocRow, store.query(
        "MATCH (c:Chunk) RETURN c.id AS id, c.doc_id AS doc, c.text AS text ORDER BY c.id"))


def chunk_ranks(store: GraphStore) -> list[ChunkRankRow]:
    """Every chunk's KET PageRank: id, pr (None before the KET index is built)."""
    return typed(ChunkRankRow, store.query("MATCH (c:Chunk) RETURN c.id AS id, c.pagerank AS pr"))


def all_document_ids(store: GraphStore) -> list[str]:
    return [r["id"] for r in store.query("MATCH (d:Document) RETURN d.id AS id ORDER BY id")]


def document_titles(store: GraphStore, ids: Sequence[str]) -> dict[str, str | None]:
    """{document id: title} of the ids that exist."""
    return {r["id"]: r["title"] for r in rows_by_ids(store, "(d:Document)", "d.id", "d.id AS id, d.title AS title", ids)}


def similar_documents(store: GraphStore, ids: Sequence[str], *,
                      vectors: bool = False) -> list[SimilarDocRow] | pa.Table:
    """SIMILAR_DOC edges out of ``ids``: src, dst, weight as dicts; with ``vectors`` an arrow
    table with src_emb and emb too (vectors are read inside the traversal: a lookup by id list
    scans the whole vector column in Kùzu 0.11.3, ~50 ms on 6k rows, a traversal reads only the
    matched rows)."""
    if not vectors:
        return typed(SimilarDocRow, rows_by_ids(store, "(a:Document)-[r:SIMILAR_DOC]->(b:Document)", "a.id",
                           "a.id AS src, b.id AS dst, r.weight AS weight", ids))
    return _arrow_by_ids(store, "(a:Document)-[r:SIMILAR_DOC]->(b:Document)", "a.id",
                         "a.id AS src, b.id AS dst, r.weight AS weight, a.emb AS src_emb, b.emb AS emb", ids)


def document_entities(store: GraphStore, doc_ids: Sequence[str]) -> pa.Table:
    """Entities mentioned by the documents' chunks: doc, chunk, id, name, emb (arrow)."""
    return _arrow_by_ids(store, "(d:Document)-[:HAS_CHUNK]->(c:Chunk)-[:MENTIONS]->(e:Entity)", "d.id",
                         "d.id AS doc, c.id AS chunk, e.id AS id, e.name AS name, e.emb AS emb", doc_ids)


def document_triples(store: GraphStore, doc_ids: Sequence[str]) -> pa.Table:
    """Triples extracted from the documents' chunks (distinct): id, text, subject, relation,
    object, subject_id, object_id, chunk_id, kind, sentence (the first provenance), emb (arrow)."""
    return _arrow_by_ids(
        store, "(d:Document)-[:HAS_CHUNK]->(c:Chunk)<-[:FROM_CHUNK]-(t:Triple)", "d.id",
        "DISTINCT t.id AS id, t.text AS text, t.subject AS subject, t.relation AS relation, t.object AS object, "
        "t.subject_id AS subject_id, t.object_id AS object_id, t.chunk_id AS chunk_id, t.kind AS kind, "
        "t.sentence AS sentence, t.emb AS emb", doc_ids)


def _arrow_by_ids(store: GraphStore, match: str, key: str, returns: str, ids: Sequence[str]) -> pa.Table:
    """Like ``rows_by_ids`` for statements that return a vector column (arrow: fast for vectors)."""
    tables = [store.query_arrow(cypher, {"ids": batch})
              for cypher, batch in id_list_statements(match, key, _rest(returns), list(ids), vectors=True)]
    if not tables:  # no ids: an empty table that still has the columns callers read by name
        return store.query_arrow(f"MATCH {match} WHERE {key} IN $ids RETURN {returns}", {"ids": []})
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


# --- entities and triples --------------------------------------------------------------------------
def count_entities(store: GraphStore, origin: str) -> int:
    """Entities of one origin ("corpus" or "curated")."""
    return int(store.query("MATCH (e:Entity) WHERE e.origin = $origin RETURN count(e) AS n", {"origin": origin})[0]["n"])


def entities(store: GraphStore, ids: Sequence[str]) -> list[EntityRow]:
    """Entities by id: id, name, description."""
    return typed(EntityRow, rows_by_ids(
        store, "(e:Entity)", "e.id", "e.id AS id, e.name AS name, e.description AS description", ids))


def entities_with_chunks(store: GraphStore, ids: Sequence[str]) -> list[EntityChunksRow]:
    """Entities by id with the chunks that mention them: id, name, description, origin, chunks."""
    out: list[EntityChunksRow] = []
    rest = ("OPTIONAL MATCH (c:Chunk)-[:MENTIONS]->(e) RETURN e.id AS id, e.name AS name, "
            "e.description AS description, e.origin AS origin, collect(c.id) AS chunks")
    for cypher, batch in id_list_statements("(e:Entity)", "e.id", rest, list(ids)):
        out += typed(EntityChunksRow, store.query(cypher, {"ids": batch}))
    return out


def related_edges(store: GraphStore, ids: Sequence[str], origin: str, *, incoming: bool) -> list[RelatedEdgeRow]:
    """RELATED edges at ``ids`` whose other end has ``origin``: src, src_name, relation,
    triple_id, dst, dst_name; outgoing (the id is the head) or incoming (the id is the tail),
    ordered by (anchor, triple_id, other end)."""
    returns = ("a.id AS src, a.name AS src_name, r.relation AS relation, r.triple_id AS triple_id, "
               "b.id AS dst, b.name AS dst_name")
    if incoming:
        return typed(RelatedEdgeRow, rows_by_ids(
            store, "(a:Entity)-[r:RELATED]->(b:Entity)", "b.id", returns, ids, {"origin": origin},
            where="a.origin = $origin", order="b.id, r.triple_id, a.id"))
    return typed(RelatedEdgeRow, rows_by_ids(
        store, "(a:Entity)-[r:RELATED]->(b:Entity)", "a.id", returns, ids, {"origin": origin},
        where="b.origin = $origin", order="a.id, r.triple_id, b.id"))


def triple_sources(store: GraphStore, ids: Sequence[str]) -> list[TripleSourceRow]:
    """Triples by id: id, text, sentence, chunk_id."""
    return typed(TripleSourceRow, rows_by_ids(
        store, "(t:Triple)", "t.id", "t.id AS id, t.text AS text, t.sentence AS sentence, "
        "t.chunk_id AS chunk_id", ids))


def triples_at_entities(store: GraphStore, ids: Sequence[str]) -> list[TripleAtEntityRow]:
    """Distinct triples with one of the entities as subject or object: id, text, s, o, sname,
    oname, relation, origin, chunk_id, kind, sentence (the first provenance)."""
    return typed(TripleAtEntityRow, rows_by_ids(store, "(t:Triple)-[:SUBJ|:OBJ]->(e:Entity)", "e.id",
                       "DISTINCT t.id AS id, t.text AS text, t.subject_id AS s, t.object_id AS o, t.subject AS sname, "
                       "t.object AS oname, t.relation AS relation, t.origin AS origin, t.chunk_id AS chunk_id, "
                       "t.kind AS kind, t.sentence AS sentence", ids))


def triple_chunks(store: GraphStore, ids: Sequence[str]) -> list[TripleChunkRow]:
    """FROM_CHUNK links of triples: tid, cid."""
    return typed(TripleChunkRow, rows_by_ids(
        store, "(t:Triple)-[:FROM_CHUNK]->(c:Chunk)", "t.id", "t.id AS tid, c.id AS cid", ids))


def subchunk_texts(store: GraphStore, ids: Sequence[str]) -> dict[str, str]:
    """{sub-chunk id: text ('' when none)}."""
    return {r["id"]: r["text"] or "" for r in
            rows_by_ids(store, "(s:SubChunk)", "s.id", "s.id AS id, s.text AS text", ids)}


# --- whole-table scans (KET caches, the gold funnel) -------------------------------------------------
def _by_first_column(table: pa.Table) -> pa.Table:
    """``table``'s rows ordered by its first column (unique ids; byte order, as Kùzu's ORDER BY
    orders strings). Sorted here, not by the statement: Kùzu 0.11.3 sorts the rows with their
    768-float vectors, 2.8 s for 55k keywords at 10k passages against 1.3 s unsorted, and more
    than ten minutes for the keywords of 100k passages."""
    return table.take(pc.sort_indices(table.column(0)))


def keyword_vectors(store: GraphStore) -> pa.Table:
    """Keywords with an embedding, by id: id, word, emb."""
    return _by_first_column(store.query_arrow("MATCH (k:Keyword) WHERE k.emb IS NOT NULL RETURN k.id, k.word, k.emb"))


def subchunk_vectors(store: GraphStore) -> pa.Table:
    """Sub-chunks with an embedding, by id: id, chunk_id, n_tokens, emb."""
    return _by_first_column(store.query_arrow("MATCH (s:SubChunk) WHERE s.emb IS NOT NULL "
                                              "RETURN s.id, s.chunk_id, s.n_tokens, s.emb"))


def keyword_links(store: GraphStore) -> pa.Table:
    """HAS_KEYWORD edges: keyword id, sub-chunk id."""
    return store.query_arrow("MATCH (s:SubChunk)-[:HAS_KEYWORD]->(k:Keyword) RETURN k.id, s.id")


def skeleton_descriptions(store: GraphStore) -> pa.Table:
    """Every LLM-written skeleton description (KET Alg. 1 line 3): target, kind, text, emb."""
    return store.query_arrow("MATCH (d:Description) WHERE d.emb IS NOT NULL "
                             "RETURN d.target, d.kind, d.text, d.emb ORDER BY d.target")


def chunk_texts_all(store: GraphStore) -> list[ChunkTextRow]:
    """Every chunk: id, text."""
    return typed(ChunkTextRow, store.query("MATCH (c:Chunk) RETURN c.id AS id, c.text AS text"))


def entity_names_all(store: GraphStore) -> list[EntityNameRow]:
    """Every entity: id, name, aliases."""
    return typed(EntityNameRow, store.query("MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.aliases AS aliases"))


Q_ENTITY_NAMES = "MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.aliases AS aliases"


def entity_names_table(store: GraphStore) -> pa.Table:
    """Every entity: id, name, aliases (arrow: ``entity_names_all`` made one dict per row, a
    third of KET's name index at 10,000 passages); stored in the workspace as part of the read
    model (``kgviz.graph.read_model``)."""
    return read_model.table(store, Q_ENTITY_NAMES)


def triple_facts_all(store: GraphStore) -> list[TripleFactRow]:
    """Every triple: id, text, s (subject id), o (object id), c (chunk id)."""
    return typed(TripleFactRow, store.query("MATCH (t:Triple) RETURN t.id AS id, t.text AS text, "
                       "t.subject_id AS s, t.object_id AS o, t.chunk_id AS c"))


def entities_within(store: GraphStore, ids: Sequence[str], hops: int) -> set[str]:
    """Entities reachable from ``ids`` by a walk of 1..hops RELATED edges, either direction: one
    hop at a time from the distinct entities the previous hop reached. The same set as
    ``RELATED*1..hops`` (Kùzu's walk semantics: tests/graph/test_entities_within.py) without
    enumerating every path: that form ran out of Kùzu's buffer pool at 30,000 passages, where
    two hops from a hub entity are millions of paths (benchmarks/scale.py, issue 29)."""
    reached: set[str] = set()
    frontier = sorted(set(ids))
    for _ in range(int(hops)):
        if not frontier:
            break
        step = {r["id"] for r in rows_by_ids(store, "(a:Entity)-[:RELATED]-(b:Entity)", "a.id", "DISTINCT b.id AS id",
                                             frontier)}
        reached |= step
        frontier = sorted(step)
    return reached


def triples_touching(store: GraphStore, entity_ids: Sequence[str]) -> set[str]:
    """Ids of triples with one of the entities as subject or object."""
    return {r["id"] for key in ("t.subject_id", "t.object_id")
            for r in rows_by_ids(store, "(t:Triple)", key, "t.id AS id", entity_ids)}


def chunks_mentioning(store: GraphStore, entity_ids: Sequence[str]) -> set[str]:
    """Ids of chunks that mention one of the entities."""
    return {r["id"] for r in rows_by_ids(store, "(c:Chunk)-[:MENTIONS]->(e:Entity)", "e.id", "DISTINCT c.id AS id",
                                     entity_ids)}


def documents_of_chunks(store: GraphStore, chunk_ids: Sequence[str]) -> set[str]:
    return {r["d"] for r in rows_by_ids(store, "(c:Chunk)", "c.id", "DISTINCT c.doc_id AS d", chunk_ids)}


def subchunks_of_chunks(store: GraphStore, chunk_ids: Sequence[str]) -> set[str]:
    return {r["id"] for r in rows_by_ids(store, "(s:SubChunk)", "s.chunk_id", "s.id AS id", chunk_ids)}


# --- the KET index (Build page, methods) ---------------------------------------------------------
def meta_with_prefix(store: GraphStore, prefix: str) -> dict[str, str]:
    """{key: value} of the Meta rows whose key starts with ``prefix``."""
    rows = store.query("MATCH (m:Meta) WHERE starts_with(m.key, $p) RETURN m.key AS k, m.value AS v", {"p": prefix})
    return {r["k"]: r["v"] for r in rows}


def knn_degrees(store: GraphStore) -> dict[str, tuple[int, int]]:
    """{chunk id: (out-degree, in-degree)} over the KNN edges; every chunk, 0 when it has none."""
    out = {r["id"]: int(r["d"]) for r in store.query(
        "MATCH (c:Chunk) OPTIONAL MATCH (c)-[r:KNN]->(:Chunk) RETURN c.id AS id, count(r) AS d")}
    inc = {r["id"]: int(r["d"]) for r in store.query(
        "MATCH (c:Chunk) OPTIONAL MATCH (c)<-[r:KNN]-(:Chunk) RETURN c.id AS id, count(r) AS d")}
    return {c: (d, inc.get(c, 0)) for c, d in out.items()}


def core_chunk_rows(store: GraphStore, limit: int) -> list[CoreChunkRow]:
    """The core chunks by PageRank, best first (ties by id): id, pr, text."""
    return typed(CoreChunkRow, store.query("MATCH (c:Chunk) WHERE c.core = true RETURN c.id AS id, c.pagerank AS pr, "
                                           "c.text AS text ORDER BY c.pagerank DESC, c.id LIMIT $n", {"n": int(limit)}))


def ket_index_counts(store: GraphStore) -> dict[str, int]:
    """Rows of the KET index's tables: KNN, Keyword, SubChunk, HAS_KEYWORD."""
    return {"KNN": count_rels(store, "KNN"), "Keyword": count_nodes(store, "Keyword"),
            "SubChunk": count_nodes(store, "SubChunk"), "HAS_KEYWORD": count_rels(store, "HAS_KEYWORD")}


# --- trace viewer and overlays (kgviz/ui, kgviz/viz switch to these after the issue-11 merge) --------
_LABEL_COLUMN = {"Entity": "name", "Triple": "text", "Document": "title", "Chunk": "text", "SubChunk": "text"}
LABELLED_TABLES = frozenset(_LABEL_COLUMN)  # the tables ``node_labels`` can label


def chunk_overview(store: GraphStore) -> list[ChunkOverviewRow]:
    """Every chunk for the Build page's KET panel: id, text, n (tokens), pr, core, and where it sits
    (doc: its document's id, ord: its position there) so the page can name it as a person would."""
    return typed(ChunkOverviewRow, store.query(
        "MATCH (c:Chunk) RETURN c.id AS id, c.text AS text, c.n_tokens AS n, c.pagerank AS pr, "
        "c.core AS core, c.doc_id AS doc, c.ord AS ord"))


def triple_links(store: GraphStore, ids: Sequence[str]) -> list[TripleLinkRow]:
    """Subject and object of the triples ``ids``: id, s, o, s_name, o_name."""
    return typed(TripleLinkRow, rows_by_ids(
        store, "(t:Triple)", "t.id", "t.id AS id, t.subject_id AS s, t.object_id AS o, "
        "t.subject AS s_name, t.object AS o_name", ids))


def triple_labels(store: GraphStore, ids: Sequence[str]) -> dict[str, str | None]:
    """{triple id: text} of the ids that are triples (tells which ends of a fact are facts)."""
    return {r["id"]: r["text"] for r in rows_by_ids(store, "(t:Triple)", "t.id", "t.id AS id, t.text AS text", ids)}


def node_labels(store: GraphStore, table: str, ids: Sequence[str]) -> dict[str, str | None]:
    """{id: display label} of nodes of one table (Entity name, Document title, else text)."""
    column = _LABEL_COLUMN.get(table)
    if column is None:
        raise ValueError(f"node_labels: no label column for table {table!r}")
    rows = rows_by_ids(store, f"(n:{table})", "n.id", f"n.id AS id, n.{column} AS label", ids)
    return {r["id"]: r["label"] for r in rows}


def triple_ends(store: GraphStore, ids: Sequence[str]) -> list[TripleEndRow]:
    """Subject, object and chunk of the triples ``ids``: id, s, o, c."""
    return typed(TripleEndRow, rows_by_ids(store, "(t:Triple)", "t.id",
                                           "t.id AS id, t.subject_id AS s, t.object_id AS o, t.chunk_id AS c", ids))


def documents_for_labels(store: GraphStore, ids: Sequence[str]) -> list[DocumentRow]:
    """Documents by id with what a human label needs: id, title, text (the first heading)."""
    return typed(DocumentRow, rows_by_ids(
        store, "(d:Document)", "d.id", "d.id AS id, d.title AS title, d.text AS text", ids))


def chunk_label_texts(store: GraphStore, table: str, ids: Sequence[str]) -> dict[str, str | None]:
    """{id: text} of Chunk or SubChunk rows (a human label is its document title + first words)."""
    if table not in ("Chunk", "SubChunk"):
        raise ValueError(f"chunk_label_texts: {table!r} is not Chunk or SubChunk")
    return {r["id"]: r["text"] for r in rows_by_ids(store, f"(c:{table})", "c.id", "c.id AS id, c.text AS text", ids)}


def extraction_summaries(store: GraphStore) -> list[ExtractionSummaryRow]:
    """Every chunk's stored extraction outcome (chunk_id, raw, status, n_malformed, input_tokens,
    output_tokens), by chunk id: the figures of a build (kgviz.replay)."""
    return typed(ExtractionSummaryRow, store.query(
        "MATCH (x:Extraction) RETURN x.chunk_id AS chunk_id, x.raw AS raw, x.status AS status, "
        "x.n_malformed AS n_malformed, x.input_tokens AS input_tokens, "
        "x.output_tokens AS output_tokens ORDER BY x.chunk_id"))
