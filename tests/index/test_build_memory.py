"""What a build holds after its write stage (issue 29): the resolved rows (entities, facts,
provenance) are released as soon as nothing after the write reads them — offline, or with KET's
descriptions off — and kept for the ket stage only when it asks an LLM to describe them."""
from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

from kgviz.graph.store import GraphStore
from kgviz.index import pipeline
from kgviz.index.pipeline import BuildParams, build
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from tests.support.index_fakes import ScriptedLLM, corpus

EMB = HashingEmbedder(64)
PARAMS = BuildParams(chunk_tokens=40, chunk_overlap=0, workers=1, similar_docs_k=2)


def _alive_after_write(tmp: Path, llm: Any, params: BuildParams,
                       monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, bool], Any]:
    """Whether the build's Assembled rows were still referenced when the doc_layer stage began
    and after the build; and the build's report."""
    made: list[weakref.ref] = []
    seen: dict[str, bool] = {}
    real_assemble, real_doc_layer = pipeline.assemble, pipeline.build_doc_layer

    def assemble(*args: Any, **kwargs: Any) -> Any:
        acc = real_assemble(*args, **kwargs)
        made.append(weakref.ref(acc))
        return acc

    def doc_layer(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        seen["doc_layer"] = made[0]() is not None
        return real_doc_layer(*args, **kwargs)

    monkeypatch.setattr(pipeline, "assemble", assemble)
    monkeypatch.setattr(pipeline, "build_doc_layer", doc_layer)
    store = GraphStore.open(tmp, embedder_id=EMB.id, dim=EMB.dim)
    try:
        report = build(corpus(), store, Reasoner(llm, EMB), params)
    finally:
        store.close()
    assert report.new_triples > 0 and len(made) == 1
    gc.collect()
    seen["after"] = made[0]() is not None
    return seen, report


def test_an_offline_build_releases_the_resolved_rows_after_the_write(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    seen, report = _alive_after_write(tmp_path, OfflineLLM(), PARAMS, monkeypatch)
    assert seen == {"doc_layer": False, "after": False}
    assert "describe" not in report.usage_by_stage


def test_without_ket_descriptions_the_rows_go_after_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    params = BuildParams(**{**PARAMS.__dict__, "ket_descriptions": False})
    seen, report = _alive_after_write(tmp_path, ScriptedLLM(), params, monkeypatch)
    assert seen == {"doc_layer": False, "after": False}
    assert "describe" not in report.usage_by_stage


def test_an_llm_build_keeps_them_for_the_skeleton_descriptions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen, report = _alive_after_write(tmp_path, ScriptedLLM(), PARAMS, monkeypatch)
    assert seen == {"doc_layer": True, "after": False}
    assert report.usage_by_stage["describe"].calls > 0  # the ket stage described the skeleton from them


def _entities_at_triple_load(store: GraphStore, llm: Any, params: BuildParams, docs: Any,
                             monkeypatch: pytest.MonkeyPatch) -> tuple[set[str], set[str]]:
    """(entity ids the build's Assembled still held when the first Triple nodes were loaded,
    entity ids it resolved)."""
    made: list[Any] = []
    held: list[set[str]] = []
    real_assemble, real_load = pipeline.assemble, store.bulk_load_nodes

    def assemble(*args: Any, **kwargs: Any) -> Any:
        acc = real_assemble(*args, **kwargs)
        made.append((acc, set(acc.entities)))
        return acc

    def load(table: str, rows: Any, **kwargs: Any) -> int:
        if table == "Triple" and not held:
            held.append(set(made[0][0].entities))
        return real_load(table, rows, **kwargs)

    monkeypatch.setattr(pipeline, "assemble", assemble)
    monkeypatch.setattr(store, "bulk_load_nodes", load)
    build(docs, store, Reasoner(llm, EMB), params)
    monkeypatch.undo()
    return held[0], made[0][1]


def test_loaded_entities_are_released_before_the_triples_and_earlier_ones_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = sorted(corpus_names := [d.title for d in corpus()])
    store = GraphStore.open(tmp_path, embedder_id=EMB.id, dim=EMB.dim)
    try:
        held, resolved = _entities_at_triple_load(store, OfflineLLM(), PARAMS, corpus(names[:2]), monkeypatch)
        assert resolved and held == set()  # a first build: every entity is new and loaded
        before = {r["id"] for r in store.query("MATCH (e:Entity) RETURN e.id AS id")}
        held, resolved = _entities_at_triple_load(store, OfflineLLM(), PARAMS, corpus(corpus_names), monkeypatch)
        # a later build keeps the aggregates of entities an earlier build wrote (their descriptions
        # and aliases are merged after the write), and only those
        assert held == resolved & before and held
        assert resolved - before
    finally:
        store.close()


def test_with_descriptions_the_entities_stay_for_the_ket_stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = GraphStore.open(tmp_path, embedder_id=EMB.id, dim=EMB.dim)
    try:
        held, resolved = _entities_at_triple_load(store, ScriptedLLM(), PARAMS, corpus(), monkeypatch)
    finally:
        store.close()
    assert held == resolved and held


def test_released_rows_are_handed_back_to_the_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the loaded entities and after the whole resolved rows are released, the C heap's free
    pages go back (kgviz.index.memory); a build that keeps the rows has nothing to give back."""
    from kgviz.index import memory

    calls: list[bool] = []  # with arrow: after KET's keyword view was made (kgviz.index.ket_build)
    monkeypatch.setattr(memory, "give_back", lambda arrow=False: calls.append(arrow) or True)
    for name, llm in (("offline", OfflineLLM()), ("llm", ScriptedLLM())):
        calls.clear()
        store = GraphStore.open(tmp_path / name, embedder_id=EMB.id, dim=EMB.dim)
        try:
            build(corpus(), store, Reasoner(llm, EMB), PARAMS)
        finally:
            store.close()
        # + 1: the sub-chunks' texts, let go once written (kgviz.index.ket.write_keyword_layer)
        assert calls.count(False) == (2 if name == "offline" else 0) + 1, name
        assert calls.count(True) == 1, name


def test_give_back_trims_the_c_heap_under_glibc() -> None:
    import platform

    from kgviz.index import memory

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")
    assert memory.give_back() is True
