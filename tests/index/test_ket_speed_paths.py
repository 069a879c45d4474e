"""The keyword layer's fast paths (issue 29) give what the general code gives: the un-halved
sub-chunk shortcut, the sorted keyword rows and the blocked normalisation."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from kgviz.index.knn import sorted_rows
from kgviz.ingest.chunking import _halved_spans, subchunk_spans
from kgviz.providers import embedders
from kgviz.providers.embedders import HashingEmbedder, l2_normalise

TRICKY = [
    "", " ", "\n\n \t", "word", "  leading and trailing spaces  ", "\u00a0\u2003nbsp and em space\u3000",
    "\x1c\x1dfile separators are whitespace\x1e\x1f", "Dr. Smith met J.R.R. Tolkien in the U.S. on Jan. 5. He left.",
    "Pneumonoultramicroscopicsilicovolcanoconiosis is long. Antidisestablishmentarianism too.",
    "Ünïcödé wörds: Ærøskøbing, İstanbul (İ lowers to two characters), straße, ΣΊΣΥΦΟΣ.",
    "東京は日本の首都です。大阪は大きい都市です！本当？",
    "Line one\n\nLine two after a blank line.\n   \n Third.", "snake_case_words and digits 12345678901234",
    "\"Quoted.\" (Bracketed.) 'Single.' End…  Next", "a " * 400, "Sentence. " * 120,
]


@pytest.mark.parametrize("tau,target", [(0, None), (0, 150), (1, 150), (2, 150), (3, 20), (1, None), (2, 4)])
def test_subchunk_spans_shortcut_equals_the_halvings(tau: int, target: int | None) -> None:
    for text in TRICKY:
        assert subchunk_spans(text, tau=tau, target_tokens=target) == _halved_spans(text, tau, target), text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list("ab .\n\t\u00a0\u3002!?XY_é1") + ["Mr.", " J. ", "abcdefghijklmn"]),
                max_size=60).map("".join),
       st.integers(0, 3), st.sampled_from([None, 1, 3, 10, 150]))
def test_subchunk_spans_shortcut_equals_the_halvings_generated(text: str, tau: int, target: int | None) -> None:
    assert subchunk_spans(text, tau=tau, target_tokens=target) == _halved_spans(text, tau, target)


def test_sorted_rows_sorts_each_row_and_leaves_the_matrix() -> None:
    m = sp.csr_matrix((np.ones(6, np.float32), np.array([5, 1, 3, 2, 0, 4]), np.array([0, 3, 3, 6])), shape=(3, 7))
    before = m.indices.copy()
    bounds, cols = sorted_rows(m)
    assert bounds == [0, 3, 3, 6] and cols == [1, 3, 5, 0, 2, 4]
    assert np.array_equal(m.indices, before)
    assert sorted_rows(sp.csr_matrix((0, 0), dtype=np.float32)) == ([0], [])


def _reference_l2(matrix: np.ndarray) -> np.ndarray:
    m = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (m / norms).astype(np.float32)


@pytest.mark.parametrize("shape", [(0, 8), (1, 768), (255, 16), (256, 16), (257, 16), (1000, 33), (3, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_l2_normalise_is_bit_identical(shape: tuple[int, int], dtype: type) -> None:
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * rng.uniform(1e-30, 1e30, size=(shape[0], 1))).astype(dtype)
    if shape[0] > 2:
        x[2] = 0.0  # an all-zero row stays zero
    assert l2_normalise(x).tobytes() == _reference_l2(x).tobytes()
    assert l2_normalise(x).dtype == np.float32 and l2_normalise(x).shape == shape


def test_l2_normalise_of_a_vector_still_raises() -> None:
    with pytest.raises(np.exceptions.AxisError):
        l2_normalise(np.ones(4))


def test_hashing_vectors_do_not_depend_on_the_normalise_block(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = TRICKY * 20
    whole = HashingEmbedder(64)._embed(texts)
    monkeypatch.setattr(embedders, "NORMALISE_ROWS", 7)
    assert HashingEmbedder(64)._embed(texts).tobytes() == whole.tobytes()
