"""The arrays of KET-RAG's keyword view, made from the graph and stored in the workspace (ours).

KET-RAG's keyword channel (kgviz.methods.ket_cache) searches an in-memory copy of the keyword
layer: the keyword and sub-chunk matrices (unit rows), the sub-chunks' token counts and parent
chunks, and the HAS_KEYWORD adjacency. Made from Kùzu it costs seconds (issue 29: ~10 s at
10,000 passages, 55k keyword vectors read out of Kùzu, normalised and made sparse), so it is made
once and its arrays stored under ``<workspace>/vectors/VIEW_FOLDER``; later processes map them.
The build makes and stores it at the end of its ket stage (kgviz.index.ket_build), so the first
question only maps it; a workspace built before that (or whose store failed) has it made and
stored by its first KET question. The question makes it from the graph (``make_parts``); the
build from the keyword layer it has just written (``parts_from_layer``: the same rows, ordered
as the graph returns them, and the same float32 vectors normalised in the same blocks, so the
same arrays, without reading ~1.7 GB of vectors back out of Kùzu at 100k passages, issue 29).
Both store it with ``store_parts``, so the files are the same bytes whoever writes them.

The arrays are used only for the key they were stored with: the keyword signature (a new one with
every rebuilt keyword layer), the embedder, and the row counts (a layer half rewritten by a
killed build). This module reads the graph and writes files; what a question does with the view
lives in kgviz.methods.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import scipy.sparse as sp

from kgviz.errors import DiskFullError, GraphStoreError
from kgviz.graph import reads, vector_file
from kgviz.graph.arrow import vectors_to_numpy
from kgviz.graph.protocol import GraphStore
from kgviz.vectors import unit_rows

log = logging.getLogger(__name__)

VIEW_FOLDER = "ket_keywords"
VIEW_VERSION = 1
SPARSE_BELOW = 0.35  # ours: density under which vectors are held as a sparse matrix
BLOCK_ROWS = 8192  # vectors normalised at a time while the view is made
MAPPED = ("kw_matrix.data", "kw_matrix.indices", "sub_matrix.data", "sub_matrix.indices", "kw_sub.indices")
STRINGS = ("kw_ids", "kw_words", "sub_ids", "sub_chunk")

# what the build's ensure_stored found or did (BuildReport.ket["keyword_view"])
STORED, UP_TO_DATE, NOT_STORED = "stored", "up to date", "not stored"

# Where the keyword layer's vectors (Keyword.emb, SubChunk.emb) are kept (Meta; no value: in the
# graph, as every workspace written before this key). A build that stores this view keeps them
# here only (IN_VIEW): in Kùzu they were the ket stage's time and memory peak, and nothing but
# make_parts read them (issue 29: the Keyword COPY of 128k keywords at 30,000 passages took 46 s
# with the 768-float column and 4 s without, and peaked 1.1 GB lower).
META_LAYER_VECTORS = "ket.layer_vectors"
IN_GRAPH, IN_VIEW = "graph", "view"


@dataclass
class ViewParts:
    """The view's arrays as a question uses them (kgviz.methods.ket_cache.KeywordView adds the
    lookups made from them and the chunk labels)."""

    kw_ids: list[str]
    kw_words: list[str]
    kw_matrix: Any  # unit rows; numpy array or scipy CSC (see compact, by_column)
    kw_sub: sp.csr_matrix  # keyword x sub-chunk, 1 where HAS_KEYWORD
    sub_ids: list[str]
    sub_chunk: list[str]  # parent chunk of each sub-chunk
    sub_tokens: np.ndarray
    sub_matrix: Any  # unit rows; numpy array or scipy CSR


def compact(m: np.ndarray) -> Any:
    """CSR when most entries are zero (hashing vectors: ~16% non-zero for keywords, where a
    sparse product is 5x faster than a dense one); dense otherwise (model embeddings)."""
    if m.size and np.count_nonzero(m) < SPARSE_BELOW * m.size:
        return sp.csr_matrix(m)
    return m


def by_column(m: Any) -> Any:
    """A sparse ``m`` as CSC: the keyword matrix is only ever multiplied whole with the query,
    and kgviz.graph.search.row_scores reads a CSC matrix at the query's nonzero columns only,
    with the same float32 sums as the CSR product (issue 29: that product was a quarter of
    ket-rag at 10,000 passages)."""
    return m.tocsc() if sp.issparse(m) else m


def unit_matrix(column: Any, dim: int, *, columns: bool = False) -> Any:
    """``compact(unit_rows(vectors_to_numpy(column, dim)))`` (``by_column`` of it with
    ``columns``), the same arrays, made BLOCK_ROWS rows at a time (``unit_blocks``)."""
    return unit_blocks(len(column), dim, lambda start, stop: vectors_to_numpy(column.slice(start, stop - start), dim),
                       columns=columns)


def unit_blocks(n: int, dim: int, rows: Callable[[int, int], np.ndarray], *, columns: bool = False,
                read: Callable[[int], None] | None = None) -> Any:
    """``compact(unit_rows(M))`` of the n x dim float32 matrix M whose rows start..stop
    ``rows(start, stop)`` gives (with ``columns``, ``by_column`` of it), made BLOCK_ROWS rows at
    a time: once to count the non-zero entries of each column, once to put each block's entries
    where they go in the result, whose arrays are made once at their full size. Made whole, the
    float copies of every vector (read, normalised, cast) were ~0.5 GB at 10,000 passages beside
    the result, in the build's ket stage since it makes the view; stacked from per-block
    matrices, then turned by column, the result was held two or three times over (issue 29).
    ``read(stop)``, when given, is told that the second pass has read every row before ``stop``
    (the caller may let those rows go: it reads them in order)."""
    starts = range(0, n, BLOCK_ROWS)

    def block(start: int) -> np.ndarray:
        return unit_rows(rows(start, min(start + BLOCK_ROWS, n)))

    def filled(start: int) -> np.ndarray:  # the second pass's read
        got = block(start)
        if read is not None:
            read(min(start + BLOCK_ROWS, n))
        return got

    if n == 0:
        return compact(np.zeros((0, dim), dtype=np.float32))  # dense, as by_column leaves it
    per_column = np.zeros(dim, dtype=np.int64)
    for s in starts:
        per_column += np.count_nonzero(block(s), axis=0)
    nnz = int(per_column.sum())
    if nnz >= SPARSE_BELOW * n * dim:
        dense = np.empty((n, dim), dtype=np.float32)
        for s in starts:
            dense[s:s + BLOCK_ROWS] = filled(s)
        return dense
    return _sparse_by_blocks(n, dim, starts, filled, per_column, columns)


def _sparse_by_blocks(n: int, dim: int, starts: range, block: Callable[[int], np.ndarray],
                      per_column: np.ndarray, columns: bool) -> Any:
    """The CSR (``columns``: CSC) matrix of the blocks, canonical (indices sorted in each row or
    column, as scipy's CSR of a dense matrix and its ``tocsc`` have them), with the index dtype
    scipy gives that many entries (int32 below 2**31)."""
    nnz = int(per_column.sum())
    index = np.int32 if max(nnz, n, dim) < 2**31 else np.int64
    data = np.empty(nnz, dtype=np.float32)
    indices = np.empty(nnz, dtype=index)
    ptr = np.zeros((dim if columns else n) + 1, dtype=index)
    if columns:
        np.cumsum(per_column, out=ptr[1:])
        filled = ptr[:-1].astype(np.int64)  # where each column's next entry goes
    for s in starts:
        b = block(s)
        if columns:
            cols, at_rows = np.nonzero(b.T)  # by column, then row: each column's rows in order
            counts = np.bincount(cols, minlength=dim)
            first = np.cumsum(counts) - counts  # each column's first entry in this block's list
            dest = filled[cols] + (np.arange(cols.size) - first[cols])
            indices[dest] = at_rows + s
            data[dest] = b[at_rows, cols]
            filled += counts
        else:
            at_rows, cols = np.nonzero(b)  # by row, then column
            start = int(ptr[s])
            indices[start:start + cols.size] = cols
            data[start:start + cols.size] = b[at_rows, cols]
            ptr[s + 1:s + 1 + len(b)] = start + np.cumsum(np.count_nonzero(b, axis=1))
    made = (sp.csc_matrix if columns else sp.csr_matrix)((data, indices, ptr), shape=(n, dim), copy=False)
    made.has_sorted_indices = True
    return made


def adjacency(kw_rows: np.ndarray, sub_cols: np.ndarray, n_kw: int, n_sub: int) -> sp.csr_matrix:
    """keyword x sub-chunk, 1 at each (keyword, sub-chunk) pair of HAS_KEYWORD, in any order."""
    adj = sp.csr_matrix((np.ones(kw_rows.size, np.float32), (kw_rows, sub_cols)), shape=(n_kw, n_sub))
    adj.sort_indices()
    return adj


def make_parts(store: GraphStore) -> ViewParts:
    """The view's arrays made from the graph's keyword layer; a GraphStoreError when the graph
    does not hold the layer's vectors (META_LAYER_VECTORS: the view was their only copy)."""
    if store.get_meta(META_LAYER_VECTORS) == IN_VIEW:
        raise GraphStoreError(
            "KET-RAG's keyword view is missing or damaged, and this workspace keeps its keyword and "
            f"sub-chunk vectors only there ({view_folder(store)})",
            hint="run the build again: it makes the keyword layer and its view again")
    dim = int(store.dim)
    kw = reads.keyword_vectors(store)
    kw_ids = kw.column(0).to_pylist()
    sub = reads.subchunk_vectors(store)
    sub_ids = sub.column(0).to_pylist()
    edges = reads.keyword_links(store)
    kpos = {k: i for i, k in enumerate(kw_ids)}
    spos = {s: i for i, s in enumerate(sub_ids)}
    pairs = [(kpos[k], spos[s]) for k, s in zip(edges.column(0).to_pylist(), edges.column(1).to_pylist())
             if k in kpos and s in spos]
    rows = np.asarray([p[0] for p in pairs], dtype=np.int64)
    cols = np.asarray([p[1] for p in pairs], dtype=np.int64)
    return ViewParts(
        kw_ids, kw.column(1).to_pylist(), unit_matrix(kw.column(2), dim, columns=True),
        adjacency(rows, cols, len(kw_ids), len(sub_ids)),
        sub_ids, sub.column(1).to_pylist(), np.asarray(sub.column(2).to_pylist(), dtype=np.int64),
        unit_matrix(sub.column(3), dim))


@dataclass
class LayerRows:
    """A keyword layer as its writer holds it (kgviz.index.ket_keywords.KeywordLayer), rows in
    any order: keyword ids, words and vectors; sub-chunk ids, parent chunks, token counts and
    vectors; HAS_KEYWORD as (keyword row, sub-chunk row) pairs. ``*_vectors(positions)`` gives the
    float32 rows at those positions, the values the graph stores. ``release_vectors(kind, stop)``
    ("keywords" or "subchunks"), when given, lets the writer's copy of those vectors go, those
    of rows before ``stop`` (None: all), as the view's matrix of them is made (issue 29: ~0.5 GB
    of keyword vectors at 100k passages, held beside their unit matrix through the ket stage's
    peak). The writer keeps the keywords in id order, so they are read in their order."""

    kw_ids: list[str]
    kw_words: list[str]
    kw_vectors: Callable[[np.ndarray], np.ndarray]
    sub_ids: list[str]
    sub_chunk: list[str]
    sub_tokens: list[int]
    sub_vectors: Callable[[np.ndarray], np.ndarray]
    link_kw: np.ndarray
    link_sub: np.ndarray
    release_vectors: Callable[[str, int | None], None] | None = None


def _id_order(ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The positions of ``ids`` in id order (code point order: Arrow's byte order of their
    UTF-8, as reads.keyword_vectors orders the rows), and each position's rank in it."""
    order = np.asarray(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size, dtype=np.int64)
    return order, rank


def parts_from_layer(layer: LayerRows, dim: int) -> ViewParts:
    """``make_parts`` of the graph the layer was just written to, from the layer itself: the
    same rows in the same (id) order, the same float32 vectors normalised in the same blocks, so
    the same arrays, without reading every vector back out of Kùzu (issue 29: ~1.7 GB of Arrow
    tables for 550k keywords at 100k passages, the build's peak)."""
    kw_order, kw_rank = _id_order(layer.kw_ids)
    sub_order, sub_rank = _id_order(layer.sub_ids)
    n_kw, n_sub = kw_order.size, sub_order.size
    release = layer.release_vectors
    # read in order (the writer's keywords are in id order): each block goes once read
    read = None if release is None or not np.array_equal(kw_order, np.arange(n_kw)) else \
        (lambda stop: release("keywords", stop))
    kw_matrix = unit_blocks(n_kw, dim, lambda a, b: layer.kw_vectors(kw_order[a:b]), columns=True, read=read)
    if release is not None:
        release("keywords", None)
    sub_matrix = unit_blocks(n_sub, dim, lambda a, b: layer.sub_vectors(sub_order[a:b]))
    if release is not None:
        release("subchunks", None)
    adj = adjacency(kw_rank[np.asarray(layer.link_kw, dtype=np.int64)],
                    sub_rank[np.asarray(layer.link_sub, dtype=np.int64)], n_kw, n_sub)
    return ViewParts(
        [layer.kw_ids[i] for i in kw_order.tolist()], [layer.kw_words[i] for i in kw_order.tolist()], kw_matrix, adj,
        [layer.sub_ids[i] for i in sub_order.tolist()], [layer.sub_chunk[i] for i in sub_order.tolist()],
        np.asarray([layer.sub_tokens[i] for i in sub_order.tolist()], dtype=np.int64), sub_matrix)


def view_folder(store: GraphStore) -> Path:
    return Path(store.path) / vector_file.VECTOR_DIR / VIEW_FOLDER


def view_key(store: GraphStore, signature: str) -> dict[str, Any]:
    return {"version": VIEW_VERSION, "signature": signature, "embedder": store.embedder_id, "dim": int(store.dim),
            "keywords": reads.count_nodes(store, "Keyword"), "subchunks": reads.count_nodes(store, "SubChunk"),
            "links": reads.count_rels(store, "HAS_KEYWORD")}


def _matrix_arrays(name: str, m: Any) -> dict[str, np.ndarray]:
    if sp.issparse(m):
        return {f"{name}.data": m.data, f"{name}.indices": m.indices, f"{name}.indptr": m.indptr}
    return {f"{name}.dense": np.asarray(m)}


def _matrix(arrays: dict[str, np.ndarray], name: str, shape: tuple[int, int], kind: Any) -> Any:
    if f"{name}.dense" in arrays:
        return arrays[f"{name}.dense"]  # read into memory (not mapped): an aligned array, as made
    parts = (arrays[f"{name}.data"], arrays[f"{name}.indices"], arrays[f"{name}.indptr"])
    return kind(parts, shape=shape, copy=False)


def parts_arrays(parts: ViewParts) -> dict[str, np.ndarray] | None:
    """The arrays stored for ``parts``; None when a string would not survive a fixed-width array
    (not a str, or ending in NUL, which numpy strips)."""
    items = parts_array_items(parts)
    return None if items is None else dict(items)


def parts_array_items(parts: ViewParts) -> Iterator[tuple[str, np.ndarray]] | None:
    """``parts_arrays`` as (name, array) pairs, each array made when it is asked for: a writer
    that stores each before asking for the next holds one string array at a time (issue 29:
    fixed-width arrays of 550k keyword ids and words, ~0.1 GB each at 100k passages)."""
    if any(not isinstance(x, str) or x.endswith("\0") for name in STRINGS for x in getattr(parts, name)):
        return None

    def items() -> Iterator[tuple[str, np.ndarray]]:
        for name in STRINGS:
            values = getattr(parts, name)
            yield name, np.array(values, dtype=str) if values else np.zeros(0, dtype="<U1")
        yield "sub_tokens", np.asarray(parts.sub_tokens, dtype=np.int64)
        for name in ("kw_matrix", "sub_matrix", "kw_sub"):
            yield from _matrix_arrays(name, getattr(parts, name)).items()

    return items()


def stored_parts(store: GraphStore, key: dict[str, Any]) -> ViewParts | None:
    """The parts mapped from the workspace when they were stored for ``key`` and are whole."""
    arrays = vector_file.load_arrays(view_folder(store), key, MAPPED)
    if arrays is None:
        return None
    n_kw, n_sub, dim = len(arrays["kw_ids"]), len(arrays["sub_ids"]), int(store.dim)
    return ViewParts(
        arrays["kw_ids"].tolist(), arrays["kw_words"].tolist(),
        _matrix(arrays, "kw_matrix", (n_kw, dim), sp.csc_matrix), _matrix(arrays, "kw_sub", (n_kw, n_sub), sp.csr_matrix),
        arrays["sub_ids"].tolist(), arrays["sub_chunk"].tolist(), np.array(arrays["sub_tokens"]),
        _matrix(arrays, "sub_matrix", (n_sub, dim), sp.csr_matrix))


def store_parts(store: GraphStore, key: dict[str, Any], parts: ViewParts) -> str | None:
    """Store ``parts`` under ``key``; None when stored, else why not (logged: a read-only
    workspace or a full disk leaves every process to make the view, as before it was stored)."""
    arrays = parts_array_items(parts)
    if arrays is None:
        return "an id or word does not fit a fixed-width array"
    try:
        vector_file.write_arrays(view_folder(store), key, arrays)
    except (OSError, DiskFullError) as err:
        log.warning("KET keyword view not stored in %s (%s): each process will make it again", view_folder(store), err)
        return str(err)
    return None


_EVERY = (*MAPPED, *STRINGS, "sub_tokens", "kw_matrix.indptr", "sub_matrix.indptr", "kw_sub.data", "kw_sub.indptr",
          "kw_matrix.dense", "sub_matrix.dense")


def is_stored(store: GraphStore, signature: str) -> bool:
    """Whether the view of the keyword layer with ``signature`` is stored whole (checked as
    ``ensure_stored`` checks it: key, shapes and types)."""
    return vector_file.load_arrays(view_folder(store), view_key(store, signature), _EVERY) is not None


def ensure_stored(store: GraphStore, signature: str, make: Callable[[], ViewParts] | None = None) -> str:
    """Make and store the view of the keyword layer with ``signature`` unless it is stored
    already (the build's ket stage): UP_TO_DATE, STORED, or NOT_STORED and why. Stored arrays
    are checked for their key, shapes and types only (every one mapped: nothing is read).
    ``make``: the parts from the layer the build just wrote (``parts_from_layer``); else they
    are made from the graph (``make_parts``)."""
    if is_stored(store, signature):
        return UP_TO_DATE
    key = view_key(store, signature)
    why = store_parts(store, key, make() if make is not None else make_parts(store))
    return STORED if why is None else f"{NOT_STORED}: {why}"
