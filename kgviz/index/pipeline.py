"""Build the knowledge graph from documents: the one entry point the CLI and the app call.

Stages (``STAGES``), each reported through ``progress(ProgressEvent)``:

* chunk     – skip documents already in the graph (by id), purge documents a killed build left
              half-written, split the rest into chunks (kgviz.ingest.chunk_document);
* knn       – KET-RAG only (BuildParams.ket_enabled): KNN chunk graph, PageRank and core chunks,
              which are then the only chunks extracted (kgviz.index.ket_build); kept in the
              workspace, so a build resuming this one reuses them (kgviz.index.ket_plan);
* extract   – triples per chunk through the "extract_triples" task (LLM or offline patterns),
              thread pool, Extraction rows written in batches (kgviz.index.extract);
* resolve   – entity keys, in-document aliases, triple ids (one fact, one node: the same fact
              from any chunk, document or earlier build is one Triple), provenance sentences
              (kgviz.index.assemble / resolve);
* embed     – vectors for new documents (title + text), chunks, entities (name + description)
              and triples (text), in batches;
* write     – bulk loads of nodes then edges (kgviz.index.graph_write), the rows of tables whose
              vectors are kept in the vector files only (kgviz.graph.vector_home) without them;
              then the Document and Chunk vector files, which the next two stages read;
* doc_layer – KG-Retriever SIMILAR_DOC top-K edges (kgviz.index.doc_layer);
* ket       – KET-RAG only: with an LLM, descriptions of the skeleton's entities and relationships
              (Algorithm 1 line 3, kgviz.index.ket_describe); KNN edges, Chunk.pagerank/core,
              sub-chunks and keywords, and the keyword view KET-RAG's first question maps
              (kgviz.graph.ket_view);
* index     – the exact vector search's memory-mapped matrices (kgviz.graph.vector_file) for
              Document, Chunk, Entity and Triple — HNSW indexes instead only where opted into
              (kgviz.graph.search.EXACT_MAX_ROWS) — and BM25 over chunks. The Entity and Triple
              matrices of a first build are made from the spill by a worker process while the
              doc_layer and ket stages run (kgviz.index.early_vectors); this stage waits for it and
              adopts them once their id digest is the table's.

Vectors are computed before their rows are inserted because Kùzu cannot SET a column that a
vector index uses (and dropping the index does not help in 0.11.3: the SET still fails, and it
crashed the process after a reopen when we tried). So an entity first seen in an earlier build
keeps the vector of its first description; later documents extend its description text only.

Idempotence and resume: documents already present are skipped; the Extraction rows of an
interrupted build are reused (see extract.py); documents whose write did not finish are purged
and written again (see graph_write.py); a bulk load into a table that holds rows skips rows that
already exist (into an empty one, the build's new rows are loaded as they are). The index
steps (doc_layer, ket, index) mark themselves while they write (kgviz.index.steps): a build that
finds a mark redoes that step whole and names the repair in ``BuildReport.repairs`` (and its
warnings); indexes Kùzu itself left half made are dropped when the workspace opens or created
under a free name (kgviz.graph.store / search).
``cancel`` (a threading.Event) is honoured between extraction batches and between stages, after
flushing what finished: BuildCancelled is raised and a re-run resumes.

Concurrency: one build per workspace at a time (``GraphStore.build_lock``, keyed by database
file; app sessions share one process). A build that has to wait sends ``WAIT_STAGE`` progress
events and can be cancelled while it waits. The ket stage re-plans over every stored chunk when
the chunks changed since its knn stage, so the KET index is complete after any interleaving.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import groupby
from typing import AbstractSet, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from kgviz.errors import BuildCancelled, BuildError, EmbedderMismatchError
from kgviz.graph import reads, search, vector_home, vector_file, writes
from kgviz.graph.rows import EntityMergeRow
from kgviz.graph.search import EXACT_MAX_ROWS
from kgviz.graph.store import GraphStore
from kgviz.index import graph_write as gw
from kgviz.index import cells, memory, steps
from kgviz.index.assemble import Assembled, TripleRow, assemble, finalise
from kgviz.index.doc_layer import build_doc_layer
from kgviz.index import early_vectors
from kgviz.index.early_vectors import EARLY_MIN_ROWS, EarlyVectorFiles
from kgviz.index.embed import EMBED_BLOCK_BATCHES, document_text, embed_processes, embed_stream, entity_text
from kgviz.index.estimate import estimate_cost
from kgviz.index.extract import run_extraction
from kgviz.index.processes import process_count
from kgviz.index.ket_build import KetBuild
from kgviz.index.resolve import EntityAgg
from kgviz.index.spill import VectorSpill
from kgviz.graph.vector_file import RowFile
from kgviz.index.params import STAGES, WAIT_STAGE, BuildParams, BuildReport, CostEstimate, ProgressEvent
from kgviz.ingest import chunk_document
from kgviz.reasoning import Reasoner
from kgviz.text import count_tokens
from kgviz.types import Chunk, Document, Usage

__all__ = [
    "STAGES", "BuildParams", "BuildReport", "CostEstimate", "ProgressEvent", "build", "estimate_cost",
]

VECTOR_TABLES = ("Document", "Chunk", "Entity", "Triple")
# the tables whose vectors the doc_layer and ket stages read from the store (``_read_before_index``)
READ_BEFORE_INDEX = ("Document", "Chunk")
ROW_BLOCK = 8192  # Triple row dicts made at a time while a batch's columns are made
Progress = Callable[[ProgressEvent], None]


class _Run:
    """Per-build bookkeeping: report, timers, progress and cancel checks."""

    def __init__(self, report: BuildReport, progress: Progress | None, cancel: threading.Event | None,
                 store: GraphStore | None = None) -> None:
        self.report = report
        self.store = store
        self._progress = progress
        self._cancel = cancel

    def emit(self, stage: str, done: int, total: int, message: str = "") -> None:
        if self._progress is not None:
            self._progress(ProgressEvent(stage, done, total, message, self.report.usage))

    def check_cancel(self, where: str) -> None:
        if self._cancel is not None and self._cancel.is_set():
            raise BuildCancelled(
                f"build cancelled before the {where} stage",
                hint="run the build again: finished work is kept and skipped",
            )

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.check_cancel(name)
        if self.store is not None:  # until the build finishes, the workspace says where it is
            steps.mark_build_stage(self.store, name)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.report.seconds_by_stage[name] = round(
                self.report.seconds_by_stage.get(name, 0.0) + time.perf_counter() - t0, 4
            )


WAIT_MESSAGE = "waiting for the other build of this workspace to finish"


def build(
    documents: Sequence[Document],
    store: GraphStore,
    reasoner: Reasoner,
    params: BuildParams | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> BuildReport:
    """Add ``documents`` to the graph in ``store``; see the module docstring.

    One build per workspace at a time (``store.build_lock``): a second build reports a
    ``wait`` progress event, waits (or is cancelled while waiting), then runs on a graph that
    holds the first one's documents, so its skip/KET/report figures are its own."""
    def waiting() -> None:
        if progress is not None:
            progress(ProgressEvent(WAIT_STAGE, 0, 1, WAIT_MESSAGE))

    t0 = time.perf_counter()
    with store.build_lock(on_wait=waiting, cancelled=cancel.is_set if cancel is not None else None) as waited:
        waited_s = time.perf_counter() - t0 if waited else 0.0
        if waited and progress is not None:
            progress(ProgressEvent(WAIT_STAGE, 1, 1, f"the other build finished after {waited_s:.1f} s"))
        # the early vector files' worker reads the spill: it is stopped (exit) before the spill goes
        with VectorSpill(store.path, int(reasoner.embedder.dim)) as spill, EarlyVectorFiles() as early, \
                _unstored_documents(store) as unstored:
            report = _build(documents, store, reasoner, params, progress, cancel, spill, early, unstored)
    report.waited_seconds = round(waited_s, 3)
    return report


def _build(
    documents: Sequence[Document],
    store: GraphStore,
    reasoner: Reasoner,
    params: BuildParams | None,
    progress: Progress | None,
    cancel: threading.Event | None,
    spill: VectorSpill,
    early: EarlyVectorFiles | None,
    unstored: set[str],
) -> BuildReport:
    params = params or BuildParams()
    emb = reasoner.embedder
    if (emb.id, int(emb.dim)) != (store.embedder_id, int(store.dim)):
        raise EmbedderMismatchError(
            f"the graph at {store.path} uses embedder {store.embedder_id} (dim {store.dim}) but the build "
            f"was given {emb.id} (dim {emb.dim})",
            hint="build with the graph's embedder, or choose a new workspace",
        )
    report = BuildReport(mode=reasoner.mode)
    for note in store.take_repairs():  # indexes found damaged when the workspace opened
        report.repairs.append(note)
        report.warnings.append(note)
    stopped_in = steps.unfinished_build(store)
    if stopped_in is not None:  # cleared below when this build finishes: the report says it did
        report.warnings.append(f"finished an earlier build of this workspace that had stopped in its {stopped_in} stage")
    run = _Run(report, progress, cancel, store)

    with run.stage("chunk"):
        new_docs, chunks_by_doc = _chunk_stage(store, documents, params, report)
        run.emit("chunk", len(new_docs), len(new_docs), f"{report.new_chunks} chunks in {len(new_docs)} new documents")

    ket = KetBuild(store, emb, params, report, run.emit)
    with run.stage("knn"):
        ket.plan_stage([c for d in new_docs for c in chunks_by_doc[d.id]])

    acc: Assembled | None = None
    existing: dict[str, EntityMergeRow] = {}
    titles: dict[str, str] = {}  # the new documents' titles, for the ket stage's descriptions
    # tables whose new rows were all loaded with their spilled vectors; their ids are kept in the
    # spill (not in memory) until the index stage writes the vector files from them
    spilled_whole: set[str] = set()
    # tables whose vectors are kept in the exact search's vector files only (kgviz.graph.vector_home):
    # their new rows are loaded without vectors, and the documents count as built only once the
    # index stage has stored those vectors
    in_files: set[str] = set()
    if new_docs:
        all_chunks = [c for d in new_docs for c in chunks_by_doc[d.id]]
        with run.stage("extract"):
            def on_chunk(done: int, total: int, msg: str, usage: Usage) -> None:
                report.usage_by_stage["extract"] = usage
                run.emit("extract", done, total, msg)

            ext = run_extraction(store, reasoner, ket.to_extract(all_chunks), params, on_chunk, cancel,
                                 {d.id: d.title for d in new_docs})
            report.usage_by_stage["extract"] = ext.usage
            ext.fill(report, reasoner.is_offline)  # chunks extracted / failed, facts kept / not in the text

        with run.stage("resolve"):
            # each chunk's output is let go once its rows are made (consume): nothing else reads them
            acc = assemble(((d.id, chunks_by_doc[d.id]) for d in new_docs), ext.outputs,
                           max_sentences=params.description_max_sentences, consume=True)
            del ext  # the per-chunk outputs are in acc now
            # into an empty table (a first build) nothing is looked up: no id is there (issue 29:
            # ~0.65M entity and ~1.5M fact ids sent to Kùzu at 100k passages to find none)
            first_entities = not store.holds_rows("Entity")
            existing = {} if first_entities else writes.entity_details(store, list(acc.entities))
            finalise(acc, {eid: str(row["name"]) for eid, row in existing.items()})
            stored_triples = acc.stored = (
                set() if not store.holds_rows("Triple") else store.existing_ids("Triple", list(acc.triples)))
            report.merges = acc.merges()
            if acc.n_dropped:
                report.warnings.append(f"{acc.n_dropped} triples dropped (empty name after normalisation, or self-loop)")
            run.emit("resolve", 1, 1, f"{len(acc.entities)} entities, {len(acc.triples)} triples")

        new = _NewRows(
            docs=new_docs, chunks=all_chunks,
            # an entity an earlier build wrote keeps its row and vector (module docstring)
            entities=[e for eid, e in acc.entities.items() if eid not in existing],
            # one fact, one node: a fact an earlier build already wrote keeps its node (and
            # vector); this batch only adds its provenance edges
            triples=[t for tid, t in acc.triples.items() if tid not in stored_triples],
            description_max_sentences=params.description_max_sentences,
        )
        with run.stage("embed"):
            _embed_stage(run, reasoner, new, params, spill, ket.chunk_vectors)
            ket.spill_chunk_vectors(spill)  # not kept in memory for the rest of the build: read back from the spill

        describes = ket.describes(reasoner)  # the ket stage reads the resolved rows
        with run.stage("write"):
            gw.set_pending(store, [d.id for d in new_docs] + _outer_unstored(store, unstored))
            entity_ids = list(acc.entities)
            in_files = _vectors_in_files(store, new, spill)
            if in_files:
                unstored.update(d.id for d in new_docs)
            inserted = _write_stage(store, new, acc, spill, params.write_batch_rows, keep_entities=describes,
                                    in_files=in_files)
            gw.update_existing_entities(store, acc, existing, params.description_max_sentences)
            if not first_entities:
                # a first build's rows carry their counts already (each entity's chunks are its
                # MENTIONS edges, all loaded now); only entities an earlier build wrote gain mentions
                writes.refresh_mention_counts(store, entity_ids)
            del entity_ids
            if not in_files:
                gw.set_pending(store, _outer_unstored(store, unstored))  # last: from here on the documents count as built
            report.new_triples, report.new_entities = inserted["Triple"], inserted["Entity"]
            # the vector files may be written from these vectors only where every row was loaded
            # (a row skipped as already present keeps the vector Kùzu had)
            spilled_whole = _keep_ids_of_whole_tables(new, inserted, spill, in_files)
            # the vectors the doc_layer and ket stages read, stored now (``_read_before_index``)
            stored_now = _read_before_index(in_files)
            if stored_now:
                early_vectors.wait_for_others(store.path, early)
            for table in stored_now:
                search.prepare_exact_search(store, table, spill.loaded(table))
            if early is not None:  # their vector files, made by a worker beside the doc_layer and ket stages
                early.start(store.path, spill, _early_tables(store, spill, spilled_whole - set(stored_now),
                                                             params.workers))
            run.emit("write", 1, 1, ", ".join(f"{k} +{v}" for k, v in inserted.items() if v))
            if describes:
                titles = {d.id: d.title for d in new_docs}
            # nothing after the write reads the new rows, the chunk lists or the documents (the
            # ket stage keeps its own list of the new chunks): released before the index stages
            del new, all_chunks, chunks_by_doc, new_docs
        if not describes:
            # nothing after the write reads the resolved rows (the ket stage's descriptions need an
            # LLM): released here, not after the doc_layer and ket stages (issue 29: ~0.5 GB per
            # 10k passages held beside the KNN tiles, the keyword layer and the vector files)
            acc, existing = None, {}
            memory.give_back()

    with run.stage("doc_layer"):
        # a first build's Document vectors from the spill, not read back out of Kùzu (issue 29)
        with steps.marked(store, "doc_layer") as interrupted:
            n_edges = build_doc_layer(store, params.similar_docs_k, force=interrupted,
                                      loaded=spill.loaded("Document") if "Document" in spilled_whole else None)
        if n_edges is not None:
            # the layer's vectors, cosine tiles, edge rows and Kùzu's query results were made and
            # released: their pages go back to the system rather than stay under every later stage
            memory.give_back(arrow=True)
        if interrupted:
            steps.record_repair(report, "doc_layer")
        run.emit("doc_layer", 1, 1, "up to date" if n_edges is None else
             f"{n_edges} SIMILAR_DOC edges (neighbours: {cells.describe(reads.count_nodes(store, 'Document'))})")

    with run.stage("ket"):
        if acc is not None:
            ket.describe_stage(reasoner, acc, {eid: str(row["name"]) for eid, row in existing.items()}, titles)
        acc = None  # the batch's entities, triples and provenance: nothing after this stage reads them
        existing = {}
        ket.write_stage()

    with run.stage("index"):
        written_early = early.wait() if early is not None else set()  # raises the worker's error
        early_vectors.wait_for_others(store.path, early)  # of the builds this one runs inside
        sizes = store.counts()
        for i, table in enumerate(VECTOR_TABLES):
            # vector_search ranks tables of up to EXACT_MAX_ROWS rows exactly (repeatable traces;
            # no bound unless HNSW is opted into, issue 29) and never reads their HNSW index, so
            # building one is pure cost (issue 12: with sentence facts it was most of the HotpotQA
            # build); past an opted-in bound it is created, and an existing one follows inserts
            files_only = vector_home.in_files(vector_home.state(store, table))
            if not files_only and (sizes.get(table, 0) > EXACT_MAX_ROWS or store.has_vector_index(table)):
                with steps.marked(store, f"vector_index:{table}") as interrupted:
                    done = store.ensure_vector_index(table)
                if interrupted and done == search.CREATED:
                    steps.record_repair(report, f"vector_index:{table}")
                note = f"vector index on {table}"
            else:  # the exact search's memory-mapped matrix, written now rather than at the first question
                # the worker's files are adopted there once their id digest is the table's
                loaded: tuple[list[str], RowFile | np.ndarray] | None
                if files_only:  # the files are the vectors' only copy: this build's rows (spilled, or
                    # written by the worker) merged with the earlier ones still in the table
                    loaded = spill.loaded(table) or ([], np.zeros((0, int(store.dim)), dtype=np.float32))
                else:
                    loaded = spill.loaded(table) if table in spilled_whole - written_early else None
                n = search.prepare_exact_search(store, table, loaded)
                note = f"{table}: {n} embedded rows, searched exactly"
            run.emit("index", i + 1, len(VECTOR_TABLES) + 1, note)
        with steps.marked(store, "fts_index") as interrupted:
            done = store.ensure_fts_index("Chunk")
        if done == search.REPAIRED or (interrupted and done == search.CREATED):
            steps.record_repair(report, "fts_index")
        run.emit("index", len(VECTOR_TABLES) + 1, len(VECTOR_TABLES) + 1, "full-text index on Chunk")

    if in_files:
        unstored.clear()
        gw.set_pending(store, _outer_unstored(store, unstored))  # their vectors are stored: the documents count as built
    steps.clear_build_mark(store)  # last: every stage ran
    report.counts = store.counts()
    return report


# Per workspace, the documents whose rows a build of this process loaded while their vectors are not
# stored yet (kgviz.graph.vector_home: the documents stay pending until the index stage has stored
# them), one set per build under way. A build can run inside another (same thread: the build lock
# is re-entrant), and must neither take the outer build's documents for an interrupted build's nor
# drop them from the pending list.
_UNSTORED: dict[str, list[set[str]]] = {}


@contextmanager
def _unstored_documents(store: GraphStore) -> Iterator[set[str]]:
    """This build's set in ``_UNSTORED``, removed when the build ends (finished or not: a build
    that stopped leaves its documents pending for the next one)."""
    key, mine = str(store.path), set[str]()
    _UNSTORED.setdefault(key, []).append(mine)
    try:
        yield mine
    finally:
        _UNSTORED[key] = [s for s in _UNSTORED[key] if s is not mine]
        if not _UNSTORED[key]:
            del _UNSTORED[key]


def _outer_unstored(store: GraphStore, mine: set[str] | None = None) -> list[str]:
    """The documents builds under way in this process (but ``mine``) wait to store the vectors of."""
    return sorted({d for s in _UNSTORED.get(str(store.path), []) if s is not mine for d in s})


def _chunk_stage(
    store: GraphStore, documents: Sequence[Document], params: BuildParams, report: BuildReport
) -> tuple[list[Document], dict[str, list[Chunk]]]:
    unique = _first_copies(documents, report)
    # an outer build of this process (this build runs inside it) is not interrupted: its documents
    # wait for their vectors to be stored
    interrupted = [d for d in gw.pending_documents(store) if d not in _outer_unstored(store)]
    if interrupted:
        gw.purge_documents(store, interrupted)
        gw.set_pending(store, [])
    present = store.existing_ids("Document", [d.id for d in unique])
    if params.retry_failed and present:
        # a built document with failed chunks is rebuilt: its good Extraction rows are reused
        # and only the failed chunks go back to the model
        retry = sorted(gw.documents_with_failed_chunks(store) & present)
        if retry:
            gw.purge_documents(store, retry)
            present -= set(retry)
            report.retried_documents = len(retry)
    new_docs = [d for d in unique if d.id not in present]
    report.new_documents = len(new_docs)
    report.skipped_documents = len(unique) - len(new_docs)
    report.resumed_documents = len(set(interrupted) & {d.id for d in new_docs})
    chunks_by_doc = {
        d.id: chunk_document(d, chunk_tokens=params.chunk_tokens, overlap=params.chunk_overlap) for d in new_docs
    }
    report.new_chunks = sum(len(c) for c in chunks_by_doc.values())
    return new_docs, chunks_by_doc


def _first_copies(documents: Sequence[Document], report: BuildReport) -> list[Document]:
    """One document per id (same normalised text, whatever the format), the first copy winning;
    each later copy is named in the report's warnings with the source it repeats."""
    kept: dict[str, Document] = {}
    for d in documents:
        first = kept.setdefault(d.id, d)
        if first is not d:
            report.warnings.append(f"duplicate document {d.source or d.id} has the same text as "
                                   f"{first.source or first.id}; built once")
    return list(kept.values())


@dataclass
class _NewRows:
    """The rows a build adds to each node table, in load order (their vectors are spilled in
    the same order); their columns are made a batch at a time by ``columns``."""

    docs: list[Document]
    chunks: list[Chunk]
    entities: list[EntityAgg]
    triples: list[TripleRow]
    description_max_sentences: int
    entity_ids: list[str] = field(init=False)  # kept when the loaded entities are released

    def __post_init__(self) -> None:
        self.entity_ids = [e.id for e in self.entities]

    def ids(self) -> dict[str, list[str]]:
        return {"Document": [d.id for d in self.docs], "Chunk": [c.id for c in self.chunks],
                "Entity": self.entity_ids, "Triple": [t.id for t in self.triples]}

    def sizes(self) -> dict[str, int]:
        return {"Document": len(self.docs), "Chunk": len(self.chunks), "Entity": len(self.entity_ids),
                "Triple": len(self.triples)}

    def texts(self, with_chunks: bool) -> Iterator[tuple[str, str]]:
        """(table, text to embed) of every new row, tables in load order (chunks left out when
        the knn stage embedded them)."""
        for d in self.docs:
            yield "Document", document_text(d.title, d.text)
        if with_chunks:
            for c in self.chunks:
                yield "Chunk", c.text
        for e in self.entities:
            yield "Entity", entity_text(e.name, e.description(self.description_max_sentences))
        for t in self.triples:
            yield "Triple", t.embed_text()

    def columns(self, table: str, start: int, stop: int) -> pa.Table:
        """Rows ``start:stop`` of ``table`` as Arrow columns (no emb), each made in one pass over
        the row objects: no dict per row (issue 29), except a Triple's ``to_row``."""
        if table == "Document":
            docs = self.docs[start:stop]
            return gw.columns_table({
                "id": [d.id for d in docs], "title": [d.title for d in docs], "source": [d.source for d in docs],
                "sha256": [d.sha256 for d in docs], "text": [d.text for d in docs],
                "n_tokens": [count_tokens(d.text) for d in docs]})
        if table == "Chunk":
            chunks = self.chunks[start:stop]
            return gw.columns_table({
                "id": [c.id for c in chunks], "doc_id": [c.doc_id for c in chunks], "ord": [c.ord for c in chunks],
                "text": [c.text for c in chunks], "n_tokens": [c.n_tokens for c in chunks]})
        if table == "Entity":
            entities = self.entities[start:stop]
            names = [e.name for e in entities]
            return gw.columns_table({
                "id": [e.id for e in entities], "name": names, "type": [e.type for e in entities],
                "description": [e.description(self.description_max_sentences) for e in entities],
                "origin": ["corpus"] * len(entities),
                "aliases": ["|".join(f for f in e.surface_forms if f != name) for e, name in zip(entities, names)],
                "n_mentions": [len(e.chunks) for e in entities]})
        columns: dict[str, list[object]] = {}
        for at in range(start, stop, ROW_BLOCK):  # the row dicts of a block at a time
            rows = [t.to_row() for t in self.triples[at:min(at + ROW_BLOCK, stop)]]
            for name in rows[0]:
                columns.setdefault(name, []).extend([row[name] for row in rows])
        return gw.columns_table(columns)


def _keep_ids_of_whole_tables(new: _NewRows, inserted: dict[str, int], spill: VectorSpill,
                              in_files: set[str]) -> set[str]:
    """The tables whose new rows were every one loaded with its spilled vector; their ids are
    kept in the spill (on disk, not in memory) for the index stage, as are those of the tables
    ``in_files`` (every new row spilled, some perhaps already in the table)."""
    whole = set()
    for table, ids in new.ids().items():
        if inserted.get(table) == len(ids) == spill.count(table):
            spill.keep_ids(table, ids)
            whole.add(table)
        elif table in in_files:
            spill.keep_ids(table, ids)
    return whole


def _vectors_in_files(store: GraphStore, new: _NewRows, spill: VectorSpill) -> set[str]:
    """The tables (vector_home.TABLES) whose new rows are loaded without their vectors, which are
    then kept in the exact search's vector files only (kgviz.graph.vector_home): those that keep
    them there already, and those that hold no row yet, are searched exactly (no HNSW index, no
    opted-in bound below their size), have every new row spilled with its vector, in a workspace
    whose vector folder can be written. A table new to it is marked pending in Meta now."""
    sizes = new.sizes()
    out = set()
    for table in vector_home.TABLES:
        n = sizes.get(table, 0)
        if vector_home.in_files(vector_home.state(store, table)):
            if spill.count(table) != n:
                raise BuildError(f"{table}: {spill.count(table)} vectors for {n} new rows, and this workspace "
                                 "keeps the table's vectors in its vector files only")
            out.add(table)
        elif (0 < n == spill.count(table) and n <= EXACT_MAX_ROWS and not store.holds_rows(table)
              and not store.has_vector_index(table) and vector_file.writable(store.path)):
            vector_home.mark_pending(store, table)
            out.add(table)
    return out


def _read_before_index(in_files: AbstractSet[str]) -> list[str]:
    """The tables among ``in_files`` whose vector files a build writes (or merges its new rows
    into) right after its write stage, not at its index stage: the doc_layer and ket stages may
    read every Document and Chunk vector from the store (SIMILAR_DOC over all documents, the KNN
    graph over all chunks, a replan over chunks another build wrote meanwhile), and the files are
    those vectors' only copy. A build that runs inside this one (kgviz.index.graph_write) finds
    them stored too."""
    return [t for t in READ_BEFORE_INDEX if t in in_files]


def _early_tables(store: GraphStore, spill: VectorSpill, spilled_whole: set[str], workers: int) -> list[str]:
    """The tables whose vector files a worker makes while the doc_layer and ket stages run
    (kgviz.index.early_vectors): loaded whole from the spill into a table that holds no other
    row (as many rows as were spilled), searched exactly (no HNSW index); none unless they hold
    EARLY_MIN_ROWS rows together and a second core is there (``workers`` > 1)."""
    tables = []
    for table in VECTOR_TABLES:
        if table in spilled_whole and spill.count(table) <= EXACT_MAX_ROWS and not store.has_vector_index(table):
            if reads.count_nodes(store, table) == spill.count(table):
                tables.append(table)
    total = sum(spill.count(t) for t in tables)
    return tables if process_count(workers, total, EARLY_MIN_ROWS) > 1 else []


def _embed_stage(
    run: _Run,
    reasoner: Reasoner,
    new: _NewRows,
    params: BuildParams,
    spill: VectorSpill,
    chunk_vectors: np.ndarray | None = None,
) -> None:
    """Vectors for the new rows, spilled per table in load order (kgviz.index.spill) a batch at a
    time: no stage holds every vector (issue 29). ``chunk_vectors`` are the chunks' when the knn
    stage made them. The embedder sees the same batches as one pass over all the texts."""
    if chunk_vectors is not None:
        spill.append("Chunk", chunk_vectors)
    sizes = new.sizes()
    total = sum(sizes.values()) - (sizes["Chunk"] if chunk_vectors is not None else 0)
    tables: deque[str] = deque()  # the table of each text read and not yet stored, in order
    done = 0
    t0 = time.perf_counter()

    def texts() -> Iterator[str]:
        for table, text in new.texts(with_chunks=chunk_vectors is None):
            tables.append(table)
            yield text

    with embed_processes(reasoner.embedder, params.workers, total) as pool:  # both cores (issue 29)
        # one stream of batches: the workers embed while this process makes the next texts and
        # spills the last vectors; progress every EMBED_BLOCK_BATCHES batches
        for i, matrix in enumerate(embed_stream(reasoner.embedder, texts(), params.embed_batch_size, pool=pool)):
            start = 0
            for table, group in groupby(tables.popleft() for _ in range(len(matrix))):  # a batch can span tables
                n = sum(1 for _ in group)
                spill.append(table, matrix[start:start + n])
                start += n
            done += len(matrix)
            if (i + 1) % EMBED_BLOCK_BATCHES == 0 or done == total:
                run.emit("embed", done, total, f"{done} of {total} texts")
    run.report.usage_by_stage["embed"] = Usage(
        calls=-(-total // params.embed_batch_size), latency_s=time.perf_counter() - t0
    )


def _write_stage(store: GraphStore, new: _NewRows, acc: Assembled, spill: VectorSpill, batch_rows: int, *,
                 keep_entities: bool, in_files: AbstractSet[str] = frozenset()) -> dict[str, int]:
    """Nodes then edges, ``batch_rows`` rows per bulk load; a node batch's columns are made while
    the batch before it is copied (``gw.load_node_tables``) and its vectors read back from the spill as
    it is loaded. Returns rows inserted per table.

    Unless ``keep_entities`` (a later stage reads them), the new entities' aggregates (surface
    forms, types, sentences, chunks: about half of the resolved rows) are released once their
    nodes are loaded, before the Triple nodes' COPY, the write stage's peak (issue 29); the
    entities an earlier build wrote stay for ``update_existing_entities``."""
    def release_entities() -> None:
        new.entities = []
        loaded = set(new.entity_ids)
        acc.keep_entities([e for e in acc.entities if e not in loaded])
        memory.give_back()

    def columns_of(table: str) -> Callable[[int, int], pa.Table]:
        return lambda start, stop: new.columns(table, start, stop)

    def vectors_of(table: str) -> Callable[[int, int], np.ndarray]:
        return lambda start, stop: spill.read(table, start, stop)

    inserted = gw.load_node_tables(store, [
        gw.NodeRows(table, n, columns_of(table), None if table in in_files else vectors_of(table),
                    loaded=release_entities if table == "Entity" and not keep_entities else None)
        for table, n in new.sizes().items()], batch_rows)
    # a first build's edges go through one file per table, with the spill (removed when the build ends)
    inserted.update(gw.write_edges(store, chunks=new.chunks, acc=acc, batch_rows=batch_rows, scratch=spill.directory))
    return inserted
