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


def _alive_after_write(tmp: Path, llm: Any, params: BuildParams, monkeypatch: pytest.MonkeyPatch, *,
                       collect: bool = True) -> tuple[dict[str, bool], Any]:
    """Whether the build's Assembled rows were still referenced when the doc_layer stage began
    and after the build; and the build's report. ``collect=False``: the cyclic garbage collector
    is kept off through the build and never run, so only what reference counting freed is gone."""
    made: list[weakref.ref] = []
    seen: dict[str, bool] = {}
    real_assemble, real_doc_layer = pipeline.assemble, pipeline.build_doc_layer

    def assemble(*args: Any, **kwargs: Any) -> Any:
        acc = real_assemble(*args, **kwargs)
        made.append(weakref.ref(acc))
        return acc

    def doc_layer(*args: Any, **kwargs: Any) -> Any:
        if collect:
            gc.collect()
        seen["doc_layer"] = made[0]() is not None
        return real_doc_layer(*args, **kwargs)

    monkeypatch.setattr(pipeline, "assemble", assemble)
    monkeypatch.setattr(pipeline, "build_doc_layer", doc_layer)
    store = GraphStore.open(tmp, embedder_id=EMB.id, dim=EMB.dim)
    enabled = gc.isenabled()
    if not collect:
        gc.disable()
    try:
        report = build(corpus(), store, Reasoner(llm, EMB), params)
    finally:
        store.close()
        if enabled:
            gc.enable()
    assert report.new_triples > 0 and len(made) == 1
    if collect:
        gc.collect()
    seen["after"] = made[0]() is not None
    return seen, report


def test_an_offline_build_releases_the_resolved_rows_after_the_write(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    seen, report = _alive_after_write(tmp_path, OfflineLLM(), PARAMS, monkeypatch)
    assert seen == {"doc_layer": False, "after": False}
    assert "describe" not in report.usage_by_stage


def test_the_rows_are_freed_when_let_go_not_at_the_next_garbage_collection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Released means freed: no reference cycle holds the resolved rows, so they are gone as the
    write stage lets them go, before the doc_layer stage and its hand-back of freed memory, with
    the cyclic garbage collector never run (a recursive closure over them in
    kgviz.index.assemble.finalise kept them until its next full pass: at 100k passages that can
    be most of the build, issue 29)."""
    seen, _ = _alive_after_write(tmp_path, OfflineLLM(), PARAMS, monkeypatch, collect=False)
    assert seen == {"doc_layer": False, "after": False}


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
        assert calls.count(True) == 2, name  # after the document layer, and after KET's keyword view


def test_give_back_trims_the_c_heap_under_glibc() -> None:
    import platform

    from kgviz.index import memory

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")
    assert memory.give_back() is True


def _held_at(stage_hooks: dict[str, tuple[Any, str]], tmp: Path, monkeypatch: pytest.MonkeyPatch,
             probe: Any) -> tuple[dict[str, Any], GraphStore]:
    """``probe()`` (after a gc.collect) as each hooked function is entered: {label: result}; the
    store is returned open (the caller closes it)."""
    seen: dict[str, Any] = {}
    for label, (owner, name) in stage_hooks.items():
        real = getattr(owner, name)

        def hooked(*args: Any, _real: Any = real, _label: str = label, **kwargs: Any) -> Any:
            gc.collect()
            seen[_label] = probe()
            return _real(*args, **kwargs)

        monkeypatch.setattr(owner, name, hooked)
    store = GraphStore.open(tmp, embedder_id=EMB.id, dim=EMB.dim)
    build(corpus(), store, Reasoner(OfflineLLM(), EMB), PARAMS)
    monkeypatch.undo()
    return seen, store


def test_the_new_rows_ids_wait_in_the_spill_not_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ids of the new Entity and Triple rows (1.4M + 0.75M strings at 100k passages) are not
    held by the build through the doc_layer and ket stages; the index stage reads them back from
    the spill and writes the exact search's vector files from the spilled vectors as before."""
    from kgviz.graph import search
    from kgviz.index.ket_build import KetBuild

    def id_lists() -> list[frozenset[str]]:
        return [frozenset(o) for o in gc.get_objects()
                if type(o) is list and o and type(o[0]) is str and o[0].startswith(("tri:", "ent:"))]

    given: list[tuple[str, Any]] = []
    real_prepare = search.prepare_exact_search

    def prepare(store: Any, table: str, inserted: Any = None) -> Any:
        given.append((table, None if inserted is None else (list(inserted[0]), inserted[1].shape)))
        return real_prepare(store, table, inserted)

    monkeypatch.setattr(search, "prepare_exact_search", prepare)
    seen, store = _held_at({"doc_layer": (pipeline, "build_doc_layer"), "ket": (KetBuild, "write_stage")},
                           tmp_path, monkeypatch, id_lists)
    try:
        triples = frozenset(r["id"] for r in store.query("MATCH (t:Triple) RETURN t.id AS id"))
        entities = frozenset(r["id"] for r in store.query("MATCH (e:Entity) RETURN e.id AS id"))
    finally:
        store.close()
    assert triples and entities and set(seen) == {"doc_layer", "ket"}
    for stage, lists in seen.items():
        assert triples not in lists and entities not in lists, stage
    by_table = dict(given)
    assert set(by_table) == set(pipeline.VECTOR_TABLES)
    for table, ids in (("Triple", triples), ("Entity", entities)):
        kept, shape = by_table[table]
        assert frozenset(kept) == ids and len(kept) == len(ids) and shape[0] == len(ids), table


def test_the_chunk_lists_and_documents_go_after_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the write stage the build keeps one list of the new chunks (the ket stage's), not
    also its per-document dict and its flat copy."""
    from kgviz.index.ket_build import KetBuild
    from kgviz.types import Chunk

    def chunk_holders() -> tuple[int, int]:
        objects = gc.get_objects()
        lists = sum(1 for o in objects if type(o) is list and len(o) > 1 and all(type(c) is Chunk for c in o))
        by_doc = sum(1 for o in objects if type(o) is dict and o and all(
            type(v) is list and v and type(v[0]) is Chunk for v in o.values()))
        return lists, by_doc

    seen, store = _held_at({"doc_layer": (pipeline, "build_doc_layer"), "ket": (KetBuild, "write_stage")},
                           tmp_path, monkeypatch, chunk_holders)
    store.close()
    assert seen == {"doc_layer": (1, 0), "ket": (1, 0)}


def test_the_document_layer_hands_its_memory_back_before_the_ket_stage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The document layer's vectors, cosine tiles and edge rows are released when it is built:
    the C heap's and Arrow's free pages go back before the ket stage, not after the whole build;
    an up-to-date layer (nothing made) gives nothing back."""
    from kgviz.index import memory
    from kgviz.index.ket_build import KetBuild

    events: list[str] = []
    real_doc_layer, real_write = pipeline.build_doc_layer, KetBuild.write_stage

    def doc_layer(*args: Any, **kwargs: Any) -> Any:
        out = real_doc_layer(*args, **kwargs)
        events.append("doc_layer" if out is None else "doc_layer built")
        return out

    def write_stage(self: Any) -> None:
        events.append("ket")
        real_write(self)

    monkeypatch.setattr(pipeline, "build_doc_layer", doc_layer)
    monkeypatch.setattr(KetBuild, "write_stage", write_stage)
    monkeypatch.setattr(memory, "give_back", lambda arrow=False: events.append(f"give_back arrow={arrow}") or True)
    store = GraphStore.open(tmp_path, embedder_id=EMB.id, dim=EMB.dim)
    try:
        build(corpus(), store, Reasoner(OfflineLLM(), EMB), PARAMS)
        first = events[events.index("doc_layer built"):events.index("ket") + 1]
        events.clear()
        build(corpus(), store, Reasoner(OfflineLLM(), EMB), PARAMS)  # nothing new: the layer is up to date
        again = events[events.index("doc_layer"):events.index("ket") + 1]
    finally:
        store.close()
    assert first == ["doc_layer built", "give_back arrow=True", "ket"]
    assert again == ["doc_layer", "ket"]
