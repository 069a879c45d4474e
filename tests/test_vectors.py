"""kgviz.vectors: the one cosine / rank-fusion helper set."""
from __future__ import annotations

import numpy as np
import pytest

from kgviz.vectors import cosine_rows, cosine_unit, rrf, unit, unit_rows


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
