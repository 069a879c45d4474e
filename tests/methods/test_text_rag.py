"""text-rag on the fixture graph: stages, reciprocal rank fusion, the token budget."""
from __future__ import annotations

import pytest
from tests.support.fixture_graph import FixtureGraph

from kgviz.methods.base import RetrievedContext, TraceStep, Tracer
from kgviz.methods.text_rag import TextRag, TextRagParams
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
    steps, context = retrieve(kg, hybrid=False)
    assert [s.kind for s in steps] == ["seed", "context"]
    assert [i.id for i in context.items] == [n.id for n in steps[0].nodes][: len(context.items)]


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
