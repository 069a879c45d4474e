"""Each row's k most similar rows by cosine, without every pair once there are many rows (issue 29:
"nothing quadratic in the number of documents"). Serves KET-RAG's semantic KNN edges
(kgviz.index.knn) and KG-Retriever's document layer (kgviz.index.doc_layer).

Up to ``ALL_PAIRS_MAX_ROWS`` rows every pair is scored (``kgviz.index.top_k.symmetric_top_k``): the
k best are exact. Above, an inverted file over cells (ours; the IVF idea of vector search
libraries, kept deterministic so two builds of one corpus give one graph):

1. **cells**: ``round(sqrt(n))`` centroids by spherical k-means (``ITERATIONS`` rounds) over an
   evenly spaced sample of ``SAMPLE_PER_CELL`` rows per cell, started from evenly spaced sample
   rows; a cell that loses every row keeps its centroid;
2. **probes**: every row's ``PROBES`` most similar centroids (ties by lower cell); its home is the
   first;
3. **search**: cell by cell, every row that probes the cell is scored against the cell's home rows
   (one matrix product); read along its rows the product gives the probing rows candidates, read
   down its columns the home rows (cosine is symmetric). Each row keeps its k best so far (best
   first, ties by lower column, as the exact search; a pair met twice counts once). So a pair is
   met when either row probes the other's home cell.

Each row is scored against ~2 x ``PROBES`` x sqrt(n) rows instead of n: at 100,000 rows, ~2.5 %
of the pairs. The price is recall: a true neighbour whose home is not among a row's probed cells
is missed (``benchmarks/cells_recall.py`` measures it against the exact search). Every step is a
function of the rows and their order alone (no random numbers; a float32 product of one shape
gives the same bits every time), so the result is the same every build.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from kgviz.index.top_k import TILE, RowBest, symmetric_top_k, top_k_per_row

ALL_PAIRS_MAX_ROWS = 30_000  # ours: up to this many rows every pair is scored (30,000 rows: ~4 s of
# cosines on the 2-core machine); above, the cells. The sample, HotpotQA-size and 10k/30k
# corpora stay exact.
PROBES = 8  # ours: cells searched per row (benchmarks/cells_recall.py: recall against the cost)
SAMPLE_PER_CELL = 64  # ours: k-means sample rows per cell
ITERATIONS = 8  # ours: k-means rounds
ASSIGN_BLOCK = 8192  # rows scored against the centroids at a time (8,192 x 316 float32 = 10 MB)

Found = tuple[np.ndarray, np.ndarray, np.ndarray]  # (row, col, value), by row, best first


def settings(n: int) -> dict[str, Any]:
    """How ``cosine_top_k`` finds the neighbours of ``n`` rows: what a stored KNN plan depends on."""
    if all_pairs(n):
        return {"search": "exact", "tile": TILE}
    return {"search": "cells", "cells": n_cells(n), "probes": PROBES, "sample_per_cell": SAMPLE_PER_CELL,
            "iterations": ITERATIONS}


def describe(n: int) -> str:
    """How the neighbours of ``n`` rows were found, for a build's progress line."""
    if all_pairs(n):
        return "every pair compared"
    return f"approximate: a cell search over {n_cells(n)} cells, {PROBES} probed per row (above {ALL_PAIRS_MAX_ROWS:,} rows)"


def n_cells(n: int) -> int:
    return max(1, int(round(math.sqrt(n))))


def all_pairs(n: int, all_pairs_max_rows: int | None = None) -> bool:
    """Whether the neighbours of ``n`` rows are found by scoring every pair (None: ``ALL_PAIRS_MAX_ROWS``)."""
    return n <= (ALL_PAIRS_MAX_ROWS if all_pairs_max_rows is None else all_pairs_max_rows)


def cosine_top_k(x: np.ndarray, k: int, *, skip: tuple[np.ndarray, np.ndarray] | None = None,
                 all_pairs_max_rows: int | None = None, tile: int = TILE, index: Cells | None = None) -> Found:
    """Each row's k best cosines among the other rows of ``x`` (unit rows, float32): (row, col,
    value), by row, best first, ties by lower column; never a row itself, never a ``skip`` pair
    (rows, cols). Exact up to ``all_pairs_max_rows`` rows (None: ``ALL_PAIRS_MAX_ROWS``), else the cell
    search (module docstring; over ``index`` when given, the cells of ``x``), where a row can get
    fewer than k."""
    n = len(x)
    if all_pairs(n, all_pairs_max_rows):
        def cosines(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
            return x[r0:r1] @ x[c0:c1].T

        return symmetric_top_k(cosines, n, k, skip=skip, tile=tile, threads=1)  # BLAS: every core
    return (index or Cells.of(x)).top_k(lambda rows, cols: x[rows] @ x[cols].T, k, skip=skip)


def cell_top_k(x: np.ndarray, k: int, *, skip: tuple[np.ndarray, np.ndarray] | None = None,
               cells: int | None = None, probes: int | None = None) -> Found:
    """The cell search of the module docstring over the cosines of unit rows ``x``; ``cells``
    None: round(sqrt(n)), ``probes`` None: ``PROBES``."""
    return Cells.of(x, cells=cells, probes=probes).top_k(lambda rows, cols: x[rows] @ x[cols].T, k, skip=skip)


@dataclass(frozen=True)
class Cells:
    """The cells of n rows (steps 1-2 of the module docstring), made once and searched with any
    symmetric score (``top_k``, step 3): KET's lexical and semantic neighbours share them."""

    home: np.ndarray  # (n,) each row's cell
    members: list[np.ndarray]  # per cell, the rows whose home it is, ascending
    askers: list[np.ndarray]  # per cell, the rows that probe it, ascending

    @classmethod
    def of(cls, x: np.ndarray, *, cells: int | None = None, probes: int | None = None) -> Cells:
        """The cells of unit rows ``x``; ``cells`` None: round(sqrt(n)), ``probes`` None: ``PROBES``."""
        n = len(x)
        if n == 0:
            return cls(np.zeros(0, np.int64), [], [])
        centroids = train_cells(x, cells or n_cells(n))
        probe = probe_cells(x, centroids, min(PROBES if probes is None else probes, len(centroids)))
        rows = np.arange(n, dtype=np.int64)
        return cls(probe[:, 0], _grouped(probe[:, 0], rows, len(centroids)),
                   _grouped(probe.ravel(), np.repeat(rows, probe.shape[1]), len(centroids)))

    def top_k(self, score: Callable[[np.ndarray, np.ndarray], np.ndarray], k: int, *,
              skip: tuple[np.ndarray, np.ndarray] | None = None) -> Found:
        """Each row's k best scores among the rows met (a pair is met when either row probes the
        other's cell): (row, col, value), by row, best first, ties by lower column; never a row
        itself, never a ``skip`` pair (rows, cols). ``score(rows, cols)`` gives the scores of
        those rows (ascending ids) against those columns as a new float array; the score must
        be symmetric."""
        n = len(self.home)
        if k <= 0 or n == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0)
        skip_rows, skip_cols = skip if skip is not None else (np.zeros(0, np.int64), np.zeros(0, np.int64))
        skip_rows, skip_cols = np.asarray(skip_rows, np.int64), np.asarray(skip_cols, np.int64)
        by_col = _grouped(self.home[skip_cols], np.arange(skip_cols.size, dtype=np.int64), len(self.members))
        by_row = _grouped(self.home[skip_rows], np.arange(skip_rows.size, dtype=np.int64), len(self.members))
        best = RowBest(n, k)
        for cell, (cols, rows) in enumerate(zip(self.members, self.askers)):  # each ascending
            if cols.size == 0 or rows.size == 0:
                continue
            scores = score(rows, cols)
            _mask(scores, rows, cols, rows, rows)  # never a row itself: the pairs (r, r)
            # the askers' candidates: the cell's rows
            saved = _mask(scores, rows, cols, skip_rows[by_col[cell]], skip_cols[by_col[cell]])
            r, c, v = top_k_per_row(scores, k)
            best.merge(rows[r], cols[c], v, distinct=True)
            scores[saved[0], saved[1]] = saved[2]
            # and, read down its columns, the cell's rows' candidates: the askers (the score is
            # symmetric: a pair is met when either row probes the other's cell)
            down = np.ascontiguousarray(scores.T)
            _mask(down, cols, rows, skip_rows[by_row[cell]], skip_cols[by_row[cell]])
            r, c, v = top_k_per_row(down, k)
            best.merge(cols[r], rows[c], v, distinct=True)
        return best.found()


def train_cells(x: np.ndarray, cells: int) -> np.ndarray:
    """(cells, dim) unit centroids: spherical k-means over an evenly spaced sample of the rows."""
    n = len(x)
    cells = min(cells, n)
    m = min(n, cells * SAMPLE_PER_CELL)
    sample = x[np.arange(m, dtype=np.int64) * n // m]
    centroids = sample[np.arange(cells, dtype=np.int64) * m // cells].copy()
    for _ in range(ITERATIONS):
        home = probe_cells(sample, centroids, 1)[:, 0]
        order = np.argsort(home, kind="stable")
        taken, starts = np.unique(home[order], return_index=True)
        sums = np.add.reduceat(sample[order], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        kept = norms[:, 0] > 0
        centroids[taken[kept]] = sums[kept] / norms[kept]
    return centroids


def probe_cells(x: np.ndarray, centroids: np.ndarray, probes: int) -> np.ndarray:
    """(n, probes) int64: each row's ``probes`` most similar centroids, best first, ties by lower cell."""
    out = np.empty((len(x), probes), dtype=np.int64)
    for start in range(0, len(x), ASSIGN_BLOCK):
        block = x[start:start + ASSIGN_BLOCK] @ centroids.T
        _, c, _ = top_k_per_row(block, probes)  # every row has `probes` finite scores
        out[start:start + len(block)] = c.reshape(len(block), probes)
    return out


def _grouped(keys: np.ndarray, values: np.ndarray, n_keys: int) -> list[np.ndarray]:
    """``values`` grouped by ``keys`` (0..n_keys-1), each group in ascending order of values."""
    order = np.lexsort((values, keys))
    bounds = np.searchsorted(keys[order], np.arange(n_keys + 1))
    ordered = values[order]
    return [ordered[bounds[i]:bounds[i + 1]] for i in range(n_keys)]


def _mask(scores: np.ndarray, rows: np.ndarray, cols: np.ndarray, pair_rows: np.ndarray,
          pair_cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Set to -inf the entries of ``scores`` (``rows`` x ``cols``, both ascending) at the given
    (row, col) pairs; pairs outside the block are passed over. Returns (i, j, old values) of the
    entries set, to put them back."""
    if pair_rows.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=scores.dtype)
    i = np.minimum(np.searchsorted(rows, pair_rows), rows.size - 1)
    j = np.minimum(np.searchsorted(cols, pair_cols), cols.size - 1)
    inside = (rows[i] == pair_rows) & (cols[j] == pair_cols)
    i, j = i[inside], j[inside]
    old = scores[i, j].copy()
    scores[i, j] = -np.inf
    return i, j, old
