"""KET's keyword view made a block of vectors at a time (kgviz.graph.ket_view.unit_matrix): the
same arrays, byte for byte, as normalising and compacting the whole matrix at once."""
from __future__ import annotations

import tracemalloc

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


@pytest.mark.parametrize("density", [0.1, 0.9])
@pytest.mark.parametrize("block", [1, 7, 1000])
def test_made_by_column_equals_the_whole_matrix_by_column(density: float, block: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The keyword matrix made by column straight from the blocks: ``by_column`` of the whole
    matrix, byte for byte (CSC for a sparse one, the dense one as it is)."""
    rng = np.random.default_rng(5)
    m = (rng.random((50, 16)) < density) * rng.normal(size=(50, 16))
    m[[3, 40]] = 0
    m[:, 2] = 0  # an empty column
    whole = ket_view.by_column(ket_view.compact(unit_rows(vectors_to_numpy(_column(m), 16))))
    monkeypatch.setattr(ket_view, "BLOCK_ROWS", block)
    made = ket_view.unit_matrix(_column(m), 16, columns=True)
    assert sp.issparse(whole) == sp.issparse(made) == (density < ket_view.SPARSE_BELOW)
    if sp.issparse(whole):
        assert made.format == whole.format == "csc" and made.shape == whole.shape and made.has_sorted_indices
        for part in ("data", "indices", "indptr"):
            a, b = getattr(whole, part), getattr(made, part)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), part
    else:
        assert made.dtype == whole.dtype and made.tobytes() == whole.tobytes()


@pytest.mark.parametrize("columns", [False, True])
def test_the_matrix_is_held_once_while_it_is_made(columns: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29: the build's ket stage peaked making the keyword view, whose sparse matrix was
    stacked from per-block matrices (the blocks and the stack held at once) and then turned by
    column (the CSR and the CSC at once). Made in place, the peak is the result and a block's
    temporaries."""
    monkeypatch.setattr(ket_view, "BLOCK_ROWS", 500)
    rng = np.random.default_rng(7)
    n, dim = 20_000, 64
    sparse = (rng.random((n, dim)) < 0.1) * rng.normal(size=(n, dim)).astype(np.float32)
    tracemalloc.start()
    try:
        made = ket_view.unit_blocks(n, dim, lambda a, b: sparse[a:b], **({"columns": True} if columns else {}))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    held = made.data.nbytes + made.indices.nbytes + made.indptr.nbytes
    assert peak < 1.5 * held, f"peak {peak / 2**20:.2f} MB for a {held / 2**20:.2f} MB matrix"
