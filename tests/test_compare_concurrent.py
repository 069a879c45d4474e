"""Compare's methods run in a thread pool (issue 28): on the sample corpus, offline, a comparison of
every method with four workers equals the one made one method after another, field by field
(wall-clock fields aside); each method's card is handed over in the calling thread as it finishes;
the question is embedded once per comparison; a method that raises is that card's failure."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import kgviz.compare as cmp
from kgviz.evaluate.qa import load_questions
from kgviz.methods.base import MethodContext
from kgviz.methods.registry import list_methods
from kgviz.run import SharedEmbedder, as_finished, run_methods, shared_work
from tests.support.golden import build_graph

ROOT = Path(__file__).resolve().parents[1]
WALL_CLOCK = {"seconds", "retrieval_seconds", "latency_s"}


def without_clock(obj: Any) -> Any:
    """The dict with every wall-clock field removed; nothing rounded."""
    if isinstance(obj, dict):
        return {k: without_clock(v) for k, v in obj.items() if k not in WALL_CLOCK}
    if isinstance(obj, list):
        return [without_clock(v) for v in obj]
    return obj


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MethodContext]:
    ctx = build_graph(ROOT / "sample_data" / "corpus", tmp_path_factory.mktemp("cmp") / "sample")
    yield ctx
    ctx.store.close()


def test_concurrent_comparison_equals_sequential_on_the_sample(sample: MethodContext) -> None:
    methods = list_methods()
    items = load_questions(ROOT / "sample_data" / "questions.jsonl")[:3]
    assert items
    for item in items:
        seq = cmp.compare(item.question, methods, sample, item.answers, workers=1)
        seen: list[tuple[int, str, str]] = []
        conc = cmp.compare(item.question, methods, sample, item.answers, workers=4,
                           on_result=lambda i, r: seen.append((i, r.method, threading.current_thread().name)))
        assert without_clock(conc.to_dict()) == without_clock(seq.to_dict()), item.question
        assert [r.method for r in conc.results] == methods
        # every card once, with its own position, in the thread that called compare
        assert sorted((i, m) for i, m, _ in seen) == list(enumerate(methods))
        assert {t for _, _, t in seen} == {threading.current_thread().name}
        assert conc.presence is not None and seq.presence is not None


def test_run_methods_concurrent_equals_sequential(sample: MethodContext) -> None:
    q = load_questions(ROOT / "sample_data" / "questions.jsonl")[0].question
    one = run_methods(list_methods(), q, sample, workers=1)
    four = run_methods(list_methods(), q, sample, workers=4)
    assert [r.method for r in four] == list_methods()
    assert [without_clock(r.to_dict()) for r in four] == [without_clock(r.to_dict()) for r in one]


class CountingEmbedder:
    def __init__(self, inner: Any) -> None:
        self.inner, self.id, self.dim = inner, inner.id, inner.dim
        self.calls: list[tuple[str, ...]] = []
        self._lock = threading.Lock()

    def embed(self, texts: Any) -> np.ndarray:
        with self._lock:
            self.calls.append(tuple(texts))
        return self.inner.embed(texts)


def test_the_question_is_embedded_once_per_comparison(sample: MethodContext) -> None:
    from kgviz.reasoning import Reasoner

    counting = CountingEmbedder(sample.embedder)
    ctx = MethodContext(sample.store, Reasoner(sample.reasoner.llm, counting))
    q = load_questions(ROOT / "sample_data" / "questions.jsonl")[0].question
    plain = run_methods(list_methods(), q, sample, workers=1)
    shared = cmp.compare(q, list_methods(), ctx, workers=4)
    assert counting.calls.count((q,)) == 1
    assert len(counting.calls) == len(set(counting.calls))  # no batch embedded twice
    assert [without_clock(r.run.to_dict()) for r in shared.results] == [without_clock(r.to_dict()) for r in plain]


def test_shared_embedder_hands_out_copies() -> None:
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.reasoning import Reasoner

    emb = SharedEmbedder(HashingEmbedder(64))
    a = emb.embed(["a question"])
    a[0, :] = 7.0  # a method scribbling on its array
    b = emb.embed(["a question"])
    assert emb.hits == 1 and not np.allclose(b, 7.0)
    assert np.array_equal(b, HashingEmbedder(64).embed(["a question"]))
    ctx = MethodContext(None, Reasoner(None, emb))  # type: ignore[arg-type]
    assert shared_work(ctx) is ctx  # already shared: not wrapped twice


def test_a_method_that_raises_is_its_cards_failure(sample: MethodContext, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgviz.methods.registry import get_method

    broken = type(get_method("kg-retriever"))

    def boom(self: Any, *a: Any, **kw: Any) -> Any:
        raise RuntimeError("index on fire")

    monkeypatch.setattr(broken, "retrieve", boom)
    q = load_questions(ROOT / "sample_data" / "questions.jsonl")[0].question
    c = cmp.compare(q, ["text-rag", "kg-retriever", "no-retrieval"], sample, workers=3)
    by = {r.method: r for r in c.results}
    assert by["kg-retriever"].run.error == "RuntimeError: index on fire"
    assert by["kg-retriever"].verdict.failed and by["kg-retriever"].run.answer == ""
    assert not by["text-rag"].run.error and by["text-rag"].run.answer


def test_as_finished_yields_in_finishing_order_and_raises_in_the_caller() -> None:
    release = threading.Event()

    def work(i: int) -> int:
        if i == 0:
            release.wait(5)  # the first item finishes last
        elif i == 2:
            release.set()
        return i * 10

    got = list(as_finished(work, 3, workers=3))
    assert sorted(got) == [(0, 0), (1, 10), (2, 20)] and got[-1] == (0, 0)

    def bad(i: int) -> int:
        raise ValueError(f"bad {i}")

    with pytest.raises(ValueError, match="bad"):
        list(as_finished(bad, 2, workers=2))
