"""KET's keyword view made a block of vectors at a time (kgviz.graph.ket_view.unit_matrix): the
same arrays, byte for byte, as normalising and compacting the whole matrix at once."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp

from kgviz.graph import ket_view
from kgviz.graph.arrow import vectors_to_numpy
from kgviz.vectors import unit_rows


def _column(m: np.ndarray) -> pa.ChunkedArray:
    """A FLOAT[dim] column in two Arrow chunks, as Kùzu may return it."""
    dim = m.shape[1]
    rows = [list(r) for r in m.astype(np.float32)]
    return pa.chunked_array([pa.array(rows[:20], pa.list_(pa.float32(), dim)),
                             pa.array(rows[20:], pa.list_(pa.float32(), dim))])


@pytest.mark.parametrize("density", [0.1, 0.9])  # a sparse (hashing-like) and a dense (model-like) matrix
@pytest.mark.parametrize("block", [1, 7, 1000])
def test_made_by_blocks_equals_made_whole(density: float, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    m = (rng.random((50, 16)) < density) * rng.normal(size=(50, 16))
    m[3] = 0  # an all-zero row stays zero
    whole = ket_view.compact(unit_rows(vectors_to_numpy(_column(m), 16)))
    monkeypatch.setattr(ket_view, "BLOCK_ROWS", block)
    blocks = ket_view.unit_matrix(_column(m), 16)
    assert sp.issparse(whole) == sp.issparse(blocks) == (density < ket_view.SPARSE_BELOW)
    if sp.issparse(whole):
        assert blocks.shape == whole.shape and blocks.has_sorted_indices
        for part in ("data", "indices", "indptr"):
            a, b = getattr(whole, part), getattr(blocks, part)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), part
    else:
        assert blocks.dtype == whole.dtype and blocks.tobytes() == whole.tobytes()


def test_an_empty_column_is_an_empty_dense_matrix() -> None:
    empty = pa.chunked_array([pa.array([], pa.list_(pa.float32(), 4))])
    got = ket_view.unit_matrix(empty, 4)
    assert isinstance(got, np.ndarray) and got.shape == (0, 4) and got.dtype == np.float32
