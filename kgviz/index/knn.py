"""KET-RAG's KNN chunk graph (paper 004, Algorithm 3 lines 1-7) and PageRank over it (Eq. 1).

Each chunk links to its top-K/2 chunks by *lexical* similarity (the number of distinct keywords
the two chunks share, §5.1 "KNN Graph Initialization") and its top-K/2 chunks by *semantic*
similarity (cosine of the chunk embeddings). Both are computed with matrix products in row
blocks, never with a Python loop over pairs: the binary chunk x word matrix X (scipy.sparse)
gives the co-occurrence counts of a tile as X[rows] @ X[cols].T, and unit-length embeddings give
the cosines of a tile as E[rows] @ E[cols].T. A tile is at most ``BLOCK`` rows x ``COL_BLOCK``
columns, and each row keeps only its k best so far (``top_k_over_tiles``), so the memory of the
search does not grow with the number of chunks (issue 29: a 512-row block against every column
was 512 x n float64 plus copies, ~1.5 GB at 100k chunks); the time is still every pair, as an
exact KNN graph needs. Up to COL_BLOCK chunks there is one tile, the product of old; past it a
float32 cosine can differ in its last bit from the one-product value (BLAS picks its kernel by
the matrix shape), and the tiles are a function of the number of chunks alone, so a corpus still
builds the same graph every time.

Tie rule (ours, so the graph is deterministic and testable): best score first, equal scores by
lower chunk index. A neighbour with score <= 0 (no shared keyword, or cosine <= 0) carries no
signal and is never linked (ours), so a chunk can have fewer than K/2 neighbours of a kind.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from kgviz.errors import ConfigError
from kgviz.offline.stopwords import STOPWORDS

BLOCK = 512  # rows per matrix-product block (ours)
COL_BLOCK = 8192  # columns per tile (ours): a 512 x 8192 float64 tile is 32 MB
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)

LEXICAL = "lexical"
SEMANTIC = "semantic"


def content_words(text: str, min_len: int = 3) -> list[str]:
    """Lower-cased words of ``text`` that are not English stop words and have at least
    ``min_len`` characters, in text order (repeats kept). KET-RAG §5.1 tokenizes chunks into
    words "while excluding stop words"; the length floor is ours (drops "s", "th", "de" noise)."""
    return [w for w in _WORD_RE.findall(text.lower()) if len(w) >= min_len and w not in STOPWORDS]


def term_matrix(texts: Sequence[str], min_len: int = 3) -> tuple[sp.csr_matrix, list[str]]:
    """Binary (len(texts) x vocabulary) CSR matrix: entry (i, w) = 1 when text i contains word w;
    and the vocabulary in column order (first appearance)."""
    vocab: dict[str, int] = {}
    indptr = [0]
    indices: list[int] = []
    for text in texts:
        cols = {vocab.setdefault(w, len(vocab)) for w in content_words(text, min_len)}
        indices.extend(sorted(cols))
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float32)
    m = sp.csr_matrix((data, np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
                      shape=(len(texts), len(vocab)))
    return m, list(vocab)


@dataclass(frozen=True)
class KnnGraph:
    """Directed KNN edges as parallel arrays (indices into the chunk list)."""

    src: np.ndarray  # int64
    dst: np.ndarray  # int64
    kind: np.ndarray  # object: "lexical" | "semantic"
    weight: np.ndarray  # float64: shared-keyword count or cosine
    n: int  # number of chunks

    def __len__(self) -> int:
        return int(self.src.size)

    def rows(self, ids: Sequence[str]) -> list[dict[str, object]]:
        """Rows for ``GraphStore.bulk_load_rels("KNN", ...)``."""
        return [{"from": ids[s], "to": ids[d], "kind": k, "weight": float(w)}
                for s, d, k, w in zip(self.src.tolist(), self.dst.tolist(), self.kind.tolist(), self.weight.tolist())]

    def degree(self) -> np.ndarray:
        """In-degree + out-degree of every chunk (the degree of paper Fig. 2)."""
        return np.bincount(self.src, minlength=self.n) + np.bincount(self.dst, minlength=self.n)


def top_k_per_row(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, col, value) of the k best finite entries of each row, best first, ties by lower
    column. Entries set to -inf are never taken. Vectorised over the block."""
    b, n = scores.shape
    kk = min(k, n)
    if kk <= 0 or b == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    if kk == 1:  # K = 2 (the default): argmax is the first maximum, i.e. the lower column of equals
        c = np.argmax(scores, axis=1)
        v = scores[np.arange(b), c]
        r = np.flatnonzero(np.isfinite(v))
        return r, c[r], v[r]
    kth = np.partition(scores, n - kk, axis=1)[:, n - kk]  # k-th largest value of each row
    r, c = np.nonzero((scores >= kth[:, None]) & np.isfinite(scores))
    v = scores[r, c]
    order = np.lexsort((c, -v, r))  # by row, then best value, then lower column
    r, c, v = r[order], c[order], v[order]
    rank = np.arange(r.size) - np.searchsorted(r, r, side="left")
    keep = rank < kk
    return r[keep], c[keep], v[keep]


def top_k_over_tiles(tile: Callable[[int, int], np.ndarray], n_cols: int, k: int,
                     col_block: int = COL_BLOCK) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``top_k_per_row`` of a block of rows whose scores come a column tile at a time:
    ``tile(c0, c1)`` gives the block's scores against columns c0..c1-1 (-inf: never taken). The
    same (row, col, value) as ``top_k_per_row`` over the whole row: a row's k best under the order
    (best value, then lower column) are each among the k best of their own tile, so keeping the k
    best of (kept so far + the tile's k best) after every tile loses none of them."""
    best_v: np.ndarray | None = None
    best_c = np.zeros((0, 0), dtype=np.int64)
    for c0 in range(0, n_cols, col_block):
        c1 = min(n_cols, c0 + col_block)
        scores = tile(c0, c1)
        b = scores.shape[0]
        r, c, v = top_k_per_row(scores, k)
        # the tile's picks as (b, k) arrays, best first; empty places -inf at column n_cols
        rank = np.arange(r.size) - np.searchsorted(r, r, side="left")
        tile_v = np.full((b, k), -np.inf, dtype=scores.dtype)
        tile_c = np.full((b, k), n_cols, dtype=np.int64)
        tile_v[r, rank] = v
        tile_c[r, rank] = c + c0
        if best_v is None:
            best_v, best_c = tile_v, tile_c
            continue
        both_v = np.concatenate([best_v, tile_v], axis=1)
        both_c = np.concatenate([best_c, tile_c], axis=1)
        order = np.lexsort((both_c, -both_v), axis=1)[:, :k]
        best_v = np.take_along_axis(both_v, order, axis=1)
        best_c = np.take_along_axis(both_c, order, axis=1)
    if best_v is None:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    r, j = np.nonzero(np.isfinite(best_v))  # row-major: by row, best first
    return r.astype(np.int64), best_c[r, j], best_v[r, j]


def _unit_rows(emb: np.ndarray) -> np.ndarray:
    x = np.asarray(emb, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def build_knn(texts: Sequence[str], emb: np.ndarray, k: int, *, exclude_lexical: bool = True,
              min_len: int = 3, block: int = BLOCK, col_block: int = COL_BLOCK) -> KnnGraph:
    """The KNN chunk graph of Algorithm 3 (lines 3-6): per chunk, K/2 lexical out-edges, then
    K/2 semantic out-edges. ``exclude_lexical`` follows line 5 (semantic neighbours are drawn
    from V minus the lexical ones); the authors' code draws both independently."""
    if k < 2 or k % 2:
        raise ConfigError(f"KNN K must be an even number >= 2 (K/2 lexical + K/2 semantic), got {k}")
    n = len(texts)
    e = _unit_rows(emb)
    if e.shape[0] != n:
        raise ConfigError(f"build_knn: {n} texts but {e.shape[0]} embeddings")
    half = k // 2
    x, _ = term_matrix(texts, min_len)
    # X[cols].T of every column tile, made once (slicing the columns of X.T per tile would read
    # all of it each time)
    xt = [x[c0:c0 + col_block].T.tocsr() for c0 in range(0, n, col_block)]
    parts: list[tuple[np.ndarray, np.ndarray, str, np.ndarray]] = []
    for b0 in range(0, n, block):
        b1 = min(n, b0 + block)
        lr, lc, lv = _best(partial(_lexical_tile, x[b0:b1], xt, b0, col_block), n, half, col_block)
        skip = (lr, lc) if exclude_lexical else None  # Algorithm 3 line 5: not the row's lexical neighbours
        sr, sc, sv = _best(partial(_semantic_tile, e[b0:b1], e, b0, skip), n, half, col_block)
        parts.append((lr + b0, lc, LEXICAL, lv))
        parts.append((sr + b0, sc, SEMANTIC, sv))
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return KnnGraph(z, z, np.zeros(0, dtype=object), np.zeros(0), n)
    src = np.concatenate([p[0] for p in parts]).astype(np.int64)
    dst = np.concatenate([p[1] for p in parts]).astype(np.int64)
    kind = np.concatenate([np.full(p[0].size, p[2], dtype=object) for p in parts])
    weight = np.concatenate([p[3] for p in parts])
    order = np.lexsort((dst, kind != LEXICAL, src))  # by chunk, lexical first, then neighbour
    return KnnGraph(src[order], dst[order], kind[order], weight[order], n)


def _best(tile: Callable[[int, int], np.ndarray], n_cols: int, k: int,
          col_block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, col, value) of each row's k best positive scores over the column tiles of ``tile``
    (-inf: never taken), ties by lower column; values as float64."""
    if k == 1:
        return best_positive_over_tiles(tile, n_cols, col_block)
    return top_k_over_tiles(partial(_positive, tile), n_cols, k, col_block)


def best_positive_over_tiles(tile: Callable[[int, int], np.ndarray], n_cols: int,
                             col_block: int = COL_BLOCK) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``top_k_over_tiles`` with k = 1 over the positive scores (K = 2, the default: one
    neighbour of each kind), without its merge and masking passes (issue 29: at 100k chunks
    these all-pairs stages see 10^10 scores): a running argmax over the tiles, where a later tile
    wins only with a strictly greater score (an equal one has a higher column), and a row whose
    best score is not positive takes none. The same rows, columns and values as the general path
    over scores whose entries <= 0 are -inf: when a row's maximum is positive, its first maximum
    is the same column with or without those entries."""
    best_v: np.ndarray | None = None
    best_c = np.zeros(0, dtype=np.int64)
    for c0 in range(0, n_cols, col_block):
        scores = tile(c0, min(n_cols, c0 + col_block))
        c = np.argmax(scores, axis=1)
        v = scores[np.arange(scores.shape[0]), c]
        if best_v is None:
            best_v, best_c = v, c.astype(np.int64) + c0
            continue
        better = v > best_v
        best_v = np.where(better, v, best_v)
        best_c = np.where(better, c + c0, best_c)
    if best_v is None:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    r = np.flatnonzero(best_v > 0)
    return r.astype(np.int64), best_c[r].astype(np.int64), best_v[r].astype(np.float64)


def _positive(tile: Callable[[int, int], np.ndarray], c0: int, c1: int) -> np.ndarray:
    """A tile's scores as float64 with the entries <= 0 set to -inf (no signal: never linked)."""
    scores = tile(c0, c1).astype(np.float64)
    scores[scores <= 0] = -np.inf
    return scores


def _lexical_tile(xb: sp.csr_matrix, xt: list[sp.csr_matrix], b0: int, col_block: int, c0: int,
                  c1: int) -> np.ndarray:
    """Shared-keyword counts (float32, exact) of the rows from ``b0`` with columns c0..c1-1; -inf
    on the diagonal."""
    lex: np.ndarray = (xb @ xt[c0 // col_block]).toarray()
    _no_self(lex, b0, c0)
    return lex


def _semantic_tile(eb: np.ndarray, e: np.ndarray, b0: int, skip: tuple[np.ndarray, np.ndarray] | None,
                   c0: int, c1: int) -> np.ndarray:
    """Cosines (float32) of the rows from ``b0`` with columns c0..c1-1; -inf on the diagonal and
    at the (block row, column) pairs of ``skip``."""
    sem: np.ndarray = eb @ e[c0:c1].T
    _no_self(sem, b0, c0)
    if skip is not None:
        r, c = skip
        inside = (c >= c0) & (c < c1)
        sem[r[inside], c[inside] - c0] = -np.inf
    return sem


def _no_self(tile: np.ndarray, b0: int, c0: int) -> None:
    """-inf where a tile of rows from ``b0`` and columns from ``c0`` meets the diagonal: never
    your own neighbour."""
    lo, hi = max(b0, c0), min(b0 + tile.shape[0], c0 + tile.shape[1])
    if lo < hi:
        i = np.arange(lo, hi)
        tile[i - b0, i - c0] = -np.inf


def pagerank(n: int, src: np.ndarray, dst: np.ndarray, *, damping: float = 0.85, undirected: bool = False,
             tol: float = 1e-12, max_iter: int = 500) -> np.ndarray:
    """PageRank (paper 004 Eq. 1, teleport α = 1 - ``damping``) by power iteration on a sparse
    transition matrix. Directed: P[i, j] = 1/outdeg(i) over the KNN out-edges (parallel edges
    count). ``undirected``: every edge both ways, parallel edges merged, as the authors' code does
    (networkx Graph). Rank of dangling nodes is spread uniformly. Sums to 1."""
    if n == 0:
        return np.zeros(0)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    a = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    if undirected:
        a = a + a.T
        a.data[:] = 1.0
        a.setdiag(0)
        a.eliminate_zeros()
    out = np.asarray(a.sum(axis=1)).ravel()
    dangling = out == 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out))
    pt = (sp.diags(inv) @ a).T.tocsr()  # column-stochastic (except dangling columns)
    r = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        nxt = damping * (pt @ r + r[dangling].sum() / n) + (1.0 - damping) / n
        done = np.abs(nxt - r).sum() < tol
        r = nxt
        if done:
            break
    return r / r.sum()
