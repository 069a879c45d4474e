"""KET-RAG's KNN chunk graph (paper 004, Algorithm 3 lines 1-7) and PageRank over it (Eq. 1).

Each chunk links to its top-K/2 chunks by *lexical* similarity (the number of distinct keywords
the two chunks share, §5.1 "KNN Graph Initialization") and its top-K/2 chunks by *semantic*
similarity (cosine of the chunk embeddings).

* Lexical: the binary chunk x word matrix X (scipy.sparse) gives the co-occurrence counts of a
  tile as X[rows] @ X[cols].T, every pair, in row tiles (``kgviz.index.top_k.symmetric_top_k``:
  only the tiles on and above the diagonal, each row keeping its k best so far, so the memory
  does not grow with the number of chunks). The counts are exact whatever the tiles.
* Semantic: ``kgviz.index.cells.cosine_top_k`` over the unit chunk embeddings, every pair.
* Above ``cells.ALL_PAIRS_MAX_ROWS`` chunks both kinds come from the deterministic cell search of
  kgviz.index.cells over the cells of the chunk embeddings (issue 29: nothing quadratic; chunks
  that share words tend to share cells, and with the hashing embedder a shared word is a shared
  feature), each pair it meets scored as above; a true neighbour can be missed
  (benchmarks/cells_recall.py measures both kinds against every pair). A float32 cosine can differ in its last bit between product shapes (BLAS picks its kernel by the shape),
  and the shapes are a function of the chunks alone, so a corpus builds the same graph every time.

Tie rule (ours, so the graph is deterministic and testable): best score first, equal scores by
lower chunk index. A neighbour with score <= 0 (no shared keyword, or cosine <= 0) carries no
signal and is never linked (ours), so a chunk can have fewer than K/2 neighbours of a kind.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from kgviz.errors import ConfigError
from kgviz.index import cells
from kgviz.index.top_k import TILE, symmetric_top_k
from kgviz.offline.stopwords import STOPWORDS

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


def _unit_rows(emb: np.ndarray) -> np.ndarray:
    x = np.asarray(emb, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


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
    if cells.all_pairs(n):
        lexical = _tiled_lexical(x, tile)
        lr, lc, lv = _positive(symmetric_top_k(lexical, n, half, tile=tile))  # sparse products: TILE_THREADS
        index = None
    else:  # the cells of the chunk vectors serve both kinds
        index = cells.Cells.of(e)
        lr, lc, lv = _positive(index.top_k(lambda rows, cols: (x[rows] @ x[cols].T).toarray(), half))
    skip = (lr, lc) if exclude_lexical else None  # Algorithm 3 line 5: not the row's lexical neighbours
    sr, sc, sv = _positive(cells.cosine_top_k(e, half, skip=skip, tile=tile, index=index))
    src = np.concatenate([lr, sr]).astype(np.int64)
    dst = np.concatenate([lc, sc]).astype(np.int64)
    kind = np.concatenate([np.full(lr.size, LEXICAL, dtype=object), np.full(sr.size, SEMANTIC, dtype=object)])
    weight = np.concatenate([lv, sv]).astype(np.float64)
    order = np.lexsort((dst, kind != LEXICAL, src))  # by chunk, lexical first, then neighbour
    return KnnGraph(src[order], dst[order], kind[order], weight[order], n)


def _tiled_lexical(x: sp.csr_matrix, tile: int) -> Callable[[int, int, int, int], np.ndarray]:
    """Shared-keyword counts (float32, exact) of tile rows r0..r1-1 with columns c0..c1-1; the row
    blocks of X and X.T's column blocks made once (slicing the columns of X.T per tile would read
    all of it each time)."""
    xr = [x[t0:t0 + tile] for t0 in range(0, x.shape[0], tile)]
    xt = [m.T.tocsr() for m in xr]
    return lambda r0, r1, c0, c1: (xr[r0 // tile] @ xt[c0 // tile]).toarray()


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
