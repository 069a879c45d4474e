"""kgviz.index.processes: the build's worker processes give results in input order, raise a
worker's error in the caller, report a dead worker, stop handing out work on a cancel; the
hashing embedder's vectors from workers equal the ones computed in this process."""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np
import pytest

from tests.support import worker_tasks
from kgviz.errors import BuildCancelled, BuildError
from kgviz.index import embed
from kgviz.index.processes import ProcessPool, process_count
from kgviz.providers.embedders import HashingEmbedder


def test_results_come_back_in_input_order() -> None:
    # the first tasks sleep longest, so the workers finish them last
    tasks = [(x, 0.05 * (6 - x)) for x in range(7)]
    with ProcessPool(2) as pool:
        assert pool.size == 2
        assert list(pool.map(worker_tasks.square_after, tasks)) == [x * x for x in range(7)]
        assert list(pool.map(worker_tasks.print_and_return, [(1,), (2,)])) == [1, 2]  # reused; stdout kept clean
        assert not pool.cancelled


def test_a_worker_error_is_raised_in_the_caller_with_its_type_and_message() -> None:
    got: list[int] = []
    with ProcessPool(2) as pool:
        with pytest.raises(BuildError, match="task 3 cannot be done here") as info:
            for value in pool.map(worker_tasks.fail_on, [(x, 3) for x in range(8)]):
                got.append(value)
        assert pool.size == 0  # the other worker was ended with it
    assert got == [0, 1, 2]  # the results before the failing task, in order
    assert any("in a build worker process" in note for note in info.value.__notes__)


def test_a_worker_that_dies_is_a_build_error() -> None:
    with ProcessPool(2) as pool:
        with pytest.raises(BuildError, match=r"ended unexpectedly \(exit status 7\)"):
            list(pool.map(worker_tasks.exit_on, [(x, 2) for x in range(6)]))


def test_a_cancel_stops_handing_out_tasks_and_keeps_the_running_ones() -> None:
    cancel = threading.Event()
    got: list[int] = []
    with ProcessPool(2) as pool:
        for value in pool.map(worker_tasks.square_after, [(x, 0.0) for x in range(50)], cancel):
            got.append(value)
            cancel.set()
        assert pool.cancelled
    # the first result, plus at most the tasks already handed out when it came back
    assert got == [x * x for x in range(len(got))] and 1 <= len(got) <= 3


def test_process_count_follows_workers_cores_and_the_size_floor(monkeypatch) -> None:
    import kgviz.providers.embedders as embedders

    monkeypatch.setattr(embedders, "usable_cores", lambda: 2)
    assert process_count(4, 100, 10) == 2
    assert process_count(1, 100, 10) == 1  # workers = 1: this process, as before
    assert process_count(4, 9, 10) == 1  # too little work to pay for starting processes
    monkeypatch.setattr(embedders, "usable_cores", lambda: 8)
    assert process_count(3, 100, 10) == 3


def test_hashing_vectors_from_worker_processes_equal_this_process(monkeypatch) -> None:
    texts = [f"Mira Tesk met Orrin Bridge in {1900 + i}; the bridge of {i % 7} towns." for i in range(700)]
    texts[5] = ""  # an empty text: a zero row either way
    one = embed.embed_texts(HashingEmbedder(64), texts, 64)
    monkeypatch.setattr(embed, "EMBED_PROCESS_MIN_TEXTS", 10)
    done: list[int] = []
    two = embed.embed_texts(HashingEmbedder(64), texts, 64, done.append, workers=2)
    assert two.dtype == np.float32 and two.tobytes() == one.tobytes()
    assert done == list(range(64, 700, 64)) + [700]
    with embed.embed_processes(HashingEmbedder(64), 2, len(texts)) as pool:
        assert pool is not None and pool.size == 2
        assert embed.embed_texts(HashingEmbedder(64), texts, 100, pool=pool).tobytes() == one.tobytes()
    with embed.embed_processes(HashingEmbedder(64), 1, len(texts)) as pool:
        assert pool is None  # workers = 1


def test_a_cancel_while_embedding_in_workers_raises_build_cancelled(monkeypatch) -> None:
    monkeypatch.setattr(embed, "EMBED_PROCESS_MIN_TEXTS", 10)
    cancel = threading.Event()
    texts = [f"text number {i}" for i in range(2000)]
    with pytest.raises(BuildCancelled, match="while embedding"):
        embed.embed_texts(HashingEmbedder(64), texts, 10, lambda _: cancel.set(), workers=2, cancel=cancel)


def test_streamed_vectors_equal_embed_texts_and_the_texts_are_read_as_batches_go_out(monkeypatch) -> None:
    """embed_stream (the embed stage's one pass, issue 29) gives embed_texts' batches and vectors,
    in one process or in workers, and reads its texts only as batches are handed out: the workers
    embed while this process makes the next texts, instead of waiting for a whole block."""
    texts = [f"Mira Tesk met Orrin Bridge in {1900 + i}; the bridge of {i % 7} towns." for i in range(700)]
    texts[5] = ""
    one = embed.embed_texts(HashingEmbedder(64), texts, 64)
    read: list[int] = []

    def source():
        for i, t in enumerate(texts):
            read.append(i)
            yield t

    monkeypatch.setattr(embed, "EMBED_PROCESS_MIN_TEXTS", 10)
    with embed.embed_processes(HashingEmbedder(64), 2, len(texts)) as pool:
        assert pool is not None
        stream = embed.embed_stream(HashingEmbedder(64), source(), 64, pool=pool)
        first = next(stream)
        assert first.shape == (64, 64)
        assert len(read) <= 3 * 64  # two batches out, a third handed out after the first reply
        parts = [first, *stream]
    assert [len(p) for p in parts] == [64] * 10 + [60]
    assert np.concatenate(parts).tobytes() == one.tobytes()
    alone = list(embed.embed_stream(HashingEmbedder(64), iter(texts), 64))
    assert np.concatenate(alone).tobytes() == one.tobytes()
    assert list(embed.embed_stream(HashingEmbedder(64), iter([]), 64)) == []


class _BadEmbedder(HashingEmbedder):
    """Returns one row too few, or NaN in place of a vector, as a broken model could."""

    def __init__(self, fault: str) -> None:
        super().__init__(dim=16)
        self.fault = fault

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vecs = np.asarray(super().embed(texts), dtype=np.float32)
        return vecs[:-1] if self.fault == "short" else np.full_like(vecs, np.nan)


@pytest.mark.parametrize("fault, message", [("short", "returned shape"), ("nan", "NaN or infinite")])
def test_a_bad_embedder_reply_is_a_build_error_in_both_embedding_paths(fault: str, message: str) -> None:
    bad = _BadEmbedder(fault)
    texts = [f"text {i}" for i in range(5)]
    with pytest.raises(BuildError, match=message):
        embed.embed_texts(bad, texts, 2)
    with pytest.raises(BuildError, match=message):
        list(embed.embed_stream(bad, texts, 2))
