"""Write a built batch into the graph store, and clean up after an interrupted write.

Crash safety: before writing, the ids of the documents being written go into Meta
"pending_documents"; after the last write they are cleared. A build that finds pending ids
purges whatever those documents left behind (chunks, triples, their edges, the Document node) and
builds them again; their Extraction rows are kept, so no LLM call is repeated. Every write is a
bulk COPY (or one UNWIND statement), never a row-at-a-time loop.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from kgviz.graph.store import GraphStore
from kgviz.index.assemble import Assembled
from kgviz.index.doc_layer import SIGNATURE_KEY
from kgviz.index.ket import META_KEYWORD_SIGNATURE
from kgviz.index.resolve import merge_descriptions

PENDING_KEY = "pending_documents"
_ID_BATCH = 5000


def pending_documents(store: GraphStore) -> list[str]:
    raw = store.get_meta(PENDING_KEY) or "[]"
    try:
        ids = json.loads(raw)
    except ValueError:
        return []
    return [str(i) for i in ids] if isinstance(ids, list) else []


def set_pending(store: GraphStore, doc_ids: Sequence[str]) -> None:
    store.set_meta(PENDING_KEY, json.dumps(list(doc_ids)))


def _batches(ids: Sequence[str]) -> list[list[str]]:
    ids = list(ids)
    return [ids[i : i + _ID_BATCH] for i in range(0, len(ids), _ID_BATCH)]


def purge_documents(store: GraphStore, doc_ids: Sequence[str]) -> None:
    """Delete every node and edge a (half-)written document owns. Entities stay (they may be
    shared; the rebuilt document links to them again) and so do Extraction rows (resume), except
    extracted entities nothing refers to any more: a retried chunk may resolve a name differently
    ("Linde" merged into "Oskar Linde" once the chunk naming him in full is read), and the orphan
    would leave the graph unlike a clean build of the same text."""
    if doc_ids:
        store.set_meta(SIGNATURE_KEY, "")  # their SIMILAR_DOC edges go too: rebuild the layer
        # and their sub-chunks: the KET keyword layer must be rebuilt even if the same chunks come
        # back (only when there is one: a build without KET must not gain the key)
        if store.get_meta(META_KEYWORD_SIGNATURE) is not None:
            store.set_meta(META_KEYWORD_SIGNATURE, "")
    for ids in _batches(doc_ids):
        with store.write_lock():
            chunk_ids = [r["id"] for r in store.query("MATCH (c:Chunk) WHERE c.doc_id IN $ids RETURN c.id AS id", {"ids": ids})]
            triple_ids = [r["id"] for r in store.query("MATCH (t:Triple) WHERE t.doc_id IN $ids RETURN t.id AS id", {"ids": ids})]
            for tids in _batches(triple_ids):
                store.execute("MATCH (:Entity)-[r:RELATED]->(:Entity) WHERE r.triple_id IN $ids DELETE r", {"ids": tids})
            store.execute("MATCH (t:Triple) WHERE t.doc_id IN $ids DETACH DELETE t", {"ids": ids})
            for cids in _batches(chunk_ids):
                store.execute("MATCH (s:SubChunk) WHERE s.chunk_id IN $ids DETACH DELETE s", {"ids": cids})
            store.execute("MATCH (c:Chunk) WHERE c.doc_id IN $ids DETACH DELETE c", {"ids": ids})
            store.execute("MATCH (d:Document) WHERE d.id IN $ids DETACH DELETE d", {"ids": ids})
    if doc_ids:
        with store.write_lock():
            store.execute(
                "MATCH (e:Entity) WHERE e.origin = $corpus AND NOT EXISTS { MATCH (:Chunk)-[:MENTIONS]->(e) } "
                "AND NOT EXISTS { MATCH (:Triple)-[:SUBJ]->(e) } AND NOT EXISTS { MATCH (:Triple)-[:OBJ]->(e) } "
                "DETACH DELETE e",
                {"corpus": "corpus"},
            )


def documents_with_failed_chunks(store: GraphStore) -> set[str]:
    """Ids of documents that have a failed Extraction row (chunk ids are "<doc_id>#c<ord>")."""
    rows = store.query("MATCH (x:Extraction) WHERE x.status = $s RETURN x.chunk_id AS id", {"s": "failed"})
    return {str(r["id"]).rsplit("#c", 1)[0] for r in rows}


def existing_entities(store: GraphStore, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for batch in _batches(ids):
        rows = store.query(
            "MATCH (e:Entity) WHERE e.id IN $ids RETURN e.id AS id, e.name AS name, e.type AS type, "
            "e.description AS description, e.aliases AS aliases",
            {"ids": batch},
        )
        out.update({r["id"]: r for r in rows})
    return out


def with_emb(rows: list[dict[str, Any]], emb: np.ndarray) -> list[dict[str, Any]]:
    for row, vec in zip(rows, emb):
        row["emb"] = vec
    return rows


def write_nodes_and_edges(
    store: GraphStore,
    *,
    documents: list[dict[str, Any]],
    chunks: list[dict[str, Any]],
    has_chunk: list[dict[str, str]],
    new_entities: list[dict[str, Any]],
    acc: Assembled,
    triples: list[dict[str, Any]],
) -> dict[str, int]:
    """Bulk-load one batch (nodes first, then edges). Returns rows inserted per table."""
    n: dict[str, int] = {}
    n["Document"] = store.bulk_load_nodes("Document", documents)
    n["Chunk"] = store.bulk_load_nodes("Chunk", chunks)
    n["Entity"] = store.bulk_load_nodes("Entity", new_entities)
    n["Triple"] = store.bulk_load_nodes("Triple", triples)
    n["HAS_CHUNK"] = store.bulk_load_rels("HAS_CHUNK", has_chunk, from_table="Document", to_table="Chunk")
    n["FROM_CHUNK"] = store.bulk_load_rels(
        "FROM_CHUNK", [{"from": t, "to": c} for t, c in acc.from_chunk], from_table="Triple", to_table="Chunk"
    )
    n["MENTIONS"] = store.bulk_load_rels(
        "MENTIONS", [{"from": c, "to": e} for c, e in acc.mentions], from_table="Chunk", to_table="Entity"
    )
    n["SUBJ"] = store.bulk_load_rels("SUBJ", acc.subj_rows(False), from_table="Triple", to_table="Entity")
    n["SUBJ"] += store.bulk_load_rels("SUBJ", acc.subj_rows(True), from_table="Triple", to_table="Triple")
    n["OBJ"] = store.bulk_load_rels("OBJ", acc.obj_rows(False), from_table="Triple", to_table="Entity")
    n["OBJ"] += store.bulk_load_rels("OBJ", acc.obj_rows(True), from_table="Triple", to_table="Triple")
    n["RELATED"] = store.bulk_load_rels("RELATED", acc.related_rows(), from_table="Entity", to_table="Entity")
    return n


def update_existing_entities(
    store: GraphStore, acc: Assembled, existing: dict[str, dict[str, Any]], max_sentences: int
) -> None:
    """Merge this batch's descriptions and surface forms into entities already in the graph.
    Their vectors are not recomputed (Kùzu cannot SET an indexed vector; see pipeline docs)."""
    rows = []
    for eid, old in existing.items():
        agg = acc.entities[eid]
        aliases = [a for a in (old.get("aliases") or "").split("|") if a]
        for f in agg.surface_forms:
            if f not in aliases and f != old.get("name"):
                aliases.append(f)
        rows.append({
            "id": eid,
            "description": merge_descriptions(old.get("description") or "", agg.sentences, max_sentences),
            "aliases": "|".join(aliases),
            "type": old.get("type") or agg.type,
        })
    for start in range(0, len(rows), _ID_BATCH):
        store.execute(
            "UNWIND $rows AS r MATCH (e:Entity {id: r.id}) "
            "SET e.description = r.description, e.aliases = r.aliases, e.type = r.type",
            {"rows": rows[start : start + _ID_BATCH]},
        )


def refresh_mention_counts(store: GraphStore, entity_ids: Sequence[str]) -> None:
    """n_mentions = number of chunks that mention the entity (recounted, so re-runs are exact)."""
    for batch in _batches(entity_ids):
        rows = store.query(
            "MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) WHERE e.id IN $ids RETURN e.id AS id, count(c) AS n",
            {"ids": batch},
        )
        if rows:
            store.execute(
                "UNWIND $rows AS r MATCH (e:Entity {id: r.id}) SET e.n_mentions = r.n", {"rows": rows}
            )
