"""Named statements of the index build: deletes, updates and the reads the build decides on.

Bulk inserts go through ``GraphStore.bulk_load_nodes/rels`` (COPY); what is here changes or
removes rows already in the graph. Id lists follow ``kgviz.graph.batching``; every function runs
its statements under the caller's locks (callers group them under ``store.write_lock()``).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import pyarrow as pa

from kgviz.graph.batching import batches, id_list_statements
from kgviz.graph.protocol import GraphStore
from kgviz.graph.reads import rows_by_ids
from kgviz.graph.rows import (
    ChunkRankUpdate, EntityDetailUpdate, EntityMergeRow, ExtractionRow, TripleProvenanceRow, typed,
)

# rows of one update statement
UPDATE_BATCH = 20_000
_TYPES = {str: pa.string(), float: pa.float64(), bool: pa.bool_(), int: pa.int64()}


def _update(store: GraphStore, statement: str, rows: Sequence[Mapping[str, Any]], columns: dict[str, type],
            params: dict[str, Any] | None = None) -> None:
    """Run ``LOAD FROM $rows <statement>`` over ``rows`` given as an arrow table whose columns are
    named ``r_<key>``. Not ``UNWIND $rows``: Kùzu 0.11.3 matched a list parameter's rows in time
    quadratic in their number (SET on 10k / 40k chunks: 6.7 s / 84 s, the same updates from an
    arrow table 0.16 s / 0.59 s, issue 29), which made the build's updates quadratic in documents."""
    for batch in batches(list(rows), UPDATE_BATCH):
        table = pa.table({f"r_{k}": pa.array([r[k] for r in batch], type=_TYPES[t]) for k, t in columns.items()})
        store.execute(f"LOAD FROM $rows {statement}", {"rows": table, **(params or {})})


def _delete_by_ids(store: GraphStore, match: str, key: str, action: str, ids: Sequence[str]) -> None:
    for cypher, batch in id_list_statements(match, key, action, list(ids)):
        store.execute(cypher, {"ids": batch})


# --- documents (re)written by the build --------------------------------------------------------------
def chunk_ids_of_documents(store: GraphStore, doc_ids: Sequence[str]) -> list[str]:
    return [r["id"] for r in rows_by_ids(store, "(c:Chunk)", "c.doc_id", "c.id AS id", doc_ids)]


def triple_ids_of_documents(store: GraphStore, doc_ids: Sequence[str]) -> list[str]:
    """Triples whose first provenance is one of the documents."""
    return [r["id"] for r in rows_by_ids(store, "(t:Triple)", "t.doc_id", "t.id AS id", doc_ids)]


def triple_provenance(store: GraphStore, triple_ids: Sequence[str]) -> list[TripleProvenanceRow]:
    """Every FROM_CHUNK edge of the triples: id (triple), chunk, doc, sentence."""
    return typed(TripleProvenanceRow, rows_by_ids(store, "(t:Triple)-[f:FROM_CHUNK]->(c:Chunk)", "t.id",
                       "t.id AS id, c.id AS chunk, c.doc_id AS doc, f.sentence AS sentence", triple_ids))


def delete_documents(store: GraphStore, doc_ids: Sequence[str]) -> None:
    """Delete the documents with their chunks and sub-chunks, and the facts only they stated
    (with their RELATED edges). A fact another document also states stays, with that document's
    provenance; when its first provenance (Triple.chunk_id/doc_id/sentence) was a deleted chunk,
    the first remaining FROM_CHUNK edge (by chunk id) takes its place. Entities stay: see
    ``delete_orphan_corpus_entities``."""
    gone_docs = set(doc_ids)
    chunk_ids = chunk_ids_of_documents(store, doc_ids)
    touched = set(triple_ids_of_documents(store, doc_ids))
    touched |= {r["id"] for r in rows_by_ids(store, "(t:Triple)-[:FROM_CHUNK]->(c:Chunk)", "c.id", "t.id AS id",
                                             chunk_ids)}
    remaining: dict[str, TripleProvenanceRow] = {}
    for r in sorted(triple_provenance(store, sorted(touched)), key=lambda r: (r["id"], r["chunk"])):
        if r["doc"] not in gone_docs:
            remaining.setdefault(r["id"], r)
    doomed = sorted(touched - set(remaining))
    moved = [{"id": r["id"], "chunk": r["chunk"], "doc": r["doc"], "sentence": r["sentence"] or ""}
             for r in remaining.values()]
    _delete_by_ids(store, "(:Entity)-[r:RELATED]->(:Entity)", "r.triple_id", "DELETE r", doomed)
    _delete_by_ids(store, "(t:Triple)", "t.id", "DETACH DELETE t", doomed)
    _update(store, "MATCH (t:Triple {id: r_id}) WHERE t.doc_id IN $docs "
                   "SET t.chunk_id = r_chunk, t.doc_id = r_doc, t.sentence = r_sentence",
            moved, {"id": str, "chunk": str, "doc": str, "sentence": str}, {"docs": sorted(gone_docs)})
    _delete_by_ids(store, "(s:SubChunk)", "s.chunk_id", "DETACH DELETE s", chunk_ids)
    _delete_by_ids(store, "(c:Chunk)", "c.doc_id", "DETACH DELETE c", doc_ids)
    _delete_by_ids(store, "(d:Document)", "d.id", "DETACH DELETE d", doc_ids)


def delete_orphan_corpus_entities(store: GraphStore) -> None:
    """Extracted entities that no chunk mentions and no triple has as subject or object."""
    store.execute(
        "MATCH (e:Entity) WHERE e.origin = $corpus AND NOT EXISTS { MATCH (:Chunk)-[:MENTIONS]->(e) } "
        "AND NOT EXISTS { MATCH (:Triple)-[:SUBJ]->(e) } AND NOT EXISTS { MATCH (:Triple)-[:OBJ]->(e) } "
        "DETACH DELETE e",
        {"corpus": "corpus"},
    )


# --- extraction records -----------------------------------------------------------------------------
def failed_extraction_chunks(store: GraphStore, offline_mode: str) -> list[str]:
    """Chunk ids of failed Extraction rows (and of non-offline rows with an empty reply)."""
    rows = store.query(
        "MATCH (x:Extraction) WHERE x.status = $s OR (x.mode <> $offline AND x.n_triples = 0 AND trim(x.raw) = '') "
        "RETURN x.chunk_id AS id",
        {"s": "failed", "offline": offline_mode},
    )
    return [r["id"] for r in rows]


def extractions(store: GraphStore, chunk_ids: Sequence[str]) -> dict[str, ExtractionRow]:
    """{chunk id: Extraction row (chunk_id, mode, raw, status, error)}."""
    rows = rows_by_ids(store, "(x:Extraction)", "x.chunk_id", "x.chunk_id AS chunk_id, x.mode AS mode, "
                   "x.raw AS raw, x.status AS status, x.error AS error", chunk_ids)
    return {r["chunk_id"]: r for r in typed(ExtractionRow, rows)}


def delete_extractions(store: GraphStore, chunk_ids: Sequence[str]) -> None:
    _delete_by_ids(store, "(x:Extraction)", "x.chunk_id", "DELETE x", chunk_ids)


# --- entities ---------------------------------------------------------------------------------------
def entity_details(store: GraphStore, ids: Sequence[str]) -> dict[str, EntityMergeRow]:
    """{entity id: id, name, type, description, aliases} of the ids that exist."""
    rows = rows_by_ids(store, "(e:Entity)", "e.id", "e.id AS id, e.name AS name, e.type AS type, "
                   "e.description AS description, e.aliases AS aliases", ids)
    return {r["id"]: r for r in typed(EntityMergeRow, rows)}


def set_entity_details(store: GraphStore, rows: Sequence[EntityDetailUpdate]) -> None:
    """rows: id, description, aliases, type."""
    _update(store, "MATCH (e:Entity {id: r_id}) SET e.description = r_description, e.aliases = r_aliases, "
                   "e.type = r_type", rows, {"id": str, "description": str, "aliases": str, "type": str})


def refresh_mention_counts(store: GraphStore, entity_ids: Sequence[str]) -> None:
    """n_mentions = number of chunks that mention the entity (recounted, so re-runs are exact)."""
    for batch in batches(list(entity_ids)):
        rows = rows_by_ids(store, "(c:Chunk)-[:MENTIONS]->(e:Entity)", "e.id", "e.id AS id, count(c) AS n", batch)
        _update(store, "MATCH (e:Entity {id: r_id}) SET e.n_mentions = r_n", rows, {"id": str, "n": int})


# --- document layer (KG-Retriever) -------------------------------------------------------------------
def delete_similar_doc(store: GraphStore) -> None:
    store.execute("MATCH (:Document)-[r:SIMILAR_DOC]->(:Document) DELETE r")


# --- KET index ----------------------------------------------------------------------------------------
def delete_knn(store: GraphStore) -> None:
    store.execute("MATCH (:Chunk)-[r:KNN]->(:Chunk) DELETE r")


def set_chunk_ranks(store: GraphStore, rows: Sequence[ChunkRankUpdate]) -> None:
    """rows: id, pr (PageRank), core (bool)."""
    _update(store, "MATCH (c:Chunk {id: r_id}) SET c.pagerank = r_pr, c.core = r_core", rows,
            {"id": str, "pr": float, "core": bool})


def delete_keyword_layer(store: GraphStore) -> None:
    """Every Keyword and SubChunk with their edges."""
    store.execute("MATCH (k:Keyword) DETACH DELETE k")
    store.execute("MATCH (s:SubChunk) DETACH DELETE s")
