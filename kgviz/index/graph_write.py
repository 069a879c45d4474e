"""Write a built batch into the graph store, and clean up after an interrupted write.

Crash safety: before writing, the ids of the documents being written go into Meta
"pending_documents"; after the last write they are cleared. A build that finds pending ids
purges whatever those documents left behind (chunks, triples, their edges, the Document node) and
builds them again; their Extraction rows are kept, so no LLM call is repeated. Every write is a
bulk COPY (or one UNWIND statement), never a row-at-a-time loop.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import numpy as np

from kgviz.graph import writes
from kgviz.graph.batching import batches
from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import EntityDetailUpdate, EntityMergeRow
from kgviz.index.assemble import Assembled
from kgviz.index.doc_layer import SIGNATURE_KEY
from kgviz.index.ket import META_KEYWORD_SIGNATURE
from kgviz.index.resolve import merge_descriptions

PENDING_KEY = "pending_documents"
_DOC_BATCH = 5000  # documents purged under one hold of the write lock


def pending_documents(store: GraphStore) -> list[str]:
    raw = store.get_meta(PENDING_KEY) or "[]"
    try:
        ids = json.loads(raw)
    except ValueError:
        return []
    return [str(i) for i in ids] if isinstance(ids, list) else []


def set_pending(store: GraphStore, doc_ids: Sequence[str]) -> None:
    store.set_meta(PENDING_KEY, json.dumps(list(doc_ids)))


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
    for ids in batches(doc_ids, _DOC_BATCH):
        with store.write_lock():
            writes.delete_documents(store, ids)
    if doc_ids:
        with store.write_lock():
            writes.delete_orphan_corpus_entities(store)


def documents_with_failed_chunks(store: GraphStore) -> set[str]:
    """Ids of documents that have a failed Extraction row (chunk ids are "<doc_id>#c<ord>"). An
    LLM row with an empty reply counts as failed whatever its status says: kgviz before issue 15
    stored empty replies as "ok, 0 triples", and those chunks deserve another ask."""
    return {str(c).rsplit("#c", 1)[0] for c in writes.failed_extraction_chunks(store, "offline")}


def with_emb(rows: list[dict[str, Any]], emb: np.ndarray) -> list[dict[str, Any]]:
    for row, vec in zip(rows, emb):
        row["emb"] = vec
    return rows


def write_nodes_and_edges(
    store: GraphStore,
    *,
    documents: list[dict[str, Any]],
    chunks: list[dict[str, Any]],
    has_chunk: list[dict[str, object]],
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
    n["FROM_CHUNK"] = store.bulk_load_rels("FROM_CHUNK", acc.from_chunk_rows(), from_table="Triple", to_table="Chunk")
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
    store: GraphStore, acc: Assembled, existing: Mapping[str, EntityMergeRow], max_sentences: int
) -> None:
    """Merge this batch's descriptions and surface forms into entities already in the graph.
    Their vectors are not recomputed (Kùzu cannot SET an indexed vector; see pipeline docs)."""
    rows: list[EntityDetailUpdate] = []
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
    writes.set_entity_details(store, rows)
