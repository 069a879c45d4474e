"""Batched embedding of node texts, with the text recipe per node kind in one place."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from kgviz.errors import BuildError
from kgviz.providers.base import Embedder

MAX_EMBED_CHARS = 8000  # ours: embedders truncate anyway; this keeps hashing cost bounded


def document_text(title: str, text: str) -> str:
    return f"{title}\n{text}"[:MAX_EMBED_CHARS]


def entity_text(name: str, description: str) -> str:
    return f"{name}: {description}" if description else name


def embed_texts(
    embedder: Embedder,
    texts: Sequence[str],
    batch_size: int,
    on_batch: Callable[[int], None] | None = None,
) -> np.ndarray:
    """(len(texts), dim) float32 matrix; ``on_batch(n_done)`` after every batch."""
    dim = int(embedder.dim)
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        batch = [t[:MAX_EMBED_CHARS] for t in texts[start : start + batch_size]]
        vecs = np.asarray(embedder.embed(batch), dtype=np.float32)
        if vecs.shape != (len(batch), dim):
            raise BuildError(
                f"embedder {embedder.id} returned shape {vecs.shape} for {len(batch)} texts; expected ({len(batch)}, {dim})"
            )
        if not np.isfinite(vecs).all():
            raise BuildError(f"embedder {embedder.id} returned NaN or infinite values")
        out[start : start + len(batch)] = vecs
        if on_batch is not None:
            on_batch(start + len(batch))
    return out
