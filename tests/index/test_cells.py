"""kgviz.index.cells: each row's k best cosines, every pair up to a size, the cell search above."""
from __future__ import annotations

import numpy as np
import pytest

from kgviz.index import cells
from kgviz.index.cells import cell_top_k, cosine_top_k
from kgviz.index.doc_layer import top_k_neighbours
from kgviz.index.top_k import RowBest


def four_hot(n: int, dim: int, seed: int) -> np.ndarray:
    """Unit rows of four equal entries: every cosine is a multiple of 1/4 in any summation order,
    so every product shape gives the same bits and ties are exact (the tie rule decides)."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, dim), dtype=np.float32)
    for row in x:
        row[rng.choice(dim, 4, replace=False)] = 0.5
    return x


def clustered(n_clusters: int, per: int, dim: int, seed: int, spread: float = 0.05) -> np.ndarray:
    """Unit rows near ``n_clusters`` random unit centres, ``per`` each, the clusters interleaved."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_clusters, dim))
    x = np.repeat(centres, per, axis=0) + spread * rng.normal(size=(n_clusters * per, dim))
    x = x[rng.permutation(len(x))]
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def as_triples(found: tuple[np.ndarray, np.ndarray, np.ndarray]) -> list[tuple[int, int, float]]:
    return list(zip(found[0].tolist(), found[1].tolist(), found[2].tolist()))


@pytest.mark.parametrize("k", [1, 3])
def test_probing_every_cell_is_the_exact_search_ties_and_skips_included(k: int) -> None:
    """With every cell probed every pair is met, so the cell search must give what every pair
    gives: the same neighbours, values, order and tie rule, and never a skipped pair."""
    x = four_hot(90, 10, seed=3)
    rng = np.random.default_rng(5)
    skip = (rng.integers(0, 90, 60), rng.integers(0, 90, 60))
    want = cosine_top_k(x, k, skip=skip, all_pairs_max_rows=len(x))
    got = cell_top_k(x, k, skip=skip, cells=9, probes=9)
    assert as_triples(got) == as_triples(want)
    taken = set(zip(got[0].tolist(), got[1].tolist()))
    assert not taken & set(zip(skip[0].tolist(), skip[1].tolist()))
    assert all(r != c for r, c in taken)


def test_clustered_rows_find_their_neighbours_with_few_probes() -> None:
    """Rows in tight clusters: two probed cells of 24 find each row's 3 best cosines (a float32
    cosine's last bits depend on the product's shape, so two neighbours within 1e-6 may swap)."""
    x = clustered(24, 25, 32, seed=7)
    exact = cosine_top_k(x, 3, all_pairs_max_rows=len(x))
    got = cell_top_k(x, 3, probes=2)
    assert np.array_equal(got[0], exact[0])
    assert np.allclose(got[2], exact[2], rtol=0, atol=1e-6)
    same = set(zip(got[0].tolist(), got[1].tolist())) & set(zip(exact[0].tolist(), exact[1].tolist()))
    assert len(same) >= len(exact[0]) - 3


def test_the_cell_search_is_the_same_every_time_and_reads_rows_in_their_given_order() -> None:
    x = clustered(30, 20, 16, seed=11, spread=0.6)
    one, two = cell_top_k(x, 2, probes=3), cell_top_k(x.copy(), 2, probes=3)
    assert all(np.array_equal(a, b) for a, b in zip(one, two))
    assert np.all(np.diff(one[0]) >= 0)  # by row
    for r in np.unique(one[0]):  # best first within a row
        assert np.all(np.diff(one[2][one[0] == r]) <= 0)


def test_a_few_probes_miss_some_neighbours_on_diffuse_rows() -> None:
    """Not clustered: the cell search is approximate (what benchmarks/cells_recall.py measures);
    each row still gets k neighbours, all truly among the rows it was scored against."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(600, 24)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    exact = cosine_top_k(x, 3, all_pairs_max_rows=len(x))
    got = cell_top_k(x, 3, probes=1)
    want_pairs = set(zip(exact[0].tolist(), exact[1].tolist()))
    got_pairs = set(zip(got[0].tolist(), got[1].tolist()))
    assert got_pairs != want_pairs and len(got_pairs & want_pairs) > len(want_pairs) // 3
    assert np.allclose(got[2], np.einsum("ij,ij->i", x[got[0]], x[got[1]]), atol=1e-6)  # the true cosines


def test_above_the_size_the_cell_search_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    x = clustered(10, 12, 16, seed=4, spread=0.5)
    assert cells.settings(len(x))["search"] == "exact" and cells.describe(len(x)) == "every pair compared"
    monkeypatch.setattr(cells, "ALL_PAIRS_MAX_ROWS", 50)
    assert cells.describe(len(x)).startswith("approximate: a cell search over 11 cells")
    assert cells.settings(len(x)) == {"search": "cells", "cells": 11, "probes": cells.PROBES,
                                      "sample_per_cell": cells.SAMPLE_PER_CELL, "iterations": cells.ITERATIONS}
    assert as_triples(cosine_top_k(x, 2)) == as_triples(cell_top_k(x, 2))


def test_the_document_layer_pads_a_row_with_fewer_neighbours(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two orthogonal groups, each its own cell, one probe: a row of the group of two has one
    neighbour, not three; its last places hold -1 and -inf (the layer links only cosines > 0)."""
    monkeypatch.setattr(cells, "PROBES", 1)
    x = np.zeros((7, 4), dtype=np.float32)
    x[:5, 0] = 1.0
    x[5:, 1] = 1.0
    idx, sims = top_k_neighbours(x, 3, all_pairs_max_rows=0)
    assert idx.shape == (7, 3)
    assert idx[5].tolist() == [6, -1, -1] and sims[5][0] == 1.0 and np.isneginf(sims[5][1:]).all()
    assert idx[0].tolist() == [1, 2, 3]


def test_a_pair_met_twice_is_kept_once() -> None:
    best = RowBest(4, 2)
    best.merge(np.array([0, 0]), np.array([1, 2]), np.array([0.5, 0.4]), distinct=True)
    best.merge(np.array([0, 0, 0]), np.array([1, 2, 3]), np.array([0.5, 0.4, 0.3]), distinct=True)
    r, c, v = best.found()
    assert c[r == 0].tolist() == [1, 2] and v[r == 0].tolist() == [0.5, 0.4]


def test_the_knn_graph_through_the_cell_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """KET's KNN graph above the size, both kinds from the cells: with every cell probed it is the
    all-pairs graph (Algorithm 3 line 5's skip of the lexical neighbour included); with one probe
    it differs but keeps line 5 and true weights; a stored plan's key says which search made it."""
    from kgviz.index.knn import build_knn
    from kgviz.index import ket_plan
    from kgviz.index.ket import KetParams

    rng = np.random.default_rng(8)
    vocab = [f"word{i:02d}" for i in range(40)]
    texts = [" ".join(rng.choice(vocab, 6)) for _ in range(120)]
    emb = four_hot(120, 12, seed=6)
    want = build_knn(texts, emb, 2)
    key = ket_plan.plan_key([str(i) for i in range(120)], texts, KetParams(), "e", 12)
    monkeypatch.setattr(cells, "ALL_PAIRS_MAX_ROWS", 10)
    assert ket_plan.plan_key([str(i) for i in range(120)], texts, KetParams(), "e", 12) != key
    monkeypatch.setattr(cells, "PROBES", 11)  # every cell
    every = build_knn(texts, emb, 2)
    for field in ("src", "dst", "kind", "weight"):
        assert np.array_equal(getattr(every, field), getattr(want, field)), field
    monkeypatch.setattr(cells, "PROBES", 1)
    one = build_knn(texts, emb, 2)
    assert not np.array_equal(one.dst, want.dst)
    lexical = set(zip(one.src[one.kind == "lexical"].tolist(), one.dst[one.kind == "lexical"].tolist()))
    semantic = set(zip(one.src[one.kind == "semantic"].tolist(), one.dst[one.kind == "semantic"].tolist()))
    assert not lexical & semantic  # Algorithm 3 line 5 holds with the cells too
    words = [set(t.split()) for t in texts]  # every weight is the true score of its pair
    for s_, d_, kind, w in zip(one.src.tolist(), one.dst.tolist(), one.kind.tolist(), one.weight.tolist()):
        if kind == "lexical":
            assert w == len(words[s_] & words[d_]) > 0
        else:
            assert w == pytest.approx(float(emb[s_] @ emb[d_]), abs=1e-6) and w > 0
