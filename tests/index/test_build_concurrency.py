"""Builds into one workspace from two app sessions at once (threads of one process, as Streamlit
runs them): one build waits for the other, says so, and the KET index ends up as complete as a
sequential build of the union. Also: a KET stage that finds chunks it did not plan for (an
interleaving the lock did not order) re-plans over every stored chunk."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from test_ket import EMB, build_with, synthetic_docs

from kgviz.errors import BuildCancelled
from kgviz.graph.store import GraphStore
from kgviz.index.params import WAIT_STAGE, BuildParams
from kgviz.index.pipeline import build
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner

# a bound on waits for the other thread, so a regression fails instead of hanging (not a timing)
HANG_S = 120
# Counts the KET index is made of, and the graph around it. Meta is left out: it holds one row per
# key whatever the order of builds, but also the keyword signature's bookkeeping rows.
INDEX_TABLES = ("KNN", "Keyword", "SubChunk", "SUB_CHUNK_OF", "HAS_KEYWORD", "Chunk", "Document", "Entity",
                "Triple", "Extraction")


def _counts(store: GraphStore) -> dict[str, int]:
    c = store.counts()
    return {t: c[t] for t in INDEX_TABLES}


def _core_and_ranks(store: GraphStore) -> list[tuple[str, bool, float]]:
    rows = store.query("MATCH (c:Chunk) RETURN c.id AS id, c.core AS core, c.pagerank AS pr ORDER BY c.id")
    return [(r["id"], bool(r["core"]), round(float(r["pr"]), 9)) for r in rows]


def _knn_edges(store: GraphStore) -> set[tuple[str, str, str]]:
    return {(r["a"], r["b"], r["k"]) for r in store.query(
        "MATCH (a:Chunk)-[r:KNN]->(b:Chunk) RETURN a.id AS a, b.id AS b, r.kind AS k")}


@pytest.fixture(scope="module")
def docs() -> tuple[list[Any], list[Any]]:
    all_docs = synthetic_docs(24, seed=13)
    return all_docs[:12], all_docs[12:]


@pytest.fixture(scope="module")
def union(tmp_path_factory: pytest.TempPathFactory, docs: tuple[list[Any], list[Any]]) -> dict[str, Any]:
    """The reference: one build of both document sets, nothing running beside it."""
    store = GraphStore.open(tmp_path_factory.mktemp("union") / "ws", embedder_id=EMB.id, dim=EMB.dim)
    try:
        build_with(store, docs[0] + docs[1], ket_enabled=True)
        return {"counts": _counts(store), "core": _core_and_ranks(store), "knn": _knn_edges(store)}
    finally:
        store.close()


def _params() -> BuildParams:
    # β = 1: every chunk is extracted, so the KG too is independent of the order of the builds
    # (with β < 1 an incremental build legitimately extracts other core chunks than one build)
    return BuildParams(workers=2, ket_enabled=True, core_fraction=1.0)


def test_two_sessions_building_at_once_equal_a_sequential_build_of_the_union(
        tmp_path: Path, docs: tuple[list[Any], list[Any]], union: dict[str, Any]) -> None:
    ws = tmp_path / "ws"
    GraphStore.open(ws, embedder_id=EMB.id, dim=EMB.dim).close()
    a_running, b_waiting = threading.Event(), threading.Event()
    events: dict[str, list[Any]] = {"a": [], "b": []}
    reports: dict[str, Any] = {}
    errors: list[BaseException] = []

    def on_a(ev: Any) -> None:
        events["a"].append(ev)
        if not a_running.is_set():
            a_running.set()  # A holds the workspace: let B start, and go on once B is waiting
            assert b_waiting.wait(HANG_S), "the second build never reported that it waits"

    def on_b(ev: Any) -> None:
        events["b"].append(ev)
        if ev.stage == WAIT_STAGE:
            b_waiting.set()

    def session(name: str, documents: list[Any], progress: Any) -> None:
        store = GraphStore.open(ws)  # each session opens its own store on the shared Database
        try:
            reports[name] = build(documents, store, Reasoner(OfflineLLM(), EMB), _params(), progress=progress)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread below
            errors.append(exc)
        finally:
            store.close()

    ta = threading.Thread(target=session, args=("a", docs[0], on_a))
    tb = threading.Thread(target=session, args=("b", docs[1], on_b))
    ta.start()
    assert a_running.wait(HANG_S)
    tb.start()
    ta.join(HANG_S)
    tb.join(HANG_S)
    assert not ta.is_alive() and not tb.is_alive()
    if errors:
        raise errors[0]

    # B said it was waiting before doing anything, then that the other build had finished
    b_stages = [e.stage for e in events["b"]]
    assert b_stages[:2] == [WAIT_STAGE, WAIT_STAGE] and WAIT_STAGE not in b_stages[2:]
    assert events["b"][0].done == 0 and "waiting for the other build" in events["b"][0].message
    assert events["b"][1].done == events["b"][1].total == 1
    assert WAIT_STAGE not in [e.stage for e in events["a"]]
    assert reports["b"].waited_seconds > 0 and reports["a"].waited_seconds == 0

    # each report counts what its own build added
    assert reports["a"].new_documents == len(docs[0]) and reports["b"].new_documents == len(docs[1])
    assert reports["a"].skipped_documents == reports["b"].skipped_documents == 0
    with GraphStore.open(ws) as store:
        counts = _counts(store)
        assert counts == union["counts"]
        assert reports["a"].new_chunks + reports["b"].new_chunks == counts["Chunk"]
        assert reports["a"].new_triples + reports["b"].new_triples == counts["Triple"]
        assert reports["a"].ket["added"]["KNN"] + reports["b"].ket["added"]["KNN"] == counts["KNN"]
        # the KET index is the union's: same KNN edges, PageRank and core chunks
        assert _knn_edges(store) == union["knn"]
        assert _core_and_ranks(store) == union["core"]
        assert counts["KNN"] == 2 * counts["Chunk"]  # k = 2 per chunk: nothing half built


def test_ket_stage_replans_over_chunks_another_build_wrote_meanwhile(
        tmp_path: Path, docs: tuple[list[Any], list[Any]], union: dict[str, Any]) -> None:
    """An interleaving the lock does not order: build B runs to the end *inside* build A, after A
    wrote its chunks and before A's KET stage (same thread, so the re-entrant lock lets it in).
    A planned its KNN graph over its own chunks; its KET stage must see B's too."""
    store = GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim)
    try:
        reasoner = Reasoner(OfflineLLM(), EMB)
        nested: dict[str, Any] = {}

        def on_a(ev: Any) -> None:
            if ev.stage == "write" and not nested:
                nested["b"] = build(docs[1], store, reasoner, _params())

        report_a = build(docs[0], store, reasoner, _params(), progress=on_a)
        assert nested["b"].new_documents == len(docs[1])
        assert report_a.ket["replanned"] and any("chunks changed during the build" in w for w in report_a.warnings)
        assert _counts(store) == union["counts"]
        assert _knn_edges(store) == union["knn"] and _core_and_ranks(store) == union["core"]
        # a re-run over the finished workspace changes nothing in the index
        again = build(docs[0] + docs[1], store, reasoner, _params())
        assert again.new_documents == 0 and not again.ket["replanned"]
        assert all(v == 0 for k, v in again.ket["added"].items()), again.ket["added"]
        assert _counts(store) == union["counts"]
    finally:
        store.close()


def test_a_build_cancelled_while_waiting_writes_nothing(tmp_path: Path, docs: tuple[list[Any], list[Any]]) -> None:
    ws = tmp_path / "ws"
    store = GraphStore.open(ws, embedder_id=EMB.id, dim=EMB.dim)
    other = GraphStore.open(ws)
    cancel, waiting = threading.Event(), threading.Event()
    outcome: list[BaseException] = []

    def on_progress(ev: Any) -> None:
        if ev.stage == WAIT_STAGE:
            waiting.set()

    def session() -> None:
        try:
            build(docs[0], other, Reasoner(OfflineLLM(), EMB), _params(), progress=on_progress, cancel=cancel)
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)

    try:
        with store.build_lock() as waited:  # another build holds the workspace
            assert not waited
            t = threading.Thread(target=session)
            t.start()
            assert waiting.wait(HANG_S)
            cancel.set()
            t.join(HANG_S)
            assert not t.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], BuildCancelled)
        assert "waiting for another build" in str(outcome[0]) and "nothing was written" in outcome[0].user_message()
        assert store.counts()["Document"] == 0
    finally:
        other.close()
        store.close()
