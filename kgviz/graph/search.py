"""Vector (HNSW), full-text (BM25) and PageRank search over a GraphStore.

Functions that take the store (``SearchHost``, satisfied by ``kgviz.graph.store.GraphStore``,
whose search methods delegate here), so this module never imports store.py: it used to be a
mixin whose ``self`` was typed as the store, an import cycle between the two modules. It imports
no kuzu and talks to the database through the store's statement and catalog helpers. Measured on kuzu 0.11.3:

* HNSW (vector extension): rows inserted after ``CREATE_VECTOR_INDEX`` are indexed, deleted
  rows leave the index, ``SET`` on the indexed column fails ("delete and then insert"), rows with
  a NULL embedding are skipped, results come back unsorted. ``distance`` is 1 - cosine.
* Filtered HNSW search works on a projected graph (``PROJECT_GRAPH(name, {'T': 'pred'}, [])``),
  which lives in one connection and whose predicate is a string that cannot take $params. Its
  recall falls with the filter's selectivity (20k x 64-d clustered vectors, recall@10: 0.36 when
  0.5% of rows match, 0.77 at 2%, 0.985 at 5%, 1.0 at 20%), while exact search over the matching
  rows was faster up to 4,000 matches — hence the thresholds below.
* FTS (BM25) follows inserts, COPY, SET and DELETE without a rebuild; ``*``/``?`` are wildcards
  (``*`` alone matches every row); stemming is English with default stop words.
* ``page_rank`` on a projected graph is unweighted and drops the rank of dangling nodes.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import os
import re
import tempfile
import threading
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Protocol, Sequence

import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from kgviz.config import buffer_pool_bytes
from kgviz.errors import DiskFullError, GraphStoreError
from kgviz.graph import read_model, vector_file, vector_home
from kgviz.graph.arrow import vectors_to_numpy

log = logging.getLogger(__name__)
READ_BACK_POOL_SHARE = 4  # ours: a read-back statement's vectors fill at most this share of the pool

# HNSW build options (ours). Kùzu's defaults are mu 30, ml 60, efc 200; on 20k x 384 clustered
# vectors these smaller ones built 3.3x faster (6.6 s vs 21.5 s, 2 cores) at recall@10 0.997.
HNSW_OPTIONS = "mu := 16, ml := 32, efc := 100"
# Search-time candidate list (Kùzu's default efs is 200); raised to 2k for large k.
HNSW_EFS = 200
# A filtered search is exact (numpy over the matching rows) unless more rows than this match and
# they are at least this share of the embedded rows; only then is Kùzu's filtered HNSW used.
EXACT_FILTER_MAX_ROWS = 5000
# Every search of a table holding at most this many embedded rows is exact, unfiltered ones on a
# memory-mapped matrix of unit rows kept in the workspace (kgviz.graph.vector_file): Kùzu's HNSW
# index is approximate and its graph differs from build to build (measured: the same 6k vectors
# indexed twice, even on one thread, gave different top-10s for 11 of 50 queries), so traces would
# not repeat across builds or machines. No bound by default (issue 29: exact at any size; a
# 100k x 384 matrix is 150 MB of file, paged in by the OS). HNSW is opt-in: KGVIZ_HNSW_ABOVE_ROWS=N
# makes tables of more than N rows use the index as described above (approximate, build-dependent).
EXACT_MAX_ROWS: float = float(os.environ.get("KGVIZ_HNSW_ABOVE_ROWS") or "inf")
FILTERED_HNSW_MIN_SHARE = 0.05
# A table whose unit rows are mostly zeros (the hashing embedder's: ~50 of 768 entries per triple
# on HotpotQA, ~64 per entity) is scored through a sparse copy of its rows: the product then reads
# ~8x fewer bytes than the dense matrix (issue 29: 143,511 triple rows are 440 MB dense at 10k
# passages). The copy is by column (CSC), so a query that is mostly zeros too (a hashing query:
# ~25 of 768 entries) reads only its own columns, ~1/30 of the copy (see row_scores). Model
# embeddings are dense and stay on the dense product; tables of fewer rows than
# SPARSE_SEARCH_MIN_ROWS too (the dense product is as fast there). The sums run in another order
# than BLAS's, so a score can move by float noise; ties are compared at TIE_DIGITS decimals.
SPARSE_SEARCH_BELOW = 0.25
SPARSE_SEARCH_MIN_ROWS = 4096
_SPARSE_BLOCK_ROWS = 65536
# A where-filter value is written into a projected-graph filter string only if it matches this;
# any other value is searched exactly instead (never spliced into Cypher).
_SAFE_LITERAL = re.compile(r"[\w .:#|/@+\-]*")
# Rankings order by (score, id) so results repeat across runs and machines. The hashing embedder
# makes exact cosine ties common (orthogonal vectors all score 0.0), and the HNSW index and BM25's
# ``top`` cut a tie at the k-th row arbitrarily: searches fetch a wider window, and when a tie
# still runs to the window's end they widen it (FTS) or rank exactly (HNSW). Scores are compared
# at TIE_DIGITS decimals so float noise between SIMD paths does not split a tie.
TIE_DIGITS = 6
# a score whose rounding reaches the k-th best's rounding is at most 10**-TIE_DIGITS below it
# (each rounding moves a score by half of that, plus float error); twice that, to spare
_ROUND_SLACK = 2.0 * 10.0 ** -TIE_DIGITS
_SAMPLE_STEP = 16  # _kth_best: every 16th score bounds the k-th best from below
_WINDOW_EXTRA = 16
# Kùzu 0.11.3 runs CREATE_FTS_INDEX as several internal statements, each committed and
# checkpointed on its own, and registers the index only at the end (it refuses to run inside a
# transaction). A process killed part way leaves hidden tables ("<table id>_<index>_appears_info",
# "_docs", ...) that nothing can drop: DROP TABLE says they do not exist, DROP_FTS_INDEX that
# there is no such index, and every later CREATE_FTS_INDEX under that name fails with "Table:
# ... already exists" (measured: kills after 1, 2, 3, 4 and 6 of its WAL writes all left them).
# So the index is created under the first free name (chunk_fts, chunk_fts_1, ...), and a search
# uses whichever full-text index the table has. The leftovers stay, unused (a few rows a chunk).
FTS_NAME_ATTEMPTS = 32
# What ensure_fts_index did.
PRESENT, CREATED, REPAIRED = "present", "created", "repaired"


class SearchHost(Protocol):
    """What search needs from the store: its statements, locks, connection handle and catalog
    (private helpers: search is the store's own code, split out only to keep modules short)."""

    _handle: Any
    path: Any  # the workspace folder (vector files live there)

    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def query_arrow(self, cypher: str, params: Mapping[str, Any] | None = None) -> Any: ...
    def execute(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def write_lock(self, timeout: float | None = None) -> AbstractContextManager[None]: ...
    def derived(self, key: str, load: Any) -> Any: ...
    def graph_version(self) -> str | None: ...
    def _ensure_open(self) -> None: ...
    def _ensure_writable(self) -> None: ...
    def _embedding_dim(self, table: str) -> int: ...
    def _column(self, table: str, column: str) -> str: ...
    def _pk(self, table: str) -> str: ...
    def _catalog(self) -> Any: ...


# names of projected graphs: unique in the process (a projected graph lives in one connection)
_GRAPH_NAMES = itertools.count()


def _tie_crosses(scores: list[float], k: int) -> bool:
    """True when the k-th best (sorted) score ties with the last fetched one, i.e. rows beyond the
    fetched window might tie with the k-th and outrank it on id."""
    return len(scores) > k and round(scores[k - 1], TIE_DIGITS) == round(scores[-1], TIE_DIGITS)


def _indexes(store: SearchHost) -> dict[tuple[str, str], tuple[str, list[str]]]:
    """(table, index name) -> (index type, indexed columns). Cached per database: every vector
    search asks, and indexes change only through ``execute`` (which drops the cache)."""
    cached = store._handle.indexes
    if cached is None:
        rows = store.query("CALL show_indexes() RETURN *")
        cached = {(r["table_name"], r["index_name"]): (str(r["index_type"]).upper(), list(r["property_names"]))
                  for r in rows}
        store._handle.indexes = cached
    return cached


def vector_index_name(table: str) -> str:
    return f"{table.lower()}_emb_idx"


def fts_index_name(table: str) -> str:
    return f"{table.lower()}_fts"


def has_vector_index(store: SearchHost, table: str) -> bool:
    return (table, vector_index_name(table)) in _indexes(store)


def ensure_vector_index(store: SearchHost, table: str) -> str:
    """Cosine HNSW index on ``table.emb``; a no-op when it exists (it follows later inserts).
    Returns PRESENT or CREATED. Kùzu creates it in one commit (a kill part way, measured at
    each of its WAL writes, left either no index or a whole one), so there is nothing to repair."""
    store._ensure_writable()
    store._embedding_dim(table)
    if vector_home.in_files(vector_home.state(store, table)):
        raise GraphStoreError(f"{table}'s vectors are kept in the exact search's vector files only, not in the "
                              "graph, so Kùzu cannot index them (kgviz.graph.vector_home)",
                              hint="search this workspace exactly, or build a new one with the HNSW bound "
                                   "(KGVIZ_HNSW_ABOVE_ROWS) set below the table's size")
    with store.write_lock():
        if has_vector_index(store, table):
            return PRESENT
        name = vector_index_name(table)
        store.execute(
            f"CALL CREATE_VECTOR_INDEX('{table}', '{name}', 'emb', metric := 'cosine', {HNSW_OPTIONS})"
        )
        return CREATED


def vector_search(
    store: SearchHost,
    table: str,
    vector: Sequence[float] | np.ndarray,
    k: int,
    *,
    where: Mapping[str, Any] | None = None,
) -> list[tuple[str, float]]:
    """Nearest rows of ``table`` by cosine similarity: [(id, similarity)], best first.

    ``where`` is an equality filter {column: value} (all must hold). Exact while the table has at
    most EXACT_MAX_ROWS embedded rows (unfiltered: on a cached matrix). Beyond that, exact (numpy
    over the embedded rows that match; about 20 µs per 384-d row) when the table has no HNSW index,
    when at most EXACT_FILTER_MAX_ROWS rows or less than FILTERED_HNSW_MIN_SHARE of them
    match, or when a value is not a plain word-like literal. Otherwise approximate: the
    HNSW index, through Kùzu's filtered search on a projected graph when filtering.
    """
    store._ensure_open()
    dim = store._embedding_dim(table)
    query = np.asarray(vector, dtype=np.float32).ravel()
    if query.shape != (dim,):
        raise GraphStoreError(f"Query vector has dimension {query.size}; {table}.emb has {dim}.")
    if k <= 0:
        return []
    conditions = [(prop, value, store._column(table, prop)) for prop, value in (where or {}).items()]
    for prop, value, _ in conditions:
        if value is None:
            raise GraphStoreError(f"vector_search where: {prop}=None is not a supported filter.")
    cached = _exact_matrix(store, table)
    if cached is not None:  # small enough to rank exactly (and repeatably)
        scored = (cached[0], _scoring_matrix(store, table, cached[1]))
        if not conditions:
            return _rank(*scored, query, k)
        return _filtered_rank(store, table, scored, query, k, conditions)
    if not has_vector_index(store, table):
        return _exact_search(store, table, query, k, conditions)
    if not conditions:
        found = _index_search(store, table, table, query, k)
        return found if found is not None else _exact_search(store, table, query, k, [])
    predicate = _graph_filter(conditions)
    if predicate is None or not _filter_is_broad(store, table, conditions):
        return _exact_search(store, table, query, k, conditions)
    graph = f"kgviz_vs_{next(_GRAPH_NAMES)}"
    with store._handle.pinned() as conn:  # projected graphs live in one connection
        project = f"CALL PROJECT_GRAPH('{graph}', {{'{table}': '{predicate}'}}, [])"
        store._handle.run(conn, project, None, write=False)
        try:
            found = _index_search(store, graph, table, query, k)
        finally:
            store._handle.run(conn, f"CALL DROP_PROJECTED_GRAPH('{graph}')", None, write=False)
    return found if found is not None else _exact_search(store, table, query, k, conditions)


def _filter_is_broad(store: SearchHost, table: str, conditions: list[tuple[str, Any, str]]) -> bool:
    params = {f"w{i}": value for i, (_, value, _) in enumerate(conditions)}
    filters = "".join(f" AND n.{prop} = $w{i}" for i, (prop, _, _) in enumerate(conditions))
    counted = store.query(
        f"MATCH (n:{table}) WHERE n.emb IS NOT NULL RETURN count(n) AS total, "
        f"sum(CASE WHEN true{filters} THEN 1 ELSE 0 END) AS matching",
        params,
    )[0]
    matching, total = int(counted["matching"] or 0), int(counted["total"])
    return matching > EXACT_FILTER_MAX_ROWS and matching >= FILTERED_HNSW_MIN_SHARE * total


def _index_search(
    store: SearchHost, source: str, table: str, query: np.ndarray, k: int
) -> list[tuple[str, float]] | None:
    """HNSW top k by (similarity, id); None when a tie runs past the fetched window (the
    caller then ranks exactly, so which tied rows make the cut never depends on the index)."""
    pk = store._pk(table)
    window = 2 * int(k) + _WINDOW_EXTRA
    rows = store.query(
        f"CALL QUERY_VECTOR_INDEX('{source}', '{vector_index_name(table)}', $q, $k, efs := $efs) "
        f"RETURN node.{pk} AS id, distance",
        {"q": query.tolist(), "k": window, "efs": max(HNSW_EFS, 2 * window)},
    )
    ranked = sorted(((r["id"], 1.0 - float(r["distance"])) for r in rows),
                    key=lambda r: (-round(r[1], TIE_DIGITS), r[0]))
    if len(ranked) >= window and _tie_crosses([sc for _, sc in ranked], k):
        return None
    return ranked[:k]


def _exact_search(
    store: SearchHost, table: str, query: np.ndarray, k: int, conditions: list[tuple[str, Any, str]]
) -> list[tuple[str, float]]:
    pk = store._pk(table)
    params: dict[str, Any] = {f"w{i}": value for i, (_, value, _) in enumerate(conditions)}
    filters = "".join(f" AND n.{prop} = $w{i}" for i, (prop, _, _) in enumerate(conditions))
    result = store.query_arrow(
        f"MATCH (n:{table}) WHERE n.emb IS NOT NULL{filters} RETURN n.{pk}, n.emb", params
    )
    ids = result.column(0).to_pylist()
    if not ids:
        return []
    return _rank(ids, _normalised(vectors_to_numpy(result.column(1), query.size)), query, k)


def _exact_matrix(store: SearchHost, table: str,
                  inserted: tuple[Sequence[str], np.ndarray | vector_file.RowFile] | None = None) -> tuple[Any, np.ndarray] | None:
    """(ids, unit rows) of ``table``'s embedded rows, memory-mapped from the workspace's vector
    files (kgviz.graph.vector_file; written here when missing or stale) and kept on the database
    handle until its next write; None when the table has more than EXACT_MAX_ROWS of them (only
    when HNSW was opted into). A workspace folder that cannot be written ranks in memory.
    The stored vectors' index (vector_file.load_same) is kept beside, under ``<table>|same``.
    ``inserted``: (ids, vectors) a build just loaded into the table; when they are exactly the
    table's embedded rows (the same ids: the first build of a workspace), the files are written
    from them instead of reading every vector back out of Kùzu (issue 29: 143k triple vectors,
    440 MB, at 10k passages; Kùzu stores a FLOAT vector as the float32 it was given)."""
    handle = store._handle
    key = read_model.current_key(store)  # before the lock: it may read the graph
    with handle.matrix_lock:
        generation = handle.generation  # read first: a write during the load forces a reload
        cached = handle.matrices.get(table)
        # a writer's rows (``inserted``) may be new to the files even when the graph has not changed
        # since they were read (kgviz.graph.vector_home: rows an earlier import loaded without them)
        if cached is not None and cached[0] == generation and inserted is None:
            return cached[1]
        pk = store._pk(table)
        dim = store._embedding_dim(table)
        workspace = Path(store.path)
        home = vector_home.state(store, table)
        if vector_home.in_files(home):  # the files are the vectors' only copy (kgviz.graph.vector_home)
            kept, kept_digest = _files_only(store, table, pk, dim, home, inserted)
            return _keep_matrix(store, table, generation, kept, kept_digest)
        # Every row's id first: "emb IS NOT NULL" makes Kùzu read the vector column (2.2 s for
        # 143k triple vectors at 10k passages, each process), and the files usually hold every
        # row. When their ids are exactly the table's, every row is embedded (the files hold
        # embedded rows only, and a row's embedding never changes: module docstring of
        # vector_file); otherwise the embedded ids are read as they were. Their count and digest
        # are kept with the read model under the graph's version (reading, sorting and hashing
        # 1.47M triple ids was ~4 s of a process's first search at 100,000 passages).
        n_ids, digest = read_model.remembered(store, key, f"ids:{table}", lambda: _ids_digest(store, table, pk))
        value: tuple[Any, np.ndarray] | None = (
            vector_file.load(workspace, table, digest, dim) if n_ids <= EXACT_MAX_ROWS else None)
        # A build that just loaded every row of the table with its vector (``inserted`` holds
        # exactly the table's ids) needs no "emb IS NOT NULL": that statement reads the whole
        # vector column through Kùzu's buffer pool (issue 29: 1.35 GB for 438k triple vectors at
        # 30,000 passages, ~4.5 GB at 100,000), and every row is known to be embedded.
        inserted_digest = (vector_file.ids_digest(sorted(inserted[0]))
                           if value is None and inserted is not None and n_ids <= EXACT_MAX_ROWS else None)
        if value is None and inserted_digest != digest:
            ids = sorted(store.query_arrow(f"MATCH (n:{table}) WHERE n.emb IS NOT NULL RETURN n.{pk}").column(0).to_pylist())
            n_ids, digest = len(ids), vector_file.ids_digest(ids)
            if n_ids <= EXACT_MAX_ROWS:
                value = vector_file.load(workspace, table, digest, dim)
        if value is None and n_ids <= EXACT_MAX_ROWS and inserted is not None and inserted_digest == digest:
            try:
                value = vector_file.write(workspace, table, list(inserted[0]), inserted[1], _normalised)
            except OSError:
                value = None  # read back below, ranked in memory if the folder stays unwritable
        if value is None and n_ids <= EXACT_MAX_ROWS:
            with _read_back(store, table, pk, dim, n_ids) as (read_ids, stored):
                try:
                    value = vector_file.write(workspace, table, read_ids, stored, _normalised)
                except OSError:
                    value = (read_ids, _normalised(np.asarray(stored)))
        return _keep_matrix(store, table, generation, value, digest)


def _keep_matrix(store: SearchHost, table: str, generation: int, value: tuple[Any, np.ndarray] | None,
                 digest: str) -> tuple[Any, np.ndarray] | None:
    """Keep ``value`` (and its stored vectors' index) on the handle for ``generation``; the caller
    holds the matrix lock."""
    handle = store._handle
    same = None
    if value is not None and isinstance(value[0], np.ndarray):
        same = vector_file.load_same(Path(store.path), table, digest, len(value[0]))
        handle.matrices[f"{table}|digest"] = (generation, digest)  # names the files' CSC copy
    handle.matrices[table] = (generation, value)
    handle.matrices[f"{table}|same"] = (generation, same)
    return value


def _files_only(store: SearchHost, table: str, pk: str, dim: int, home: str | None,
                inserted: tuple[Sequence[str], np.ndarray | vector_file.RowFile] | None) -> tuple[tuple[Any, np.ndarray], str]:
    """((ids, unit rows), digest) of a table whose vectors are kept in the vector files only
    (kgviz.graph.vector_home). A reader loads the files the Meta digest names; they are never
    made from Kùzu, which holds no vector of the table. A writer (``inserted``: the rows a build
    or an import just loaded, with their vectors) makes the files of the table's embedded rows
    now: the rows of the current files still in the table, then the inserted rows not among
    them; files already holding exactly those ids (the build's worker wrote them, or nothing
    changed) are taken as they are. The caller names the new digest in Meta
    (``prepare_exact_search``)."""
    workspace = Path(store.path)
    digest = vector_home.files_digest(home)
    vector_file.restore_previous(workspace, table, digest)  # a merge that stopped part way
    current = vector_file.load(workspace, table, digest, dim) if digest is not None else None
    if digest is not None and current is None:
        raise GraphStoreError(
            f"{table}'s vectors are kept only in {workspace / vector_file.VECTOR_DIR}, and the files there "
            "are missing or damaged", hint="build the workspace again from its documents (a new workspace)")
    if inserted is None:
        if current is None:  # a first build between its write and index stages, running or stopped
            raise GraphStoreError(f"{table}'s vectors are not stored yet: the first build of this workspace is still "
                                  "writing them, or it stopped before it did",
                                  hint="wait for the build to finish; if none is running, run the build again: it "
                                       "writes the unfinished documents again")
        return current, str(digest)
    in_table = set(store.query_arrow(f"MATCH (n:{table}) RETURN n.{pk}").column(0).to_pylist())
    old_ids = [] if current is None else current[0].tolist()
    keep = np.array([i for i, x in enumerate(old_ids) if x in in_table], dtype=np.int64)
    known = set(old_ids)
    added: dict[str, int] = {}
    for j, x in enumerate(inserted[0]):
        if x in in_table and x not in known and x not in added:
            added[x] = j
    ids = [old_ids[i] for i in keep.tolist()] + list(added)
    new_digest = vector_file.ids_digest(sorted(ids))
    ready = vector_file.load(workspace, table, new_digest, dim)
    if ready is not None:
        return ready, new_digest
    same = None if current is None else vector_file.load_same(workspace, table, str(digest), len(old_ids))
    rows = _MergedRows(current, same, keep, inserted[1], np.array(list(added.values()), dtype=np.int64), dim)
    with vector_file.previous_kept(workspace, table, current is not None):
        try:
            written = vector_file.write(workspace, table, ids, rows, _normalised)
        except OSError as err:
            raise GraphStoreError(f"{table}'s vectors could not be stored in {workspace / vector_file.VECTOR_DIR}: {err}",
                                  hint="make the workspace folder writable and run the build again") from err
    return written, new_digest


class _MergedRows:
    """The stored vectors of the rows ``keep`` of a table's current vector files, then of the rows
    ``add`` of ``inserted``, gathered by row index as ``vector_file.write`` reads them."""

    def __init__(self, current: tuple[Any, np.ndarray] | None, same: tuple[np.ndarray, np.ndarray] | None,
                 keep: np.ndarray, inserted: np.ndarray | vector_file.RowFile, add: np.ndarray, dim: int) -> None:
        if current is not None and same is None:
            raise GraphStoreError("the vector files to merge into do not hold the stored vectors (written by an older kgviz)",
                                  hint="build the workspace again from its documents (a new workspace)")
        self.current, self.same, self.keep, self.inserted, self.add = current, same, keep, inserted, add
        self.shape, self.ndim = (len(keep) + len(add), dim), 2

    def __getitem__(self, index: Any) -> np.ndarray:
        idx = np.arange(self.shape[0])[index].reshape(-1)
        out = np.empty((len(idx), self.shape[1]), dtype=np.float32)
        old = idx < len(self.keep)
        if old.any():
            assert self.current is not None and self.same is not None
            pos = self.keep[idx[old]]
            rows = np.array(self.current[1][pos], dtype=np.float32)
            alt = self.same[0][pos]
            copies = alt >= 0
            if copies.any():
                rows[copies] = self.same[1][alt[copies]]
            out[old] = rows
        if (~old).any():
            out[~old] = self.inserted[self.add[idx[~old] - len(self.keep)]]
        return out


def _ids_digest(store: SearchHost, table: str, pk: str) -> tuple[int, str]:
    """(number of rows, digest of their sorted ids) of ``table``."""
    ids = sorted(store.query_arrow(f"MATCH (n:{table}) RETURN n.{pk}").column(0).to_pylist())
    return len(ids), vector_file.ids_digest(ids)


@contextmanager
def _read_back(store: SearchHost, table: str, pk: str, dim: int, n: int) -> Iterator[tuple[list[str], np.ndarray]]:
    """(ids, vectors as Kùzu stores them) of ``table``'s ``n`` embedded rows, read by ranges of
    node offsets whose vectors take at most 1/READ_BACK_POOL_SHARE of the buffer pool: one
    statement for every row filled Kùzu's pool at 100,000 passages (1.47M triple vectors, 4.5 GB,
    when a resumed build reached its index stage: issue 29). The rows go into a temporary
    memory-mapped file in the workspace's vector folder (removed on leaving), so they are never
    held whole in memory; in memory when that folder cannot be written. A range costs a scan of
    the table (~8 s for 1.47M triples), hence ranges as large as the pool allows."""
    per_range = max(1, buffer_pool_bytes() // READ_BACK_POOL_SHARE // (4 * dim))
    last = store.query_arrow(f"MATCH (n:{table}) RETURN max(offset(id(n)))").column(0)[0].as_py()
    folder = Path(store.path) / vector_file.VECTOR_DIR
    spill: Path | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"{table}.", suffix=".readback.npy", dir=folder)
        os.close(fd)
        spill = Path(name)
        rows: np.ndarray = np.lib.format.open_memmap(spill, mode="w+", dtype=np.float32, shape=(n, dim))
    except OSError:
        spill, rows = None, np.empty((n, dim), dtype=np.float32)  # an unwritable folder (ranked in memory)
    try:
        ids: list[str] = []
        for start in range(0, -1 if last is None else int(last) + 1, per_range):
            result = store.query_arrow(
                f"MATCH (n:{table}) WHERE offset(id(n)) >= $a AND offset(id(n)) < $b AND n.emb IS NOT NULL "
                f"RETURN n.{pk}, n.emb", {"a": start, "b": start + per_range})
            got = result.column(0).to_pylist()
            if len(ids) + len(got) > n:
                break
            rows[len(ids):len(ids) + len(got)] = vectors_to_numpy(result.column(1), dim)
            ids.extend(got)
        if len(ids) != n:  # the table changed under the read (a build holds the write lock)
            raise GraphStoreError(f"{table}'s vectors read back: {len(ids)} rows where {n} are embedded",
                                  hint="open the workspace again once no build is writing it")
        yield ids, rows
    finally:
        del rows
        if spill is not None:
            spill.unlink(missing_ok=True)


def stored_vectors(store: SearchHost, table: str, ids: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """({id: vector} read from ``table``'s vector files, the ids left for the caller to read from
    Kùzu: ids not in the files). The files hold each vector as Kùzu stores it, bit for bit (the
    unit row where it is that vector, else a copy: vector_file.load_same); reading vectors by an
    id list in Kùzu 0.11.3 scans the whole vector column (issue 29), the files are a binary
    search and a row copy. Every id is left to Kùzu when the table is not searched exactly (HNSW
    opted into) or its files are from a kgviz that did not write the copies."""
    found: dict[str, np.ndarray] = {}
    if not len(ids) or _exact_matrix(store, table) is None:
        return found, list(ids)
    with store._handle.matrix_lock:  # the matrix and its flags of one generation
        cached, flags = store._handle.matrices.get(table), store._handle.matrices.get(f"{table}|same")
    if cached is None or flags is None or cached[0] != flags[0] or flags[1] is None:
        return found, list(ids)
    (file_ids, matrix), (same, stored) = cached[1], flags[1]
    wanted = np.array(list(ids), dtype=str)
    pos = np.minimum(np.searchsorted(file_ids, wanted), max(len(file_ids) - 1, 0))
    hit = file_ids[pos] == wanted if len(file_ids) else np.zeros(len(wanted), dtype=bool)
    # the rows of the hits in one gather (a row copy per id was most of a read of a few hundred)
    at = pos[hit]
    rows = np.array(matrix[at], dtype=np.float32)
    alt = same[at]
    copies = alt >= 0
    if copies.any():
        rows[copies] = stored[alt[copies]]
    found_rows = iter(rows)
    rest = []
    for i, h in zip(ids, hit.tolist()):
        if h:
            found[i] = next(found_rows)
        else:
            rest.append(i)
    return found, rest


def unit_vectors(store: SearchHost, table: str, ids: Sequence[str]) -> dict[str, np.ndarray] | None:
    """{id: unit row} of the ids among ``table``'s embedded rows, read-only views of the exact
    search's memory-mapped matrix (each row the stored vector scaled to length 1, as
    ``kgviz.vectors.unit_rows`` makes it); an id missing from the answer has no embedding. None
    when the table has no vector files (HNSW opted into, or a workspace that cannot be written):
    the caller reads the vectors from Kùzu. A reader of a few rows per question never holds the
    whole table (issue 29)."""
    cached = _exact_matrix(store, table)
    if cached is None or not isinstance(cached[0], np.ndarray):
        return None
    file_ids, matrix = cached
    if not len(ids) or not len(file_ids):
        return {}
    wanted = np.array(list(ids), dtype=str)
    pos = np.minimum(np.searchsorted(file_ids, wanted), len(file_ids) - 1)
    hit = file_ids[pos] == wanted
    return {i: matrix[p] for i, p, h in zip(ids, pos.tolist(), hit.tolist()) if h}


def prepare_exact_search(store: SearchHost, table: str,
                         inserted: tuple[Sequence[str], np.ndarray | vector_file.RowFile] | None = None) -> int | None:
    """Write (or check) ``table``'s memory-mapped vector files now, so the first search does not
    pay for it; the number of rows searched exactly, None when the table is left to HNSW.
    ``inserted``: the (ids, vectors) a build just loaded (see ``_exact_matrix``)."""
    cached = _exact_matrix(store, table, inserted)
    if cached is None:
        return None
    _scoring_matrix(store, table, cached[1])  # a mostly-zero table's CSC copy stored beside its rows
    home = vector_home.state(store, table)
    with store._handle.matrix_lock:
        written = store._handle.matrices.get(f"{table}|digest")
    if vector_home.in_files(home) and written is not None and vector_home.files_digest(home) != written[1]:
        vector_home.mark_files(store, table, written[1])  # last: the files are whole
        vector_file.drop_previous(Path(store.path), table)
    return len(cached[0])


def store_exact_files(workspace: Path, table: str, ids: list[str], rows: np.ndarray | vector_file.RowFile,
                      csc_buffer_entries: int | None = None) -> bool:
    """The files ``prepare_exact_search`` leaves for a table whose embedded rows are exactly
    ``ids`` with the vectors ``rows`` (as Kùzu stores them): the unit rows and, for a mostly-zero
    table, their CSC copy, byte for byte what ``_exact_matrix`` and ``_csc_copy`` write. Reads no
    database, so a build's worker process makes them while the graph is still being written
    (kgviz.index.early_vectors); they are used only once ``_exact_matrix`` has found the table's
    ids digest in them. False when the folder could not be written (OSError: the index stage
    tries again, and ranks in memory as before); a full disk is DiskFullError, as there. A CSC
    copy that cannot be stored is left to the index stage (``_csc_copy`` logs it);
    ``csc_buffer_entries``: see ``vector_file.write_csc``."""
    try:
        _, matrix = vector_file.write(workspace, table, ids, rows, _normalised)
    except OSError:
        return False
    n, dim = matrix.shape
    if n >= SPARSE_SEARCH_MIN_ROWS:
        digest = vector_file.stored_digest(workspace, table)
        try:
            if digest is not None and vector_file.load_csc(workspace, table, digest, n, dim) is None:
                vector_file.write_csc(workspace, table, digest, vector_file.row_reader(matrix), n, dim,
                                      _SPARSE_BLOCK_ROWS, SPARSE_SEARCH_BELOW, csc_buffer_entries)
        except (OSError, DiskFullError) as err:
            log.info("%s: the by-column copy of %s's vectors left to the index stage (%s)", workspace, table, err)
    return True


def _filtered_rank(store: SearchHost, table: str, cached: tuple[Any, Any], query: np.ndarray, k: int,
                   conditions: list[tuple[str, Any, str]]) -> list[tuple[str, float]]:
    """Exact top k among the rows that match ``conditions``: the matching rows' positions in the
    memory-mapped matrix (its ids are sorted: binary search) are kept on the handle until its next
    write, and every row is scored in place (no copy of the matching rows: at 75k entities that
    copy was ~200 MB per search), then the ranking is cut to those positions."""
    ids, matrix = cached
    if not isinstance(ids, np.ndarray):  # ranked in memory (workspace not writable): read the rows
        return _exact_search(store, table, query, k, conditions)
    handle = store._handle
    key = f"{table}|where|{sorted((p, repr(v)) for p, v, _ in conditions)}"
    with handle.matrix_lock:
        generation = handle.generation
        found = handle.matrices.get(key)
        if found is None or found[0] != generation:
            params = {f"w{i}": value for i, (_, value, _) in enumerate(conditions)}
            filters = " AND ".join(f"n.{prop} = $w{i}" for i, (prop, _, _) in enumerate(conditions))
            # no "emb IS NOT NULL" (Kùzu would read the vector column): the files hold exactly the
            # embedded rows, so a matching row is searched when its id is in them
            wanted = np.array(store.query_arrow(f"MATCH (n:{table}) WHERE {filters} "
                                                f"RETURN n.{store._pk(table)}", params).column(0).to_pylist(), dtype=str)
            pos = np.zeros(0, np.int64)
            if len(wanted) and len(ids):
                pos = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
                pos = np.sort(pos[ids[pos] == wanted])
            found = handle.matrices[key] = (generation, pos)
    return _rank(ids, matrix, query, k, rows=found[1])


class _OneBlasThread:
    """Matrix-vector products of exact searches on one BLAS thread. NumPy's OpenBLAS splits even a
    matrix-vector product over every core, and on 2 busy cores the threads mostly wait for each
    other: an 18,000 x 768 product took 8.0 ms on 2 threads and 1.9 ms on 1 (median, load ~3;
    kg-rag's p50 on HotpotQA 56 -> 27 ms). The limit is process-wide, so concurrent searches
    share one: the first in sets it, the last out restores what was there (a build's KNN matrix
    products keep both cores when no search runs beside them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._controller: ThreadpoolController | None = None
        self._limiter: Any = None

    def __enter__(self) -> None:
        with self._lock:
            if self._users == 0:
                if self._controller is None:
                    # a controller knows only the BLAS libraries loaded when it is made, and SciPy
                    # brings its own OpenBLAS (loaded by scipy.linalg, not by numpy or scipy.sparse):
                    # loaded first, so a search before any SciPy product still limits both
                    import scipy.linalg  # noqa: F401
                    self._controller = ThreadpoolController()
                self._limiter = self._controller.limit(limits=1, user_api="blas")
            self._users += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                self._limiter.restore_original_limits()
                self._limiter = None


ONE_BLAS_THREAD = _OneBlasThread()


def _scoring_matrix(store: SearchHost, table: str, matrix: np.ndarray) -> Any:
    """What ``table``'s searches multiply the query with: a CSC copy of ``matrix`` (its unit
    rows) when they are mostly zeros, else ``matrix`` itself; taken once per database state
    (``_csc_copy``)."""
    if not isinstance(matrix, np.ndarray) or matrix.shape[0] < SPARSE_SEARCH_MIN_ROWS:
        return matrix
    handle = store._handle
    key = f"{table}|csc"
    with handle.matrix_lock:
        generation = handle.generation
        found = handle.matrices.get(key)
        if found is None or found[0] != generation or found[2] is not matrix:
            found = handle.matrices[key] = (generation, _csc_copy(store, table, matrix), matrix)
    return matrix if found[1] is None else found[1]


def _csc_copy(store: SearchHost, table: str, matrix: np.ndarray) -> sp.csc_matrix | None:
    """``sparse_rows(matrix)`` for the vector files' ``matrix``, memory-mapped from the workspace
    where it is stored for these rows (vector_file.load_csc), else made, stored and mapped (a
    workspace built before the copy was stored: its first search makes it, once); in memory when
    ``matrix`` is not the files' or the folder cannot be written. The caller holds matrix_lock."""
    handle = store._handle
    cached, files = handle.matrices.get(table), handle.matrices.get(f"{table}|digest")
    if cached is None or files is None or files[0] != cached[0] or cached[1][1] is not matrix:
        return sparse_rows(matrix)
    workspace, digest, (n, dim) = Path(store.path), files[1], matrix.shape
    stored = vector_file.load_csc(workspace, table, digest, n, dim)
    if stored is None:
        try:
            vector_file.write_csc(workspace, table, digest, vector_file.row_reader(matrix), n, dim,
                                  _SPARSE_BLOCK_ROWS, SPARSE_SEARCH_BELOW)
        except (OSError, DiskFullError) as err:  # the same copy, made in memory for this process
            log.warning("%s: the by-column copy of %s's vectors not stored (%s)", workspace, table, err)
            return sparse_rows(matrix)
        stored = vector_file.load_csc(workspace, table, digest, n, dim)
        if stored is None:
            raise GraphStoreError(f"The by-column copy of {table}'s vectors just written to {workspace} "
                                  "cannot be read back.", hint="check the disk, then open the workspace again")
    parts = stored[1]
    return None if parts is None else sp.csc_matrix(parts, shape=(n, dim), copy=False)


def sparse_rows(matrix: np.ndarray) -> sp.csc_matrix | None:
    """``matrix`` as CSC (each column's entries in row order), in memory, read a block of rows at
    a time (a memory-mapped matrix is never read whole, nor left mapped); None when the rows are
    not mostly zeros: at least SPARSE_SEARCH_BELOW of the entries read so far non-zero after
    any _SPARSE_BLOCK_ROWS rows (model embeddings: after the first block)."""
    n, dim = matrix.shape
    read = vector_file.row_reader(matrix)
    counts = vector_file.column_counts(read, n, dim, _SPARSE_BLOCK_ROWS, SPARSE_SEARCH_BELOW)
    if counts is None:
        return None
    ((values, rows),) = vector_file.column_ranges(read, n, dim, counts)
    index = vector_file.index_dtype(int(counts.sum()), n, dim)
    indptr: np.ndarray = np.concatenate([[0], np.cumsum(counts)]).astype(index)
    return sp.csc_matrix((values, rows.astype(index), indptr), shape=(n, dim))


def row_scores(normalised: Any, query: np.ndarray) -> np.ndarray:
    """``normalised @ query``. On a CSC copy only the query's nonzero columns are read (a hashing
    query has ~25 of 768): each row still adds its terms one by one in column order in float32,
    the terms of the columns left out are products with 0 that add nothing, so every score is the
    one the whole product gives, bit for bit (tests/graph/test_store_search.py compares them).
    A query with no zero entry multiplies the whole copy."""
    if sp.issparse(normalised):
        cols = np.flatnonzero(query)
        if len(cols) < normalised.shape[1]:
            return np.asarray(normalised[:, cols] @ query[cols])
    return np.asarray(normalised @ query)


def _normalised(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def _rank(ids: Any, normalised: Any, query: np.ndarray, k: int,
          rows: np.ndarray | None = None) -> list[tuple[str, float]]:
    """Top k of ``ids`` by cosine with ``query``, ties broken by id (scores compared at
    TIE_DIGITS decimals); only the positions ``rows`` (sorted) when given. ``normalised``: the
    unit rows, dense or CSC (``_scoring_matrix``)."""
    if len(ids) == 0 or (rows is not None and len(rows) == 0):
        return []
    with ONE_BLAS_THREAD:
        scores = row_scores(normalised, query) / (np.linalg.norm(query) or 1.0)
    pool = np.arange(len(ids)) if rows is None else rows
    if k < len(pool):
        # Rounding never reorders two scores (it is monotone), so the k-th best rounded score is
        # the k-th best score rounded, and a row that rounds to at least that lies within
        # _ROUND_SLACK below the k-th best score: only those rows are rounded (not the table).
        sub = scores if rows is None else scores[pool]
        pool = pool[sub >= _kth_best(sub, k) - _ROUND_SLACK]
    rounded = np.round(scores[pool].astype(np.float64), TIE_DIGITS)
    if k < len(pool):  # only rows at least as good as the k-th (ties included) can make the cut
        kth = np.partition(rounded, len(pool) - k)[len(pool) - k]
        keep = rounded >= kth
        pool, rounded = pool[keep], rounded[keep]
    # the sort key reads plain Python values: indexing numpy per comparison was most of a search
    # when many rows tie with the k-th (hashing vectors: thousands of exact zeros)
    at = pool.tolist()
    neg = (-rounded).tolist()
    names = [ids[i] for i in at]
    order = heapq.nsmallest(k, range(len(at)), key=lambda j: (neg[j], names[j]))
    return [(str(names[j]), float(scores[at[j]])) for j in order]


def _kth_best(scores: np.ndarray, k: int) -> Any:
    """The k-th largest of ``scores`` (1 <= k < len). On a long array the k-th largest of every
    _SAMPLE_STEP-th score comes first: a subset's k-th best is never above the whole array's, so
    every score at least that holds the whole top k, and only those (~k x _SAMPLE_STEP of them)
    are partitioned, instead of every row of the table."""
    n = len(scores)
    if n >= 4 * _SAMPLE_STEP * k:
        sample = scores[::_SAMPLE_STEP]
        floor = np.partition(sample, len(sample) - k)[len(sample) - k]
        scores = scores[scores >= floor]
        n = len(scores)
    return np.partition(scores, n - k)[n - k]


def fts_index_of(store: SearchHost, table: str) -> tuple[str, list[str]] | None:
    """(name, columns) of the full-text index on ``table``, whatever its name; None when it has none."""
    found = sorted((name, cols) for (t, name), (kind, cols) in _indexes(store).items() if t == table and kind == "FTS")
    return found[0] if found else None


def _fts_names(table: str) -> Iterator[str]:
    yield fts_index_name(table)
    for n in range(1, FTS_NAME_ATTEMPTS):
        yield f"{fts_index_name(table)}_{n}"


def ensure_fts_index(store: SearchHost, table: str = "Chunk", columns: Sequence[str] = ("text",)) -> str:
    """BM25 index over ``columns`` of ``table``; idempotent (rebuilt only if the columns
    changed). Kùzu 0.11.3 keeps it current on insert/COPY/SET/DELETE, so no rebuild is
    needed after new rows (pinned by a test). Returns PRESENT, CREATED, or REPAIRED when the
    leftovers of an interrupted creation held its name (see FTS_NAME_ATTEMPTS)."""
    store._ensure_writable()
    for column in columns:
        if store._column(table, column) != "STRING":
            raise GraphStoreError(f"Full-text search needs STRING columns; {table}.{column} is not one.")
    with store.write_lock():
        current = fts_index_of(store, table)
        if current is not None and current[1] == list(columns):
            return PRESENT
        if current is not None:
            store.execute(f"CALL DROP_FTS_INDEX('{table}', '{current[0]}')")
        listed = ", ".join(f"'{c}'" for c in columns)
        blocked = []
        for name in _fts_names(table):
            try:
                store.execute(f"CALL CREATE_FTS_INDEX('{table}', '{name}', [{listed}])")
            except GraphStoreError as err:
                if "already exists" not in str(err):
                    raise
                blocked.append(name)
                continue
            return REPAIRED if blocked else CREATED
    raise GraphStoreError(
        f"Cannot create the full-text index on {table}: interrupted creations left the names "
        f"{', '.join(blocked)} taken.",
        hint="build the graph again in a new workspace",
    )


def fts_search(store: SearchHost, query: str, k: int, table: str = "Chunk") -> list[tuple[str, float]]:
    """BM25 search: [(id, score)], best first. The query is read as plain words (punctuation,
    quotes and wildcards are dropped); a query with no words returns []."""
    store._ensure_open()
    pk = store._pk(table)
    index = fts_index_of(store, table)
    if index is None:
        raise GraphStoreError(
            f"No full-text index on {table}.",
            hint="build this workspace again (kgviz build, or the Build page): a build creates the index, and "
                 f"repairs one an interrupted build left half made (in code: ensure_fts_index('{table}'))",
        )
    name = index[0]
    words = " ".join(re.findall(r"\w+", query))
    if not words or k <= 0:
        return []
    window = int(k) + _WINDOW_EXTRA
    while True:  # widen until no tie crosses the window's end (BM25 is exact, so this ends)
        rows = store.query(
            f"CALL QUERY_FTS_INDEX('{table}', '{name}', $q, top := $k) RETURN node.{pk} AS id, score",
            {"q": words, "k": window},
        )
        rows.sort(key=lambda r: (-round(float(r["score"]), TIE_DIGITS), r["id"]))
        if len(rows) < window or not _tie_crosses([float(r["score"]) for r in rows], k):
            return [(r["id"], float(r["score"])) for r in rows[:k]]
        window *= 4


def pagerank(
    store: SearchHost, node_table: str = "Chunk", rel_table: str = "KNN", damping: float = 0.85
) -> dict[str, float]:
    """{id: PageRank} over the directed, unweighted ``rel_table`` edges (Kùzu's algo
    extension), scaled to sum to 1: Kùzu drops the rank of dangling nodes, so its raw scores
    sum to less than 1 by an amount that depends on the graph and the damping."""
    store._ensure_open()
    pk = store._pk(node_table)
    catalog = store._catalog()
    if (node_table, node_table) not in catalog.pairs.get(rel_table, []):
        raise GraphStoreError(f"Rel table '{rel_table}' does not connect {node_table} to itself.")
    graph = f"kgviz_pr_{next(_GRAPH_NAMES)}"
    with store._handle.pinned() as conn:
        project = f"CALL PROJECT_GRAPH('{graph}', ['{node_table}'], ['{rel_table}'])"
        store._handle.run(conn, project, None, write=False)
        try:
            rows = store.query(
                f"CALL page_rank('{graph}', dampingFactor := $d) RETURN node.{pk} AS id, rank",
                {"d": float(damping)},
            )
        finally:
            store._handle.run(conn, f"CALL DROP_PROJECTED_GRAPH('{graph}')", None, write=False)
    total = sum(float(r["rank"]) for r in rows) or 1.0
    return {r["id"]: float(r["rank"]) / total for r in rows}


def _graph_filter(conditions: list[tuple[str, Any, str]]) -> str | None:
    """A projected-graph node predicate, or None when a value is not safe to write literally.
    Double quotes delimit strings because the predicate itself sits in single quotes."""
    parts = []
    for prop, value, kuzu_type in conditions:
        if isinstance(value, bool) and kuzu_type in ("BOOL", "BOOLEAN"):
            literal = "true" if value else "false"
        elif isinstance(value, int) and not isinstance(value, bool) and kuzu_type == "INT64":
            literal = str(value)
        elif isinstance(value, str) and kuzu_type == "STRING" and _SAFE_LITERAL.fullmatch(value):
            literal = f'"{value}"'
        else:
            return None
        parts.append(f"n.{prop} = {literal}")
    return " AND ".join(parts)
