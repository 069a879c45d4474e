"""Cosine similarity and rank fusion: the one copy every ranking uses.

Scores decide rankings and rankings land in traces, so these stay bit-for-bit stable: same
operations in the same order as the code they replaced (a reordered float sum can flip a tie).
"""
from __future__ import annotations

from typing import Hashable, Iterable, Sequence, TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)


def unit(v: np.ndarray) -> np.ndarray:
    """``v`` scaled to length 1; a zero vector is returned unchanged (its cosines are 0)."""
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """float32 rows of length 1 (all-zero rows stay zero), computed in the input's precision."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def cosine_rows(matrix: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``matrix`` with ``v``; rows (or a ``v``) of length 0 score 0."""
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(v) or 1.0)
    return (matrix @ v) / np.where(norms == 0, 1.0, norms)


def cosine_unit(a: np.ndarray | None, b: np.ndarray) -> float:
    """Cosine of two vectors already of length 1 (a plain dot product); 0 when ``a`` is missing."""
    return float(a @ b) if a is not None else 0.0


def rrf(rankings: Iterable[Sequence[K]], k: int) -> dict[K, float]:
    """Reciprocal rank fusion: the sum over rankings of 1 / (k + rank), rank starting at 1."""
    fused: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, 1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused
