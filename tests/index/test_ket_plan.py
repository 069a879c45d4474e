"""KET-RAG's plan kept by the knn stage (kgviz.index.ket_plan): a build of exactly the chunks and
KET parameters of the kept plan reuses it (a resumed build does not compute the KNN graph again)
and says so; new chunks, a changed parameter, a damaged or missing file are computed again, and
the graph written is the one a computed plan gives."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgviz.graph.store import GraphStore
from kgviz.index import ket_build, ket_plan, pipeline
from kgviz.ingest import load_paths
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.types import Document

ROOT = Path(__file__).resolve().parents[2]
EMB = HashingEmbedder(64)


def _docs() -> list[Document]:
    return load_paths([ROOT / "sample_data" / "corpus"]).documents


def _build(store: GraphStore, docs: list[Document], **fields: Any) -> tuple[Any, list[str]]:
    messages: list[str] = []
    report = pipeline.build(docs, store, Reasoner(OfflineLLM(), EMB), pipeline.BuildParams(workers=1, **fields),
                            progress=lambda ev: messages.append(f"{ev.stage}: {ev.message}"))
    return report, messages


def _ket_graph(store: GraphStore) -> dict[str, Any]:
    """What write_core wrote: every KNN edge, every chunk's PageRank and core mark."""
    knn = store.query("MATCH (a:Chunk)-[e:KNN]->(b:Chunk) RETURN a.id AS src, b.id AS dst, e.kind AS kind, e.weight AS w "
                      "ORDER BY src, dst, kind")
    ranks = store.query("MATCH (c:Chunk) RETURN c.id AS cid, c.pagerank AS pr, c.core AS core ORDER BY cid")
    return {"knn": knn, "ranks": ranks}


@pytest.fixture()
def store(tmp_path: Path) -> Any:
    s = GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim)
    yield s
    s.close()


def _no_planning(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("the plan was computed, not reused")

    monkeypatch.setattr(ket_build, "plan_core", refuse)


def test_a_build_of_the_same_chunks_reuses_the_kept_plan_and_says_so(store: GraphStore,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = _build(store, _docs(), core_fraction=0.8)
    assert first.ket["plan"] == "computed (no plan was kept)"
    assert (ket_plan.folder(store.path) / "key.json").exists()
    written = _ket_graph(store)
    with monkeypatch.context() as m:
        _no_planning(m)
        # the same chunks, the same plan parameters (τ shapes only the keyword layer)
        again, messages = _build(store, _docs(), core_fraction=0.8, subchunk_tau=0)
    assert again.ket["plan"] == ket_plan.REUSED == "reused"
    assert any(m.startswith("knn:") and "plan reused" in m for m in messages)
    assert again.ket["n_core"] == first.ket["n_core"] and again.ket["knn_edges"] == first.ket["knn_edges"]
    assert _ket_graph(store) == written


def test_new_chunks_or_another_plan_parameter_compute_the_plan_again(store: GraphStore, tmp_path: Path) -> None:
    docs = _docs()
    _build(store, docs[:-3])
    grown, _ = _build(store, docs)
    n = grown.ket["n_chunks"]
    assert grown.ket["plan"] == f"computed (the kept plan does not fit: the chunks changed ({n - grown.new_chunks} " \
                                f"planned, {n} now))"
    changed, _ = _build(store, docs, core_fraction=0.5, core_selection="random")
    assert changed.ket["plan"] == "computed (the kept plan does not fit: KET parameters changed (beta, selection))"
    # what was written is the plan of a build that never had another plan kept
    with GraphStore.open(tmp_path / "clean", embedder_id=EMB.id, dim=EMB.dim) as clean:
        _build(clean, docs, core_fraction=0.5, core_selection="random")
        assert _ket_graph(store) == _ket_graph(clean)
    # and that plan is kept in its turn
    reused, _ = _build(store, docs, core_fraction=0.5, core_selection="random")
    assert reused.ket["plan"] == ket_plan.REUSED


def _flip_last_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x01
    path.write_bytes(bytes(raw))


DAMAGE = {
    # same size and shape: only the content digest can tell
    "a changed PageRank": (lambda d: _flip_last_byte(d / "pagerank.npy"), "the kept plan is damaged"),
    "a cut edge file": (lambda d: (d / "dst.npy").write_bytes((d / "dst.npy").read_bytes()[:-8]),
                        "the kept plan is damaged"),
    "a key that is not JSON": (lambda d: (d / "key.json").write_text("{"), "the kept plan is damaged"),
    "a missing edge file": (lambda d: (d / "kind.npy").unlink(), "the kept plan is damaged"),
    "no folder": (lambda d: shutil.rmtree(d), "no plan was kept"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_or_missing_plan_is_computed_again(damage: str, store: GraphStore,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    _build(store, _docs())
    written = _ket_graph(store)
    harm, why = DAMAGE[damage]
    harm(ket_plan.folder(store.path))
    with caplog.at_level("WARNING"):
        again, _ = _build(store, _docs())
    assert again.ket["plan"] == f"computed ({why})"
    if why != "no plan was kept":
        assert any("damaged" in r.getMessage() for r in caplog.records)
    assert _ket_graph(store) == written
    assert _build(store, _docs())[0].ket["plan"] == ket_plan.REUSED  # kept whole again


def test_the_key_names_the_chunks_by_text_not_only_by_id() -> None:
    """A chunk id names its document and position, not its text (a chunk size changed between a
    killed build and its resume gives other texts under the same ids)."""
    from kgviz.index.ket import KetParams

    a = ket_plan.plan_key(["d#c0", "d#c1"], ["one two", "three"], KetParams(), "hashing", 64)
    b = ket_plan.plan_key(["d#c0", "d#c1"], ["one", "two three"], KetParams(), "hashing", 64)
    assert a["chunks"] != b["chunks"] and a["n"] == b["n"]
    assert ket_plan.plan_key(["d#c0", "d#c1"], ["one two", "three"], KetParams(tau=3), "hashing", 64) == a
    assert ket_plan.plan_key(["d#c0", "d#c1"], ["one two", "three"], KetParams(), "hashing", 32) != a


def test_the_kept_plan_is_the_computed_one(store: GraphStore) -> None:
    """Loaded back, every array of the plan equals the one computed (the kind strings included)."""
    from kgviz.index.ket import plan_core, stored_chunks

    _build(store, _docs(), core_fraction=0.7)
    ids, _, texts, emb = stored_chunks(store)
    params = pipeline.BuildParams(core_fraction=0.7).ket_params()
    computed = plan_core(ids, texts, emb, params)
    key = ket_plan.plan_key(ids, texts, params, EMB.id, EMB.dim)
    assert json.loads((ket_plan.folder(store.path) / "key.json").read_text())["key"] == key
    kept, how = ket_plan.load(store.path, key, ids, params)
    assert how == ket_plan.REUSED and kept is not None
    for name in ("src", "dst", "weight"):
        assert np.array_equal(getattr(kept.knn, name), getattr(computed.knn, name))
    assert kept.knn.kind.tolist() == computed.knn.kind.tolist() and kept.knn.n == computed.knn.n
    assert np.array_equal(kept.pagerank, computed.pagerank)
    assert kept.ranking == computed.ranking and kept.core == computed.core and kept.ids == computed.ids
