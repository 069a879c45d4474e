"""Batched embedding of node texts, with the text recipe per node kind in one place.

Large batches for the hashing embedder go to worker processes (kgviz.index.processes; issue 29:
the embedder is pure Python, so it used one core of the offline build): the texts are cut into
the same ``batch_size`` batches as in one process, handed out in turn and put back in input
order. A row of the hashing embedder depends on its text alone, so the matrix is the same bit for
bit. Only the hashing embedder goes there: a neural embedder runs its own threads.
"""
from __future__ import annotations

import threading
from collections import deque
from contextlib import contextmanager
from itertools import islice
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from kgviz.errors import BuildCancelled, BuildError
from kgviz.index.processes import ProcessPool, process_count
from kgviz.providers.base import Embedder
from kgviz.providers.embedders import HashingEmbedder

MAX_EMBED_CHARS = 8000  # ours: embedders truncate anyway; this keeps hashing cost bounded
# ours: from this many texts on, a hashing embedding uses worker processes. Two workers start and
# answer a first task in 0.4-0.6 s on this machine (numpy's import), and one process hashes
# ~2,500 HotpotQA passages/s (load 5; short entity and triple texts several times more), so far
# below this the start costs more than the second core gives.
EMBED_PROCESS_MIN_TEXTS = 10_000

# ours: batches handed to worker processes per call when a caller streams its texts (the embed
# stage): 64 x 256 texts, ~50 MB of float32 vectors, keeps both workers busy between calls
EMBED_BLOCK_BATCHES = 64


def document_text(title: str, text: str) -> str:
    return f"{title}\n{text}"[:MAX_EMBED_CHARS]


def entity_text(name: str, description: str) -> str:
    return f"{name}: {description}" if description else name


def rows_depend_on_text_alone(embedder: Embedder) -> bool:
    """Whether a row ``embedder`` returns is a function of its text alone, whatever else is in the
    batch: then a vector made once for a text is the vector any later call makes for it, bit for
    bit. True only for an embedder that says so (``HashingEmbedder``); a neural embedder pads a
    batch to its longest text, so its last bits can depend on the batch."""
    return getattr(embedder, "rows_depend_on_text_alone", False) is True


@contextmanager
def embed_processes(embedder: Embedder, workers: int, n_texts: int) -> Iterator[ProcessPool | None]:
    """Worker processes for embedding ``n_texts`` texts (ended on leaving the ``with``), or None
    for this process: the hashing embedder only, from EMBED_PROCESS_MIN_TEXTS texts on, one per
    usable core up to ``workers`` (BuildParams.workers; 1 = this process, as before)."""
    n = process_count(workers, n_texts, EMBED_PROCESS_MIN_TEXTS) if type(embedder) is HashingEmbedder else 1
    if n == 1:
        yield None
        return
    with ProcessPool(n) as pool:
        yield pool


_WORKER_EMBEDDERS: dict[str, Embedder] = {}


def _embed_in_worker(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """In a worker process: the batch's vectors, from one embedder per id kept for the worker's
    life (the hashing embedder's feature cache then serves every batch)."""
    own = _WORKER_EMBEDDERS.setdefault(embedder.id, embedder)
    return np.asarray(own.embed(texts), dtype=np.float32)


def _checked(embedder: Embedder, n: int, vecs: np.ndarray) -> np.ndarray:
    """``vecs`` if they are ``n`` finite rows of the embedder's dimension, else BuildError."""
    dim = int(embedder.dim)
    if vecs.shape != (n, dim):
        raise BuildError(f"embedder {embedder.id} returned shape {vecs.shape} for {n} texts; expected ({n}, {dim})")
    if not np.isfinite(vecs).all():
        raise BuildError(f"embedder {embedder.id} returned NaN or infinite values")
    return vecs


def embed_texts(
    embedder: Embedder,
    texts: Sequence[str],
    batch_size: int,
    on_batch: Callable[[int], None] | None = None,
    *,
    workers: int = 1,
    pool: ProcessPool | None = None,
    cancel: threading.Event | None = None,
) -> np.ndarray:
    """(len(texts), dim) float32 matrix; ``on_batch(n_done)`` after every batch. ``workers``
    (BuildParams.workers): worker processes for a large hashing embedding (``embed_processes``)
    started for this call; or ``pool``, one the caller keeps for several calls. ``cancel`` (with
    worker processes) stops between batches with BuildCancelled."""
    dim = int(embedder.dim)
    out = np.zeros((len(texts), dim), dtype=np.float32)
    starts = range(0, len(texts), batch_size)

    def batch(start: int) -> list[str]:
        return [t[:MAX_EMBED_CHARS] for t in texts[start : start + batch_size]]

    def put(start: int, n: int, vecs: np.ndarray) -> None:
        out[start : start + n] = _checked(embedder, n, vecs)
        if on_batch is not None:
            on_batch(start + n)

    if pool is None and workers > 1:
        with embed_processes(embedder, workers, len(texts)) as own:
            if own is not None:
                return embed_texts(embedder, texts, batch_size, on_batch, pool=own, cancel=cancel)
    if pool is None:
        for start in starts:
            b = batch(start)
            put(start, len(b), np.asarray(embedder.embed(b), dtype=np.float32))
        return out
    tasks = ((embedder, batch(start)) for start in starts)
    for start, vecs in zip(starts, pool.map(_embed_in_worker, tasks, cancel)):
        put(start, min(batch_size, len(texts) - start), vecs)
    if pool.cancelled:
        raise BuildCancelled("build cancelled while embedding",
                             hint="run the build again: finished work is kept and skipped")
    return out


def embed_stream(embedder: Embedder, texts: Iterable[str], batch_size: int, *,
                 pool: ProcessPool | None = None) -> Iterator[np.ndarray]:
    """The vectors of ``texts``, one (n, dim) float32 matrix per batch of ``batch_size`` texts, in
    order: the batches and vectors of ``embed_texts`` over the same texts. ``texts`` is read a
    batch at a time as batches are handed out, so with ``pool`` this process makes the next
    batch's texts (and the caller stores the last one's vectors) while the workers embed
    (issue 29: handed over in blocks, the workers waited while each block's texts were made)."""
    source = iter(texts)

    def batches() -> Iterator[list[str]]:
        while batch := [t[:MAX_EMBED_CHARS] for t in islice(source, batch_size)]:
            yield batch

    if pool is None:
        for batch in batches():
            yield _checked(embedder, len(batch), np.asarray(embedder.embed(batch), dtype=np.float32))
        return
    sizes: deque[int] = deque()  # of the batches handed out and not yet answered, in order

    def tasks() -> Iterator[tuple[Embedder, list[str]]]:
        for batch in batches():
            sizes.append(len(batch))
            yield embedder, batch

    for vecs in pool.map(_embed_in_worker, tasks()):
        yield _checked(embedder, sizes.popleft(), vecs)
