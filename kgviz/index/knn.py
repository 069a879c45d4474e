"""KET-RAG's KNN chunk graph (paper 004, Algorithm 3 lines 1-7) and PageRank over it (Eq. 1).

Each chunk links to its top-K/2 chunks by *lexical* similarity (the number of distinct keywords
the two chunks share, §5.1 "KNN Graph Initialization") and its top-K/2 chunks by *semantic*
similarity (cosine of the chunk embeddings). Both are computed with matrix products in row
tiles, never with a Python loop over pairs: the binary chunk x word matrix X (scipy.sparse)
gives the co-occurrence counts of a tile as X[rows] @ X[cols].T, and unit-length embeddings give
the cosines of a tile as E[rows] @ E[cols].T. Both score matrices are symmetric, so only the tiles
on and above the diagonal are made, each read along its rows and down its columns
(``symmetric_top_k``; issue 29: half the products), and each row keeps only its k best so far,
so the memory of the search does not grow with the number of chunks (a tile is at most ``TILE``
x ``TILE``); the time is still every pair, as an exact KNN graph needs. The shared-keyword
counts are exact whatever the tiles; a float32 cosine can differ in its last bit between tile
shapes (BLAS picks its kernel by the matrix shape), and the tiles are a function of the number of
chunks alone, so a corpus builds the same graph every time.

Tie rule (ours, so the graph is deterministic and testable): best score first, equal scores by
lower chunk index. A neighbour with score <= 0 (no shared keyword, or cosine <= 0) carries no
signal and is never linked (ours), so a chunk can have fewer than K/2 neighbours of a kind.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from kgviz.errors import ConfigError
from kgviz.offline.stopwords import STOPWORDS

TILE = 2048  # rows and columns of a score tile (ours): 2,048 x 2,048 float32 is 16 MB (4,096 was
# slower a pair on the 2-core machine: its tiles outgrow the cache)
TILE_THREADS = 2  # sparse tile products made at once, in threads (ours: the machine's two cores)
GATHER_MAX_SHARE = 16  # a tile's columns merged down it are gathered while fewer than 1/16 of them
# pass (ours: measured on 2,048 x 2,048 tiles; beyond, a mask over the tile is cheaper)
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


def sorted_rows(matrix: sp.csr_matrix) -> tuple[list[int], list[int]]:
    """(row starts, column indices) of a CSR matrix as Python lists, each row's columns in
    ascending order (``matrix`` itself is left as it is)."""
    indptr = np.asarray(matrix.indptr, dtype=np.int64)
    offset = np.repeat(np.arange(matrix.shape[0], dtype=np.int64) * max(1, matrix.shape[1]), np.diff(indptr))
    # one sort of (row, column) keys; "stable" is a merge sort, fast on the usual already-sorted rows
    return indptr.tolist(), (np.sort(offset + matrix.indices, kind="stable") - offset).tolist()


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


def _unit_rows(emb: np.ndarray) -> np.ndarray:
    x = np.asarray(emb, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def symmetric_top_k(product: Callable[[int, int, int, int], np.ndarray], n: int, k: int, *,
                    skip: tuple[np.ndarray, np.ndarray] | None = None,
                    tile: int = TILE, threads: int = TILE_THREADS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, col, value) of each row's k best entries of a symmetric n x n score matrix S, best
    first, ties by lower column, the diagonal never taken; values as float64. Only the tiles on
    and above the diagonal are made (issue 29: the all-pairs stages made every product twice):
    ``product(r0, r1, c0, c1)`` gives S[r0:r1, c0:c1] as a new array, and tile (I, J), J >= I,
    gives rows I their scores against columns J and, read down its columns, rows J theirs against
    columns I. So every pair's score is made once and is the same number for both rows (with
    float cosines, the row-by-row product could differ in its last bit between (i, j) and (j, i)).
    ``skip`` (rows, cols): pairs never taken for that row (the other row of the pair may still
    take it). A row meets its columns in increasing tiles (down tiles (0, R) .. (R-1, R), then
    along tiles (R, R) .. (R, last)), so on equal scores the one kept, met first, has the lower
    column, and a later tile wins only with a strictly better score.

    With ``threads`` > 1 (issue 29: the knn stage kept one of the two cores idle; scipy's sparse
    products run on one core) ``threads`` tiles' products are made at once, in threads (numpy and
    scipy release the GIL in a product), and the tiles are merged one at a time in the order
    above: the result is the serial one, ties included. A ``product`` must be safe to call from
    several threads at once (one that only reads its inputs is); at most ``threads`` + 1 tiles are
    held at a time. Dense float products gain nothing from it (BLAS already uses every core) and
    would each give a new thread BLAS buffers of its own: their callers pass ``threads=1``."""
    if k <= 0 or n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    best = _Best(n, k)
    skips = _SkipPairs(skip)
    tiles = [(r0, min(n, r0 + tile), c0, min(n, c0 + tile)) for r0 in range(0, n, tile) for c0 in range(r0, n, tile)]
    for (r0, r1, c0, c1), scores in _made(product, tiles, threads):
        if c0 == r0:
            i = np.arange(r1 - r0)
            scores[i, i] = -np.inf  # never your own neighbour
        with skips.masked(scores, r0, r1, c0, c1):
            best.along_rows(scores, r0, c0)
        if c0 != r0:
            with skips.masked(scores.T, c0, c1, r0, r1):
                best.down_columns(scores, r0, c0)
    return best.found()


def _made(product: Callable[[int, int, int, int], np.ndarray], tiles: list[tuple[int, int, int, int]],
          threads: int) -> Iterator[tuple[tuple[int, int, int, int], np.ndarray]]:
    """Each tile with its product, in the order of ``tiles``. With ``threads`` > 1 tile i is made
    by the caller's thread when i % threads == 0, else by one of threads - 1 pool threads, which
    are handed their tiles before the caller makes its own: ``threads`` products at once, and only
    threads - 1 extra threads (each keeps the C heap it allocated its products from, ~30-60 MB
    at 10k chunks, until the process ends)."""
    if threads <= 1 or len(tiles) <= 1:
        for t in tiles:
            yield t, product(*t)
        return
    with ThreadPoolExecutor(max_workers=threads - 1, thread_name_prefix="kgviz-tiles") as pool:
        handed: dict[int, Future[np.ndarray]] = {}
        try:
            for i, t in enumerate(tiles):
                for j in range(i, min(len(tiles), i + threads)):
                    if j % threads and j not in handed:
                        handed[j] = pool.submit(product, *tiles[j])
                yield t, (handed.pop(i).result() if i % threads else product(*t))
        finally:
            for left in handed.values():  # the caller stopped early (an error): made no further
                left.cancel()


class _Best:
    """Each row's k best (value, column) so far, best first; empty places -inf at column n."""

    def __init__(self, n: int, k: int) -> None:
        self.k = k
        self.v = np.full((n, k), -np.inf)
        self.c = np.full((n, k), n, dtype=np.int64)

    def found(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r, j = np.nonzero(np.isfinite(self.v))  # row-major: by row, best first
        return r.astype(np.int64), self.c[r, j], self.v[r, j]

    def along_rows(self, scores: np.ndarray, r0: int, c0: int) -> None:
        """Merge a tile whose rows are rows r0.. and whose columns c0.. all come after the
        columns met so far."""
        b = scores.shape[0]
        if self.k == 1:  # K = 2 (the default): a running argmax, the first maximum is the lower column
            c = np.argmax(scores, axis=1)
            self._improve(np.arange(r0, r0 + b), c + c0, scores[np.arange(b), c])
            return
        kth = self.v[r0:r0 + b, -1]
        if np.isneginf(kth).any():  # a row with fewer than k so far: every entry is a candidate
            r, c, v = top_k_per_row(scores, self.k)
        else:  # only an entry strictly above the row's k-th best can enter (a tie loses: higher column)
            kth = kth.astype(scores.dtype)  # exact: the kept values came from such tiles
            rows = np.flatnonzero(scores.max(axis=1) > kth)  # usually few: a max is cheaper than a mask
            sub = scores[rows]
            flat = np.flatnonzero(sub > kth[rows, None])  # flat: np.nonzero of a 2-d mask is ~5x slower
            i, c = np.divmod(flat, scores.shape[1])
            r, v = rows[i], sub.ravel()[flat]
        self._merge(r + r0, c + c0, v)

    def down_columns(self, scores: np.ndarray, r0: int, c0: int) -> None:
        """``along_rows`` of the transposed tile, without transposing it (a strided read of
        every entry costs more than the product): the tile's columns c0.. are the rows to merge,
        its rows r0.. their columns."""
        b = scores.shape[1]
        if self.k == 1:
            m = scores.max(axis=0)
            i, j = np.divmod(np.flatnonzero(scores == m[None, :]), b)  # by row: a column's first hit is its lowest row
            _, first = np.unique(j, return_index=True)
            self._improve(np.arange(c0, c0 + b), i[first] + r0, m)
            return
        kth = self.v[c0:c0 + b, -1]
        if np.isneginf(kth).any():
            r, c, v = top_k_per_row(np.ascontiguousarray(scores.T), self.k)
        else:
            kth = kth.astype(scores.dtype)
            cols = np.flatnonzero(scores.max(axis=0) > kth)
            if cols.size * GATHER_MAX_SHARE > b:
                # many columns: one mask over the whole tile (gathering the columns, a strided
                # copy, cost 60-150 ms a 2,048 x 2,048 tile, its product ~90; the mask 10-50)
                flat = np.flatnonzero(scores > kth[None, :])
                c, r = np.divmod(flat, b)
                v = scores[c, r]
            else:
                sub = scores[:, cols]
                flat = np.flatnonzero(sub > kth[None, cols])
                c, j = np.divmod(flat, cols.size)
                r, v = cols[j], sub[c, j]  # not sub.ravel(): a column selection need not be C-ordered
        self._merge(r + c0, c + r0, v)

    def _improve(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> None:
        """k = 1: a row takes (col, val) only with a strictly better value."""
        vals = vals.astype(np.float64)
        better = vals > self.v[rows, 0]
        self.v[rows[better], 0] = vals[better]
        self.c[rows[better], 0] = cols[better]

    def _merge(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> None:
        """Keep, for every row among ``rows``, the k best of what it holds and its candidates
        (best value, then lower column)."""
        if rows.size == 0:
            return
        k = self.k
        touched = np.unique(rows)
        rr = np.concatenate([np.repeat(touched, k), rows])
        cc = np.concatenate([self.c[touched].ravel(), cols])
        vv = np.concatenate([self.v[touched].ravel(), vals.astype(np.float64)])
        order = np.lexsort((cc, -vv, rr))
        rr, cc, vv = rr[order], cc[order], vv[order]
        rank = np.arange(rr.size) - np.searchsorted(rr, rr, side="left")
        keep = rank < k  # every touched row holds k places, so exactly k are kept, in row order
        self.v[touched] = vv[keep].reshape(-1, k)
        self.c[touched] = cc[keep].reshape(-1, k)


class _SkipPairs:
    """The (row, col) pairs ``symmetric_top_k`` must not take, sorted by row, set to -inf in a
    tile while its rows are merged and restored after (the same scores serve the column side)."""

    def __init__(self, skip: tuple[np.ndarray, np.ndarray] | None) -> None:
        r, c = skip if skip is not None else (np.zeros(0, np.int64), np.zeros(0, np.int64))
        order = np.argsort(r, kind="stable")
        self.r, self.c = np.asarray(r, np.int64)[order], np.asarray(c, np.int64)[order]

    @contextmanager
    def masked(self, scores: np.ndarray, r0: int, r1: int, c0: int, c1: int) -> Iterator[None]:
        lo, hi = np.searchsorted(self.r, [r0, r1])
        r, c = self.r[lo:hi], self.c[lo:hi]
        inside = (c >= c0) & (c < c1)
        ri, ci = r[inside] - r0, c[inside] - c0
        saved = scores[ri, ci]
        scores[ri, ci] = -np.inf
        try:
            yield
        finally:
            scores[ri, ci] = saved


def build_knn(texts: Sequence[str], emb: np.ndarray, k: int, *, exclude_lexical: bool = True,
              min_len: int = 3, tile: int = TILE) -> KnnGraph:
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
    # the row blocks of X and X.T's column blocks, made once (slicing the columns of X.T per tile
    # would read all of it each time)
    xr = [x[t0:t0 + tile] for t0 in range(0, n, tile)]
    xt = [m.T.tocsr() for m in xr]

    def lexical(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        """Shared-keyword counts (float32, exact) of rows r0..r1-1 with columns c0..c1-1."""
        return (xr[r0 // tile] @ xt[c0 // tile]).toarray()

    def semantic(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        """Cosines (float32) of rows r0..r1-1 with columns c0..c1-1."""
        return e[r0:r1] @ e[c0:c1].T

    lr, lc, lv = _positive(symmetric_top_k(lexical, n, half, tile=tile))  # sparse products: TILE_THREADS
    skip = (lr, lc) if exclude_lexical else None  # Algorithm 3 line 5: not the row's lexical neighbours
    sr, sc, sv = _positive(symmetric_top_k(semantic, n, half, skip=skip, tile=tile, threads=1))  # BLAS: every core
    src = np.concatenate([lr, sr]).astype(np.int64)
    dst = np.concatenate([lc, sc]).astype(np.int64)
    kind = np.concatenate([np.full(lr.size, LEXICAL, dtype=object), np.full(sr.size, SEMANTIC, dtype=object)])
    weight = np.concatenate([lv, sv]).astype(np.float64)
    order = np.lexsort((dst, kind != LEXICAL, src))  # by chunk, lexical first, then neighbour
    return KnnGraph(src[order], dst[order], kind[order], weight[order], n)


def _positive(found: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (row, col, value) with a positive value: a score <= 0 (no shared keyword, cosine <= 0)
    carries no signal and is never linked. Keeping the k best and then dropping those is each
    row's k best positive scores: a positive score ranks above every other."""
    r, c, v = found
    keep = v > 0
    return r[keep], c[keep], v[keep]


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
