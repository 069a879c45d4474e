"""top_k_neighbours: the numpy core of the KG-Retriever document layer."""
from __future__ import annotations

import numpy as np

from kgviz.index.doc_layer import signature, top_k_neighbours


def test_top_k_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 8)).astype(np.float32)
    idx, sims = top_k_neighbours(x, 3)
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    full = xn @ xn.T
    np.fill_diagonal(full, -np.inf)
    for i in range(50):
        want = np.argsort(-full[i], kind="stable")[:3]
        assert list(idx[i]) == list(want)
        assert np.allclose(sims[i], full[i, want], atol=1e-6)


def test_ties_small_n_and_zero_rows() -> None:
    x = np.array([[1, 0], [1, 0], [1, 0], [0, 0]], dtype=np.float32)
    idx, sims = top_k_neighbours(x, 5)
    assert idx.shape == (4, 3)  # k is capped at n - 1
    assert list(idx[0][:2]) == [1, 2] and list(idx[2][:2]) == [0, 1]  # equal cosines: lower index first
    assert np.allclose(sims[3], 0)  # an empty document is similar to nothing
    assert top_k_neighbours(x[:1], 3)[0].shape == (1, 0)


def test_signature_depends_on_ids_and_k() -> None:
    assert signature(["a", "b"], 3) == signature(["b", "a"], 3)
    assert signature(["a", "b"], 3) != signature(["a", "b"], 2) != signature(["a"], 2)


def test_column_tiles_give_the_same_neighbours() -> None:
    """Tiles of a few rows and columns (memory bounded whatever the number of documents) give the same
    indices and cosines as one tile. Rows of four ones make every cosine a multiple of 0.25 in any
    summation order, so ties are exact and the tie rule (lower index) is what decides."""
    rng = np.random.default_rng(1)
    x = np.zeros((40, 9), dtype=np.float32)
    for row in x:
        row[rng.choice(9, 4, replace=False)] = 1.0
    want = top_k_neighbours(x, 4, tile=40)
    for tile in (1, 3, 7):
        idx, sims = top_k_neighbours(x, 4, tile=tile)
        assert np.array_equal(idx, want[0]) and np.array_equal(sims, want[1])


def test_loaded_rows_are_taken_only_when_they_are_exactly_the_tables_rows() -> None:
    """A build's loaded (ids, vectors) give the layer's matrix in the table's id order; any other
    set of ids (an incremental build, a repeated id) gives None: the vectors are read from Kùzu."""
    from kgviz.index.doc_layer import loaded_rows

    vectors = np.arange(12, dtype=np.float32).reshape(4, 3)
    loaded = (["d", "b", "a", "c"], vectors)
    got = loaded_rows(["a", "b", "c", "d"], loaded)
    assert got is not None and np.array_equal(got, vectors[[2, 1, 3, 0]])
    assert loaded_rows(["a", "b", "c", "d", "e"], loaded) is None  # older documents in the table
    assert loaded_rows(["a", "b", "c", "e"], loaded) is None
    assert loaded_rows(["a", "b", "c", "d"], (["a", "a", "b", "c"], vectors)) is None
    assert loaded_rows(["a"], None) is None


def test_loaded_rows_from_a_spill_file_in_blocks(tmp_path, monkeypatch) -> None:
    """From the build's raw spill file (``RowFile``), read a block of rows at a time: the same
    matrix as a gather row by row."""
    from kgviz.graph.vector_file import RowFile
    from kgviz.index import doc_layer

    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(10, 4)).astype(np.float32)
    (tmp_path / "Document.f32").write_bytes(vectors.tobytes())
    rows = RowFile(tmp_path / "Document.f32", 10, 4)
    assert np.array_equal(rows[2:7], vectors[2:7]) and np.array_equal(rows[8:20], vectors[8:])
    assert rows[5:5].shape == (0, 4)
    monkeypatch.setattr(doc_layer, "LOAD_BLOCK", 3)
    loaded = [f"d{i}" for i in rng.permutation(10)]
    ids = sorted(loaded)
    got = doc_layer.loaded_rows(ids, (loaded, rows))
    assert got is not None and np.array_equal(got, vectors[[loaded.index(i) for i in ids]])
