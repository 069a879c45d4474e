"""The ``Embedder`` Protocol: what every embedder offers (``kgviz.providers.embedders`` holds the
implementations). A leaf below ``offline`` and ``providers``: the offline heuristics take an
embedder as an argument typed by it without importing providers, and ``kgviz.providers.base``
re-exports it next to the ``LLM`` Protocol."""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    id: str  # spec-like id recorded in the database, e.g. "hashing-1024" or "fastembed:BAAI/bge-small-en-v1.5"
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, each row L2-normalised (zero rows stay zero)."""
        ...


def is_hashing(embedder_id: str) -> bool:
    """Whether an embedder id names the offline hashing embedder, whose bag-of-n-gram cosines rank
    passages well below BM25 (the methods' 'auto' modes match lexically with it)."""
    return embedder_id.startswith("hashing")
