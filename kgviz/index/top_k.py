"""Each row's k best entries of a score matrix made a tile at a time (issue 29): the machinery
the exact neighbour searches share (KET-RAG's KNN chunk graph, kgviz.index.knn; KG-Retriever's
document layer, kgviz.index.doc_layer; and the cell search of kgviz.index.cells).

Tie rule (ours, so every graph is deterministic and testable): best score first, equal scores by
lower column. An entry set to -inf is never taken.
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np

TILE = 2048  # rows and columns of a score tile (ours): 2,048 x 2,048 float32 is 16 MB (4,096 was
# slower a pair on the 2-core machine: its tiles outgrow the cache)
TILE_THREADS = 2  # sparse tile products made at once, in threads (ours: the machine's two cores)
GATHER_MAX_SHARE = 16  # a tile's columns merged down it are gathered while fewer than 1/16 of them
# pass (ours: measured on 2,048 x 2,048 tiles; beyond, a mask over the tile is cheaper)


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
    best = RowBest(n, k)
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


class RowBest:
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
        self.merge(r + r0, c + c0, v)

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
        self.merge(r + c0, c + r0, v)

    def _improve(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> None:
        """k = 1: a row takes (col, val) only with a strictly better value."""
        vals = vals.astype(np.float64)
        better = vals > self.v[rows, 0]
        self.v[rows[better], 0] = vals[better]
        self.c[rows[better], 0] = cols[better]

    def merge(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, *, distinct: bool = False) -> None:
        """Keep, for every row among ``rows``, the k best of what it holds and its candidates
        (best value, then lower column). ``distinct``: a candidate may be a column the row holds
        already, or come twice (a search that meets a pair more than once): a column is kept
        once, at its best value."""
        if rows.size == 0:
            return
        k = self.k
        touched = np.unique(rows)
        rr = np.concatenate([np.repeat(touched, k), rows])
        cc = np.concatenate([self.c[touched].ravel(), cols])
        vv = np.concatenate([self.v[touched].ravel(), vals.astype(np.float64)])
        order = np.lexsort((cc, -vv, rr))
        rr, cc, vv = rr[order], cc[order], vv[order]
        if distinct:  # the first of each (row, column) is its best; empty places (column n) all stay
            _, first = np.unique(rr * (self.c.shape[0] + 1) + cc, return_index=True)
            once = np.zeros(rr.size, dtype=bool)
            once[first] = True
            once |= cc == self.c.shape[0]
            rr, cc, vv = rr[once], cc[once], vv[once]
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
