"""Baselines: plain passage retrieval, no graph. Chunks ranked by embedding similarity, by BM25
(Kùzu FTS), or both fused by reciprocal rank fusion, then filled into a token budget in rank order.

The DESIGN baseline table shows a hashing embedder alone losing to BM25 at small budgets, hence
hybrid by default for ``text-rag``: the graph methods should have to beat the stronger baseline.
``bm25`` and ``dense`` are the two single-retriever baselines that equal-budget evaluation adds to
every run (kgviz.evaluate.budget), so each coverage figure is read against both at the same budget.

The candidate pool grows with the budget: when every candidate fits and the retrievers returned
as many as were asked for, the pool is doubled and ranked again, so a 3k-token budget is filled
from a 3k-token ranking rather than stopping at ``top_k`` short passages (ours).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from kgviz.errors import MethodError
from kgviz.graph import memory_reads
from kgviz.methods import deciding
from kgviz.methods.base import (ContextItem, MethodContext, NodeRef, RetrievedContext, Tracer, check_params, param,
                                register)
from kgviz.methods.budget import skip_and_continue
from kgviz.text import count_tokens
from kgviz.vectors import rrf

Retriever = Literal["hybrid", "bm25", "dense"]

D_TOP_K = ("candidates taken from each retriever before fusion; doubled while every candidate fits the budget and "
           "the retrievers have more (ours)")
D_BUDGET = ("context budget in tokens, filled greedily in rank order; a chunk that does not fit is skipped and smaller "
            "ones after it may still fit (ours; the 1k column of the DESIGN baseline table)")
MAX_POOL = 4096  # ours: the doubling stops here whatever the budget (a bound on one query's cost)


@dataclass(frozen=True)
class TextRagParams:
    top_k: int = param(20, label="Candidates per retriever", min=1, doc=D_TOP_K)
    retriever: Retriever = param("hybrid", label="Retriever",
                                 doc="'hybrid' (vector + BM25 by reciprocal rank fusion), 'bm25' (Kùzu FTS "
                                     "only) or 'dense' (vector search only) (ours)")
    rrf_k: int = param(60, label="Rank-fusion constant (RRF k)", min=0,
                       doc="RRF constant k in 1/(k + rank) (ours; the usual value from the RRF literature)")
    budget_tokens: int = param(1000, label="Context budget (tokens)", min=1, doc=D_BUDGET)

    def __post_init__(self) -> None:
        check_params(self, "text-rag")


@dataclass(frozen=True)
class SingleRetrieverParams:
    """The single-retriever baselines (``bm25``, ``dense``): text-rag with its retriever fixed."""

    top_k: int = param(20, label="Candidates per retriever", min=1, doc=D_TOP_K)
    budget_tokens: int = param(1000, label="Context budget (tokens)", min=1, doc=D_BUDGET)

    def __post_init__(self) -> None:
        check_params(self, "bm25/dense baseline")


@register
class TextRag:
    name: ClassVar[str] = "text-rag"
    title: ClassVar[str] = "Text RAG (vector + BM25 chunks)"
    paper: ClassVar[str] = "baseline"
    Params: ClassVar[type] = TextRagParams
    presets: ClassVar[dict[str, Any]] = {"hybrid": TextRagParams(), "dense-only": TextRagParams(retriever="dense"),
                                         "bm25-only": TextRagParams(retriever="bm25")}
    budget_param: ClassVar[str | None] = "budget_tokens"
    no_context: ClassVar[bool] = False

    def retrieve(self, question: str, ctx: MethodContext, params: TextRagParams, tracer: Tracer) -> RetrievedContext:
        return retrieve_passages(question, ctx, params, tracer)


@register
class Bm25Baseline:
    name: ClassVar[str] = "bm25"
    title: ClassVar[str] = "BM25 passages (baseline)"
    paper: ClassVar[str] = "baseline"
    Params: ClassVar[type] = SingleRetrieverParams
    presets: ClassVar[dict[str, Any]] = {}
    budget_param: ClassVar[str | None] = "budget_tokens"
    no_context: ClassVar[bool] = False
    retriever: ClassVar[Retriever] = "bm25"

    def retrieve(self, question: str, ctx: MethodContext, params: SingleRetrieverParams,
                 tracer: Tracer) -> RetrievedContext:
        p = TextRagParams(top_k=params.top_k, retriever=self.retriever, budget_tokens=params.budget_tokens)
        return retrieve_passages(question, ctx, p, tracer)


@register
class DenseBaseline(Bm25Baseline):
    name: ClassVar[str] = "dense"
    title: ClassVar[str] = "Dense passages (baseline: the workspace's embedder)"
    retriever: ClassVar[Retriever] = "dense"


def _rank(question: str, ctx: MethodContext, p: TextRagParams, k: int) -> tuple[list[tuple[str, float]],
                                                                                list[tuple[str, float]]]:
    store = ctx.store
    dense: list[tuple[str, float]] = []
    if p.retriever != "bm25":
        dense = store.vector_search("Chunk", ctx.embedder.embed([question])[0], k)
        if not dense:
            raise MethodError("the graph has no chunks with embeddings", hint="build the index first")
    sparse = store.fts_search(question, k, table="Chunk") if p.retriever != "dense" else []
    return dense, sparse


def _fuse(p: TextRagParams, dense: list[tuple[str, float]], sparse: list[tuple[str, float]]) -> tuple[list[str],
                                                                                                    dict[str, float]]:
    if p.retriever == "dense":
        return [c for c, _ in dense], dict(dense)
    if p.retriever == "bm25":
        return [c for c, _ in sparse], dict(sparse)
    scores = rrf([[c for c, _ in dense], [c for c, _ in sparse]], p.rrf_k)
    return sorted(scores, key=lambda c: (-scores[c], c)), scores  # RRF ties often (rank 1 in either list)


def retrieve_passages(question: str, ctx: MethodContext, p: TextRagParams, tracer: Tracer) -> RetrievedContext:
    store = ctx.store
    k = p.top_k
    while True:
        dense, sparse = _rank(question, ctx, p, k)
        ranked, scores = _fuse(p, dense, sparse)
        info = {r["id"]: r for r in memory_reads.chunks(store, ranked)}
        sized = [(c, count_tokens(info[c]["text"])) for c in ranked
                 if c in info]  # an id the index returned but the graph no longer holds is left out
        more = len(dense) >= k or len(sparse) >= k  # a retriever may hold more than it was asked for
        if not more or k >= MAX_POOL or sum(n for _, n in sized) > p.budget_tokens:
            break
        k = min(2 * k, MAX_POOL)

    def label(cid: str) -> str:
        r = info.get(cid)
        return f"{r['title']} · c{r['ord']}" if r else cid

    pool = f" (pool grown from {p.top_k} to {k} to fill the budget)" if k > p.top_k else ""
    if p.retriever != "bm25":
        tracer.step("seed", "Vector search over chunks",
                    f"top {len(dense)} chunks by cosine similarity to the question{pool}",
                    nodes=[NodeRef(c, "Chunk", "candidate", label(c), s) for c, s in dense],
                    scores={c: s for c, s in dense})
    if p.retriever != "dense":
        tracer.step("seed", "BM25 search over chunks",
                    f"top {len(sparse)} chunks by BM25 (Kùzu full-text index)"
                    + (pool if p.retriever == "bm25" else ""),
                    nodes=[NodeRef(c, "Chunk", "candidate", label(c), s) for c, s in sparse],
                    scores={c: s for c, s in sparse})
    if p.retriever == "hybrid":
        dense_rank = {c: r for r, c in enumerate((c for c, _ in dense), 1)}
        sparse_rank = {c: r for r, c in enumerate((c for c, _ in sparse), 1)}
        tracer.step("score", "Reciprocal rank fusion", f"score = sum of 1/({p.rrf_k} + rank) over both rankings",
                    nodes=[NodeRef(c, "Chunk", "candidate", label(c), scores[c]) for c in ranked],
                    scores=dict(scores),
                    data={"ranks": {c: {"vector": dense_rank.get(c), "bm25": sparse_rank.get(c)} for c in ranked}})
    kept, rejected, used = skip_and_continue(sized, p.budget_tokens)
    n_of = dict(sized)
    items = [ContextItem(c, "chunk", info[c]["text"], scores[c], n_of[c], source=info[c]["title"]) for c in kept]
    nodes = ([NodeRef(i.id, "Chunk", "chosen", label(i.id), i.score) for i in items]
             + [NodeRef(c, "Chunk", "rejected", label(c), scores[c]) for c in rejected])
    deciding.set_ranks(nodes, [c for c, _ in sized])
    deciding.set_reasons(nodes, deciding.budget_reasons(sized, p.budget_tokens, kept))
    tracer.step("context", f"{len(items)} chunks within {p.budget_tokens} tokens",
                f"{used} tokens used; {len(rejected)} candidates rejected as over budget",
                nodes=nodes,
                data={"budget_tokens": p.budget_tokens, "used_tokens": used, "over_budget": rejected,
                      "score_name": {"dense": "cosine to the question", "bm25": "BM25",
                                     "hybrid": "reciprocal rank fusion of cosine and BM25"}[p.retriever]})
    return RetrievedContext(items=items, node_ids=[i.id for i in items])
