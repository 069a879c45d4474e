"""The product defaults of the KET-RAG variants (kgviz.methods.ket_rag "Product defaults"): on a
full-KG build ket-rag / skeleton-rag simulate the paper's β = 0.8 PageRank skeleton; on a graph
built as a skeleton they use it as built (never a second restriction); a graph without the KET
index gives the missing-index error first."""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Iterator

import pytest

from kgviz.errors import MethodError
from kgviz.graph.store import GraphStore
from kgviz.index.ket import core_ranking, n_core
from kgviz.index.params import BuildParams
from kgviz.methods.base import MethodContext, Tracer
from kgviz.methods.ket_rag import KetFull, KeywordRag, KetRag, KetRagParams, SkeletonRag, SkeletonRagParams
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner

EMB = HashingEmbedder(64)
PEOPLE = ["Ana Pell", "Oskar Linde", "Mira Tesk", "Jon Varr", "Kell Arden", "Lena Ostrow"]
TOWNS = ["Aldport", "Dunmore", "Halberg", "Veyn", "Sarnfield", "Castell"]
FIRMS = ["Tesk Works", "Pell Glassworks", "Linde Foundry", "Varr Press", "Ostrow Mills"]
QUESTION = "Who founded Tesk Works?"


def docs(n: int = 20) -> list:
    from kgviz.ingest import document_from_text

    rng = random.Random(3)
    out = []
    for i in range(n):
        p, t, f, t2 = rng.choice(PEOPLE), rng.choice(TOWNS), rng.choice(FIRMS), rng.choice(TOWNS)
        out.append(document_from_text(f"{p} was born in {t} in {1850 + i}. {p} founded {f} in {1900 + i}. "
                                      f"{f} is located in {t2}.", title=f"Story {i}", source=f"s{i}.txt"))
    return out


@pytest.fixture
def built(tmp_path: Path) -> Iterator[Any]:
    stores: list[GraphStore] = []

    def make(**fields: Any) -> MethodContext:
        from kgviz.index.pipeline import build

        store = GraphStore.open(tmp_path / f"ws{len(stores)}", embedder_id=EMB.id, dim=EMB.dim)
        stores.append(store)
        build(docs(), store, Reasoner(OfflineLLM(), EMB), BuildParams(workers=2, **fields))
        return MethodContext(store, Reasoner(OfflineLLM(), EMB))

    yield make
    for s in stores:
        s.close()


def run(method: Any, ctx: MethodContext, params: Any = None) -> tuple[list[str], dict[str, Any]]:
    tracer = Tracer(ctx.reasoner)
    out = method.retrieve(QUESTION, ctx, params if params is not None else method.Params(), tracer)
    return [i.id for i in out.items], tracer.steps[0].data


def chunk_of(item_id: str) -> str:
    return item_id.split(".s")[0]


def test_defaults_are_the_paper_ket_rag_and_presets_stay_distinct() -> None:
    assert BuildParams().ket_enabled and BuildParams().core_fraction == 1.0
    assert KetRagParams().skeleton_beta == 0.8 and KetRagParams().core_selection == "pagerank"
    assert KetRag.presets["simulate-P"] == KetRagParams()
    # the Params defaults are the default; a preset named "default" would duplicate the UI's "(defaults)"
    for method in (KetRag, SkeletonRag, KeywordRag, KetFull):
        assert "default" not in method.presets
    assert KetRag.presets["simulate-U"].core_selection == "random"
    assert KetRag.presets["as-built"].skeleton_beta == 0.0 == SkeletonRag.presets["as-built"].skeleton_beta
    assert SkeletonRagParams().skeleton_beta == 0.8 == SkeletonRag.presets["simulate"].skeleton_beta


def test_default_build_default_method_simulates_beta_08(built: Any) -> None:
    ctx = built()
    ids, data = run(KetRag(), ctx)
    rows = ctx.store.query("MATCH (c:Chunk) RETURN c.id AS id, c.pagerank AS pr")
    top = set(core_ranking([r["id"] for r in rows], [r["pr"] for r in rows], "pagerank", 42)[: n_core(len(rows), 0.8)])
    assert len(top) < len(rows)  # the simulation really drops chunks
    assert data["graph_beta"] == 1.0 and not data["warning"]
    assert f"simulated β=0.8 skeleton (pagerank: {len(top)} of {len(rows)} chunks" in data["skeleton"]
    tracer = Tracer(ctx.reasoner)
    KetRag().retrieve(QUESTION, ctx, KetRagParams(), tracer)
    skeleton_items = next(s.data["items"] for s in tracer.steps if s.kind == "context"
                          and s.data["channel"] == "skeleton")
    skeleton_units = [i for i in skeleton_items if ".s" in i]
    assert skeleton_units and all(chunk_of(i) in top for i in skeleton_units)
    as_built, _ = run(KetRag(), ctx, KetRag.presets["as-built"])
    assert as_built  # the full KG variant retrieves too


@pytest.mark.parametrize("beta,selection", [(0.5, "pagerank"), (0.8, "pagerank"), (0.6, "random")])
def test_on_a_built_skeleton_the_default_is_the_skeleton_as_built(built: Any, beta: float, selection: str) -> None:
    ctx = built(core_fraction=beta, core_selection=selection)
    for method, as_built in ((KetRag(), KetRag.presets["as-built"]), (SkeletonRag(), SkeletonRag.presets["as-built"])):
        ids, data = run(method, ctx)
        ref, _ = run(method, ctx, as_built)
        assert ids == ref  # exactly the as-built retrieval: no second restriction
        assert data["skeleton"].startswith("skeleton as built") and not data["warning"]
        assert data["graph_beta"] < 1.0


def test_a_smaller_same_ranking_simulation_is_a_sub_skeleton(built: Any) -> None:
    ctx = built(core_fraction=0.6)
    core = {r["id"] for r in ctx.store.query("MATCH (c:Chunk) WHERE c.core RETURN c.id AS id")}
    rows = ctx.store.query("MATCH (c:Chunk) RETURN c.id AS id, c.pagerank AS pr")
    top = set(core_ranking([r["id"] for r in rows], [r["pr"] for r in rows], "pagerank", 42)[: n_core(len(rows), 0.3)])
    assert top < core
    ids, data = run(SkeletonRag(), ctx, SkeletonRagParams(skeleton_beta=0.3))
    assert "simulated β=0.3" in data["skeleton"]
    units = [i for i in ids if ".s" in i]
    assert units and all(chunk_of(i) in top for i in units)


def test_without_ket_index_the_missing_index_is_the_error(built: Any) -> None:
    ctx = built(ket_enabled=False)
    with pytest.raises(MethodError, match="no KET keyword index"):
        run(KetRag(), ctx)
    with pytest.raises(MethodError, match="PageRank"):
        run(SkeletonRag(), ctx)  # the default simulates β = 0.8, which needs the KET index's PageRank
    ids, data = run(SkeletonRag(), ctx, SkeletonRag.presets["as-built"])
    assert ids and "no KET index" in data["skeleton"]
