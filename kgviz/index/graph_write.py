"""Write a built batch into the graph store, and clean up after an interrupted write.

Crash safety: before writing, the ids of the documents being written go into Meta
"pending_documents"; after the last write they are cleared. A build that finds pending ids
purges whatever those documents left behind (chunks, triples, their edges, the Document node) and
builds them again; their Extraction rows are kept, so no LLM call is repeated. Every write is a
bulk COPY (or one UNWIND statement), never a row-at-a-time loop.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

from kgviz.graph import writes
from kgviz.graph.batching import batches
from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import EntityDetailUpdate, EntityMergeRow
from kgviz.index.assemble import Assembled
from kgviz.index.doc_layer import SIGNATURE_KEY
from kgviz.index.ket import META_KEYWORD_SIGNATURE
from kgviz.index.resolve import merge_descriptions
from kgviz.types import Chunk

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


def columns_table(columns: Mapping[str, list[Any]]) -> pa.Table:
    """An Arrow table with one column per entry of ``columns`` (each column's type inferred from
    all its values, as a table made from row dicts would have it)."""
    return pa.table({name: pa.array(values) for name, values in columns.items()})


def with_vectors(table: pa.Table, emb: np.ndarray) -> pa.Table:
    """``table`` with ``emb`` (one float32 row each) as its emb column, the vectors not copied
    (a row's view in each dict was stacked into a second copy: 400 MB more for a 131k-row batch
    of 768-d vectors)."""
    if table.num_rows != len(emb):
        raise ValueError(f"with_vectors: {table.num_rows} rows but {len(emb)} vectors")
    matrix = np.ascontiguousarray(emb, dtype=np.float32)
    column = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])
    return table.append_column("emb", column)


def with_emb(rows: list[dict[str, Any]], emb: np.ndarray) -> pa.Table:
    """``rows`` as an Arrow table with ``emb`` as its emb column (``with_vectors``): the columns
    of the first row, in its order, a key a row lacks read as null."""
    if len(rows) != len(emb):
        raise ValueError(f"with_emb: {len(rows)} rows but {len(emb)} vectors")
    # one Arrow array per column, not Table.from_pylist over the dicts: the same table (types
    # inferred per column from all its values either way) in under half the time
    names = list(rows[0]) if rows else []
    return with_vectors(columns_table({name: [row.get(name) for row in rows] for name in names}), emb)


@dataclass(frozen=True)
class NodeRows:
    """One node table's new rows for ``load_node_tables``: ``columns_of(start, stop)`` makes the
    columns of rows start:stop, ``vectors_of(start, stop)`` (when given) their emb column, and
    ``loaded()`` (when given) runs once every row of the table is loaded."""

    table: str
    n_rows: int
    columns_of: Callable[[int, int], pa.Table]
    vectors_of: Callable[[int, int], np.ndarray] | None = None
    loaded: Callable[[], None] | None = None


def load_node_tables(store: GraphStore, tables: Sequence[NodeRows], batch_rows: int) -> dict[str, int]:
    """Bulk-load each table's rows, table after table, ``batch_rows`` rows per COPY. Returns the
    rows inserted per table. Rows are loaded in order, so node order is that of one load of them
    all.

    The next batch's columns (the next table's first, after a table's last) are made on a helper
    thread while a batch's COPY runs (Kùzu releases the GIL while it copies; issue 29: making the
    batches was a sixth of the write stage, serially with the COPYs), one batch ahead at most; a
    batch's vectors are read only as it is loaded, so one batch's vectors are held at a time. An
    error making a batch is raised, as it is, where that batch would be loaded: the batches
    before it are loaded (and the ``loaded`` of the tables before it run), none after.

    Into an empty table (a first build) no row is looked up: the rows are new and distinct (the
    build made them from its new documents, chunks, entities and facts, each once). Into a table
    that holds rows (a later build), a batch skips rows already there."""
    spans = [(t, start, min(start + batch_rows, t.n_rows)) for t in tables for start in range(0, t.n_rows, batch_rows)]
    inserted = {t.table: 0 for t in tables}
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgviz-node-batches") as maker:
        def make(k: int) -> Future[pa.Table] | None:
            if k == len(spans):
                return None
            t, start, stop = spans[k]
            return maker.submit(t.columns_of, start, stop)

        k, ahead = 0, make(0)
        try:
            for t in tables:
                new_rows = t.n_rows > 0 and not store.holds_rows(t.table)
                for start in range(0, t.n_rows, batch_rows):
                    assert ahead is not None
                    columns = ahead.result()  # the maker's error, if it failed
                    k, ahead = k + 1, make(k + 1)
                    stop = min(start + batch_rows, t.n_rows)
                    batch = columns if t.vectors_of is None else with_vectors(columns, t.vectors_of(start, stop))
                    del columns
                    inserted[t.table] += store.bulk_load_nodes(t.table, batch, new_rows=new_rows)
                    del batch
                if t.loaded is not None:
                    t.loaded()
        except BaseException:
            if ahead is not None:
                ahead.cancel()  # not started: dropped; running: waited for as the pool closes
            raise
    return inserted


def load_nodes(store: GraphStore, table: str, n_rows: int, columns_of: Callable[[int, int], pa.Table],
               batch_rows: int, vectors_of: Callable[[int, int], np.ndarray] | None = None) -> int:
    """``load_node_tables`` of one table: the rows inserted."""
    return load_node_tables(store, [NodeRows(table, n_rows, columns_of, vectors_of)], batch_rows)[table]


def _batched(rows: Iterable[dict[str, Any]], batch_rows: int) -> Iterator[list[dict[str, Any]]]:
    it = iter(rows)
    while batch := list(islice(it, batch_rows)):
        yield batch


def _load_rels(store: GraphStore, rel: str, rows: Iterable[dict[str, Any]], batch_rows: int, scratch: Path, *,
               from_table: str, to_table: str) -> int:
    """Bulk-load ``rows`` (an iterator: never all made at once), ``batch_rows`` at a time. Into an
    empty table (of this pair): one COPY from a file in ``scratch``; the build's edges are
    distinct (each row maker reads a dict keyed by the edge's ends, or one row per new node).
    Otherwise one COPY per batch, and a batch skips edges already loaded (by an earlier build or
    batch) as one load skips repeats, so the edges are the same."""
    if not store.holds_rows(rel, (from_table, to_table)):
        return store.copy_edges_into_empty(rel, _batched(rows, batch_rows), scratch,
                                           from_table=from_table, to_table=to_table)
    return sum(store.bulk_load_rels(rel, batch, from_table=from_table, to_table=to_table)
               for batch in _batched(rows, batch_rows))


def write_edges(store: GraphStore, *, chunks: Sequence[Chunk], acc: Assembled, batch_rows: int,
                scratch: Path) -> dict[str, int]:
    """Bulk-load the batch's edges (after its nodes), ``batch_rows`` rows per batch, the files of
    the loads into empty tables in ``scratch``. Returns edges inserted per rel table."""
    def load(rel: str, rows: Iterable[dict[str, Any]], from_table: str, to_table: str) -> int:
        return _load_rels(store, rel, rows, batch_rows, scratch, from_table=from_table, to_table=to_table)

    n: dict[str, int] = {}
    n["HAS_CHUNK"] = load("HAS_CHUNK", ({"from": ch.doc_id, "to": ch.id} for ch in chunks), "Document", "Chunk")
    n["FROM_CHUNK"] = load("FROM_CHUNK", acc.from_chunk_rows(), "Triple", "Chunk")
    n["MENTIONS"] = load("MENTIONS", ({"from": c, "to": e} for c, e in acc.mentions), "Chunk", "Entity")
    n["SUBJ"] = load("SUBJ", acc.subj_rows(False), "Triple", "Entity")
    n["SUBJ"] += load("SUBJ", acc.subj_rows(True), "Triple", "Triple")
    n["OBJ"] = load("OBJ", acc.obj_rows(False), "Triple", "Entity")
    n["OBJ"] += load("OBJ", acc.obj_rows(True), "Triple", "Triple")
    n["RELATED"] = load("RELATED", acc.related_rows(), "Entity", "Entity")
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
