"""Reads behind the Explore page (kgviz.viz.explore switches to these after the issue-11 merge).

The statements are those kgviz/viz/explore.py runs today, unchanged, so the switch changes no
result. User text is only ever a $param.
"""
from __future__ import annotations

from typing import Sequence

from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import (
    ChunkDocumentRow, EntityDetailRow, EntityInfoRow, EntitySummaryRow, EntityTripleRow, ExtractionRecordRow,
    RelatedAtRow, typed,
)


def entities_named(store: GraphStore, text: str, limit: int) -> list[EntitySummaryRow]:
    """Entities whose name contains ``text`` (case-insensitive), most mentioned first, then by
    name: id, name, type, n."""
    return typed(EntitySummaryRow, store.query("MATCH (e:Entity) WHERE lower(e.name) CONTAINS lower($q) "
                       "RETURN e.id AS id, e.name AS name, e.type AS type, e.n_mentions AS n "
                       "ORDER BY n DESC, name LIMIT $k", {"q": text, "k": int(limit)}))


def entity_summaries(store: GraphStore, ids: Sequence[str]) -> list[EntitySummaryRow]:
    """id, name, type, n (mentions) of the entities ``ids``."""
    return typed(EntitySummaryRow, store.query("MATCH (e:Entity) WHERE e.id IN $ids "
                       "RETURN e.id AS id, e.name AS name, e.type AS type, e.n_mentions AS n", {"ids": list(ids)}))


def related_at(store: GraphStore, ids: Sequence[str], limit: int) -> list[RelatedAtRow]:
    """RELATED edges with either end in ``ids`` (at most ``limit``): src, dst, rel, tid."""
    return typed(RelatedAtRow, store.query(
        "MATCH (a:Entity)-[r:RELATED]->(b:Entity) WHERE a.id IN $ids OR b.id IN $ids "
        "RETURN a.id AS src, b.id AS dst, r.relation AS rel, r.triple_id AS tid LIMIT $lim",
        {"ids": list(ids), "lim": int(limit)}))


def entity_infos(store: GraphStore, ids: Sequence[str]) -> list[EntityInfoRow]:
    """id, name, type, description, n, origin of the entities ``ids``."""
    return typed(EntityInfoRow, store.query("MATCH (e:Entity) WHERE e.id IN $ids "
                       "RETURN e.id AS id, e.name AS name, e.type AS type, e.description AS description, "
                       "e.n_mentions AS n, e.origin AS origin", {"ids": list(ids)}))


def entity(store: GraphStore, entity_id: str) -> EntityDetailRow | None:
    """id, name, type, description, aliases, n_mentions, origin; None when there is no such entity."""
    rows = store.query("MATCH (e:Entity) WHERE e.id = $id "
                       "RETURN e.id AS id, e.name AS name, e.type AS type, e.description AS description, "
                       "e.aliases AS aliases, e.n_mentions AS n_mentions, e.origin AS origin", {"id": entity_id})
    return typed(EntityDetailRow, rows)[0] if rows else None


def triples_of_entity(store: GraphStore, entity_id: str, limit: int) -> list[EntityTripleRow]:
    """Triples with the entity as subject or object, by (chunk_id, id): id, subject, relation,
    object, sentence, chunk_id, doc_id, origin, kind (relation | sentence; None before schema v2)."""
    return typed(EntityTripleRow, store.query("MATCH (t:Triple) WHERE t.subject_id = $id OR t.object_id = $id "
                       "RETURN t.id AS id, t.subject AS subject, t.relation AS relation, t.object AS object, "
                       "t.sentence AS sentence, t.chunk_id AS chunk_id, t.doc_id AS doc_id, t.origin AS origin, "
                       "t.kind AS kind "
                       "ORDER BY t.chunk_id, t.id LIMIT $k", {"id": entity_id, "k": int(limit)}))


def chunks_with_documents(store: GraphStore, ids: Sequence[str]) -> list[ChunkDocumentRow]:
    """id, text, doc_id, title (None when the document is missing) of the chunks ``ids``."""
    return typed(ChunkDocumentRow, store.query(
        "MATCH (c:Chunk) WHERE c.id IN $ids OPTIONAL MATCH (d:Document) WHERE d.id = c.doc_id "
        "RETURN c.id AS id, c.text AS text, c.doc_id AS doc_id, d.title AS title", {"ids": list(ids)}))


def extraction_records(store: GraphStore, chunk_ids: Sequence[str]) -> list[ExtractionRecordRow]:
    """Full Extraction rows of the chunks: chunk_id, mode, prompt_name, raw, status, n_triples,
    n_malformed, error."""
    return typed(ExtractionRecordRow, store.query("MATCH (x:Extraction) WHERE x.chunk_id IN $ids "
                       "RETURN x.chunk_id AS chunk_id, x.mode AS mode, x.prompt_name AS prompt_name, x.raw AS raw, "
                       "x.status AS status, x.n_triples AS n_triples, x.n_malformed AS n_malformed, x.error AS error",
                       {"ids": list(chunk_ids)}))


def chunks_mentioning_entity(store: GraphStore, entity_id: str, limit: int) -> list[str]:
    """Ids of the first ``limit`` chunks (by id) that mention the entity."""
    return [r["id"] for r in store.query("MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) WHERE e.id = $id "
                                         "RETURN c.id AS id ORDER BY c.id LIMIT $k",
                                         {"id": entity_id, "k": int(limit)})]


def related_degrees(store: GraphStore) -> list[int]:
    """Number of RELATED edges (either direction) per entity, isolated entities included."""
    rows = store.query("MATCH (e:Entity) OPTIONAL MATCH (e)-[r:RELATED]-(:Entity) RETURN e.id AS id, count(r) AS d", {})
    return [int(r["d"]) for r in rows]
