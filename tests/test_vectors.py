"""kgviz.vectors: the one cosine / rank-fusion helper set."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kgviz.vectors import by_columns, cosine_rows, cosine_unit, rrf, sparse_dot, unit, unit_rows


def test_unit_and_unit_rows_normalise_and_leave_zero_vectors_alone() -> None:
    assert np.allclose(unit(np.array([3.0, 4.0])), [0.6, 0.8])
    assert np.array_equal(unit(np.zeros(3)), np.zeros(3))
    rows = unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32))
    assert rows.dtype == np.float32 and np.allclose(rows, [[0.6, 0.8], [0.0, 0.0]])


def test_cosines_agree_with_the_definition() -> None:
    m = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    v = np.array([2.0, 0.0])
    assert np.allclose(cosine_rows(m, v), [1.0, 2 ** -0.5, 0.0])
    assert cosine_unit(unit(np.array([1.0, 1.0])), unit(np.array([1.0, 0.0]))) == pytest.approx(2 ** -0.5)
    assert cosine_unit(None, np.array([1.0, 0.0])) == 0.0


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = rrf([["a", "b"], ["b", "c"]], 60)
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62})
    assert max(fused, key=lambda k: (fused[k], k)) == "b"


def test_sparse_dot_reads_the_query_columns_and_equals_the_csr_product_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    m = np.zeros((500, 64), dtype=np.float32)
    for row in m:
        row[rng.choice(64, size=6, replace=False)] = rng.normal(size=6)
    m = unit_rows(m)
    csc, csr = by_columns(m), sp.csr_matrix(m)
    for nonzero in (0, 1, 5, 64):
        q = np.zeros(64, dtype=np.float32)
        q[rng.choice(64, size=nonzero, replace=False)] = rng.normal(size=nonzero)
        got = sparse_dot(csc, q)
        assert got.dtype == np.float32
        assert np.array_equal(got, csr @ q)  # the same sums in the same order: equal bits
    dense = rng.normal(size=(5, 64)).astype(np.float32)
    assert np.array_equal(sparse_dot(dense, q), dense @ q)  # anything else: the plain product
