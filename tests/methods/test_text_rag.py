"""text-rag and the bm25 / dense baselines on the fixture graph: stages, reciprocal rank fusion,
the three retriever modes, the candidate pool growing to fill the budget, the token budget."""
from __future__ import annotations

import pytest
from tests.support.fixture_graph import FixtureGraph

from kgviz.errors import ConfigError
from kgviz.methods.base import RetrievedContext, TraceStep, Tracer, param_choices
from kgviz.methods.registry import get_method
from kgviz.methods.text_rag import SingleRetrieverParams, TextRag, TextRagParams
from kgviz.vectors import rrf
from kgviz.text import count_tokens

Q = "Which river flows into the Atlantic Ocean at Lisbon?"


def retrieve(kg: FixtureGraph, **params: object) -> tuple[list[TraceStep], RetrievedContext]:
    tracer = Tracer(kg.ctx.reasoner)
    return tracer.steps, TextRag().retrieve(Q, kg.ctx, TextRagParams(**params), tracer)  # type: ignore[arg-type]


def test_rrf_formula() -> None:
    fused = rrf([["a", "b", "c"], ["c", "a"]], 60)
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["b"] == pytest.approx(1 / 62)


def test_hybrid_stages_and_fusion_scores(kg: FixtureGraph) -> None:
    steps, context = retrieve(kg, rrf_k=10)
    assert [(s.kind, s.title) for s in steps] == [
        ("seed", "Vector search over chunks"), ("seed", "BM25 search over chunks"),
        ("score", "Reciprocal rank fusion"), ("context", steps[-1].title)]
    dense = [n.id for n in steps[0].nodes]
    sparse = [n.id for n in steps[1].nodes]
    assert dense == [c for c, _ in kg.store.vector_search("Chunk", kg.embedder.embed([Q])[0], 20)]
    assert sparse == [c for c, _ in kg.store.fts_search(Q, 20)]
    fused = steps[2].scores
    for c in fused:
        want = sum(1 / (10 + r.index(c) + 1) for r in (dense, sparse) if c in r)
        assert fused[c] == pytest.approx(want)
    scores = [i.score for i in context.items]
    assert scores == sorted(scores, reverse=True)
    tagus = kg.chunks["Tagus"][0]
    assert context.items[0].id == tagus  # first in both rankings


def test_dense_only_skips_bm25_and_fusion(kg: FixtureGraph) -> None:
    steps, context = retrieve(kg, retriever="dense")
    assert [(s.kind, s.title) for s in steps] == [("seed", "Vector search over chunks"), ("context", steps[-1].title)]
    assert [i.id for i in context.items] == [n.id for n in steps[0].nodes][: len(context.items)]


def test_bm25_only_skips_vector_search_and_fusion(kg: FixtureGraph) -> None:
    steps, context = retrieve(kg, retriever="bm25")
    assert [(s.kind, s.title) for s in steps] == [("seed", "BM25 search over chunks"), ("context", steps[-1].title)]
    sparse = kg.store.fts_search(Q, 20)
    assert [n.id for n in steps[0].nodes] == [c for c, _ in sparse]
    assert [i.id for i in context.items] == [c for c, _ in sparse][: len(context.items)]
    assert [i.score for i in context.items] == [s for _, s in sparse][: len(context.items)]  # BM25 scores kept


def test_retriever_is_a_declared_choice() -> None:
    assert param_choices(TextRagParams, "retriever") == ("hybrid", "bm25", "dense")
    with pytest.raises(ConfigError, match="retriever must be one of hybrid, bm25, dense"):
        TextRagParams(retriever="sparse")  # type: ignore[arg-type]
    assert {n: p.retriever for n, p in TextRag.presets.items()} == {
        "hybrid": "hybrid", "dense-only": "dense", "bm25-only": "bm25"}


@pytest.mark.parametrize("name", ["bm25", "dense"])
def test_single_retriever_baselines_equal_text_rag_in_that_mode(kg: FixtureGraph, name: str) -> None:
    method = get_method(name)
    assert method.Params is SingleRetrieverParams and method.paper == "baseline"
    assert method.budget_param == "budget_tokens"
    t1, t2 = Tracer(kg.ctx.reasoner), Tracer(kg.ctx.reasoner)
    base = method.retrieve(Q, kg.ctx, SingleRetrieverParams(budget_tokens=60), t1)
    text = TextRag().retrieve(Q, kg.ctx, TextRagParams(retriever=name, budget_tokens=60), t2)  # type: ignore[arg-type]
    assert base.items and [i.id for i in base.items] == [i.id for i in text.items]
    assert [s.title for s in t1.steps] == [s.title for s in t2.steps]


@pytest.mark.parametrize("retriever", ["hybrid", "bm25", "dense"])
def test_pool_grows_until_the_budget_can_be_filled(kg: FixtureGraph, retriever: str) -> None:
    small, _ = retrieve(kg, retriever=retriever, top_k=2, budget_tokens=10)
    assert max(len(s.nodes) for s in small if s.kind == "seed") <= 2  # 2 candidates already overflow 10 tokens
    steps, context = retrieve(kg, retriever=retriever, top_k=2, budget_tokens=100_000)
    seeds = [s for s in steps if s.kind == "seed"]
    assert any("pool grown from 2" in s.detail for s in seeds)
    assert len(context.items) > 2  # more than top_k chunks: the budget, not top_k, stopped the fill
    # grown until the retrievers ran dry: every chunk either retriever can return is in the context
    assert not steps[-1].data["over_budget"]
    assert len(context.items) == len({n.id for s in seeds for n in s.nodes})


@pytest.mark.parametrize("budget", [20, 45, 80, 1000])
def test_budget_is_respected_and_rejections_are_traced(kg: FixtureGraph, budget: int) -> None:
    steps, context = retrieve(kg, budget_tokens=budget)
    items = context.items
    assert sum(count_tokens(i.text) for i in items) <= budget
    assert all(i.n_tokens == count_tokens(i.text) for i in items)
    ctx_step = steps[-1]
    chosen = [n.id for n in ctx_step.nodes if n.role == "chosen"]
    rejected = [n.id for n in ctx_step.nodes if n.role == "rejected"]
    assert chosen == [i.id for i in items] and kg.exist("Chunk", chosen + rejected)
    assert len(chosen) + len(rejected) == len(steps[-2].nodes)  # every fused candidate accounted for
    if budget == 1000:
        assert not rejected
    else:
        # greedy fill: whatever was skipped did not fit even in the room left at the end
        assert rejected and all(count_tokens(t) > budget - ctx_step.data["used_tokens"]
                                for t in _texts(kg, rejected))


def _texts(kg: FixtureGraph, ids: list[str]) -> list[str]:
    rows = kg.store.query("MATCH (c:Chunk) WHERE c.id IN $ids RETURN c.text AS t", {"ids": ids})
    return [r["t"] for r in rows]
