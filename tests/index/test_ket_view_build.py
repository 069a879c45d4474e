"""The build's ket stage makes and stores KET-RAG's keyword view (kgviz.graph.ket_view), so the
first question maps it instead of making it; the files are the bytes the first question would
have stored; a view the build cannot store is logged and the question path still works."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from kgviz.graph import ket_view
from kgviz.graph.store import GraphStore
from kgviz.index import pipeline
from kgviz.index.ket import META_KEYWORD_SIGNATURE
from kgviz.ingest import load_paths
from kgviz.methods import ket_cache
from kgviz.methods.base import MethodContext
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.run import run_method
from kgviz.types import Document

ROOT = Path(__file__).resolve().parents[2]
EMB = HashingEmbedder()  # 768 dims: sparse matrices, as in a real offline build
QUESTION = "Who designed the bridge that Mira Tesk said was unsafe?"


def _docs() -> list[Document]:
    return load_paths([ROOT / "sample_data" / "corpus"]).documents


def _build(store: GraphStore, docs: list[Document]) -> Any:
    return pipeline.build(docs, store, Reasoner(OfflineLLM(), EMB), pipeline.BuildParams(workers=1))


def _files(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file of the view: (inode, mtime in ns, bytes)."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir())}


@pytest.fixture()
def store(tmp_path: Path) -> Any:
    s = GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim)
    yield s
    ket_cache.forget(s)
    s.close()


def _refuse_making(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any) -> Any:
        raise AssertionError("the first question made the keyword view")

    monkeypatch.setattr(ket_cache, "_load", refuse)
    monkeypatch.setattr(ket_view, "make_parts", refuse)


def test_the_build_stores_the_view_and_the_first_question_maps_it(store: GraphStore,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    report = _build(store, _docs())
    assert report.ket["keyword_view"] == ket_view.STORED
    folder = ket_view.view_folder(store)
    before = _files(folder)
    assert "key.json" in before and "kw_matrix.data.npy" in before
    ket_cache.forget(store)  # a new process: nothing in memory
    with monkeypatch.context() as m:
        _refuse_making(m)
        view = ket_cache.keyword_view(store)
        run = run_method("ket-rag", QUESTION, MethodContext(store, Reasoner(OfflineLLM(), EMB)))
    assert view is not None and view.signature == store.get_meta(META_KEYWORD_SIGNATURE)
    assert not run.error and run.context.items
    assert _files(folder) == before  # not written again: same inodes, times and bytes


def test_the_build_stores_the_bytes_the_first_question_would_store(store: GraphStore) -> None:
    _build(store, _docs())
    folder = ket_view.view_folder(store)
    by_build = {name: data for name, (_, _, data) in _files(folder).items()}
    shutil.rmtree(folder)  # as before this change: the first question makes and stores it
    ket_cache.forget(store)
    assert ket_cache.keyword_view(store) is not None
    by_question = {name: data for name, (_, _, data) in _files(folder).items()}
    assert sorted(by_question) == sorted(by_build)
    assert [n for n in by_build if by_build[n] != by_question[n]] == []


def test_a_later_build_keeps_an_up_to_date_view_and_replaces_a_stale_one(store: GraphStore) -> None:
    docs = _docs()
    _build(store, docs[:-2])
    folder = ket_view.view_folder(store)
    first = _files(folder)
    again = _build(store, docs[:-2])
    assert again.ket["keyword_view"] == ket_view.UP_TO_DATE and _files(folder) == first
    grown = _build(store, docs)  # a new keyword layer: a new view under its key
    assert grown.ket["keyword_view"] == ket_view.STORED
    signature = store.get_meta(META_KEYWORD_SIGNATURE)
    assert f'"{signature}"' in (folder / "key.json").read_text() and _files(folder) != first


def test_a_view_the_build_cannot_store_is_logged_and_questions_still_work(
        store: GraphStore, caplog: pytest.LogCaptureFixture) -> None:
    folder = ket_view.view_folder(store)
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the view's folder goes")  # the folder cannot be made
    with caplog.at_level("WARNING", logger="kgviz.graph.ket_view"):
        report = _build(store, _docs())
    assert report.ket["keyword_view"].startswith(ket_view.NOT_STORED + ": ")
    assert any("KET keyword view not stored" in r.getMessage() for r in caplog.records)
    assert report.counts["Keyword"] > 0 and "index" in report.seconds_by_stage  # the build finished
    ket_cache.forget(store)
    run = run_method("ket-rag", QUESTION, MethodContext(store, Reasoner(OfflineLLM(), EMB)))
    assert not run.error and run.context.items and os.path.isfile(folder)


def test_a_view_the_build_cannot_make_is_a_warning_and_the_first_question_makes_it(
        store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgviz.errors import GraphStoreError

    def fail(_: Any) -> Any:
        raise GraphStoreError("the buffer pool is full")

    with monkeypatch.context() as m:
        m.setattr(ket_view, "make_parts", fail)
        report = _build(store, _docs())
    assert report.ket["keyword_view"] == f"{ket_view.NOT_STORED}: the buffer pool is full"
    assert any("keyword view was not made (the buffer pool is full)" in w for w in report.warnings)
    assert "index" in report.seconds_by_stage and not (ket_view.view_folder(store) / "key.json").exists()
    ket_cache.forget(store)
    assert ket_cache.keyword_view(store) is not None  # made and stored by the first question, as before
    assert (ket_view.view_folder(store) / "key.json").exists()
