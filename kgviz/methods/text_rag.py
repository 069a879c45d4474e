"""Baseline: plain passage retrieval, no graph. Chunks by embedding similarity, optionally fused
with BM25 (Kùzu FTS) by reciprocal rank fusion, then filled into a token budget in rank order.

The DESIGN baseline table shows a hashing embedder alone losing to BM25 at small budgets, hence
hybrid by default: the graph methods should have to beat the stronger baseline.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kgviz.errors import MethodError
from kgviz.graph import reads
from kgviz.methods.base import (ContextItem, MethodContext, NodeRef, RetrievedContext, Tracer, check_params, param,
                                register)
from kgviz.methods.budget import skip_and_continue
from kgviz.text import count_tokens
from kgviz.vectors import rrf


@dataclass(frozen=True)
class TextRagParams:
    top_k: int = param(20, min=1, doc="candidates taken from each retriever before fusion (ours)")
    hybrid: bool = param(True, "fuse the vector ranking with BM25 (Kùzu FTS) by reciprocal rank fusion (ours)")
    rrf_k: int = param(60, min=0, doc="RRF constant k in 1/(k + rank) (ours; the usual value from the RRF literature)")
    budget_tokens: int = param(1000, min=1, doc="context budget in tokens, filled greedily in rank order; a chunk that "
                                     "does not fit is skipped and smaller ones after it may still fit "
                                     "(ours; the 1k column of the DESIGN baseline table)")

    def __post_init__(self) -> None:
        check_params(self, "text-rag")


@register
class TextRag:
    name: ClassVar[str] = "text-rag"
    title: ClassVar[str] = "Text RAG (vector + BM25 chunks)"
    paper: ClassVar[str] = "baseline"
    Params: ClassVar[type] = TextRagParams
    presets: ClassVar[dict[str, Any]] = {"hybrid": TextRagParams(), "dense-only": TextRagParams(hybrid=False)}

    def retrieve(self, question: str, ctx: MethodContext, params: TextRagParams, tracer: Tracer) -> RetrievedContext:
        p = params
        store = ctx.store
        qv = ctx.embedder.embed([question])[0]
        dense = store.vector_search("Chunk", qv, p.top_k)
        if not dense:
            raise MethodError("the graph has no chunks with embeddings", hint="build the index first")
        sparse = store.fts_search(question, p.top_k, table="Chunk") if p.hybrid else []
        info = {r["id"]: r for r in reads.chunks(store, list({i for i, _ in dense + sparse}))}

        def label(cid: str) -> str:
            r = info.get(cid)
            return f"{r['title']} · c{r['ord']}" if r else cid

        tracer.step("seed", "Vector search over chunks",
                    f"top {len(dense)} chunks by cosine similarity to the question",
                    nodes=[NodeRef(c, "Chunk", "candidate", label(c), s) for c, s in dense],
                    scores={c: s for c, s in dense})
        ranked = [c for c, _ in dense]
        scores = {c: s for c, s in dense}
        if p.hybrid:
            tracer.step("seed", "BM25 search over chunks", f"top {len(sparse)} chunks by BM25 (Kùzu full-text index)",
                        nodes=[NodeRef(c, "Chunk", "candidate", label(c), s) for c, s in sparse],
                        scores={c: s for c, s in sparse})
            scores = rrf([ranked, [c for c, _ in sparse]], p.rrf_k)
            ranked = sorted(scores, key=lambda c: (-scores[c], c))  # RRF ties often (rank 1 in either list)
            dense_rank = {c: r for r, c in enumerate((c for c, _ in dense), 1)}
            sparse_rank = {c: r for r, c in enumerate((c for c, _ in sparse), 1)}
            tracer.step("score", "Reciprocal rank fusion", f"score = sum of 1/({p.rrf_k} + rank) over both rankings",
                        nodes=[NodeRef(c, "Chunk", "candidate", label(c), scores[c]) for c in ranked],
                        scores=dict(scores),
                        data={"ranks": {c: {"vector": dense_rank.get(c), "bm25": sparse_rank.get(c)} for c in ranked}})
        sized = [(c, count_tokens(info[c]["text"])) for c in ranked
                 if c in info]  # an id the index returned but the graph no longer holds is left out
        kept, rejected, used = skip_and_continue(sized, p.budget_tokens)
        n_of = dict(sized)
        items = [ContextItem(c, "chunk", info[c]["text"], scores[c], n_of[c], source=info[c]["title"]) for c in kept]
        tracer.step("context", f"{len(items)} chunks within {p.budget_tokens} tokens",
                    f"{used} tokens used; {len(rejected)} candidates rejected as over budget",
                    nodes=[NodeRef(i.id, "Chunk", "chosen", label(i.id), i.score) for i in items]
                    + [NodeRef(c, "Chunk", "rejected", label(c), scores[c]) for c in rejected],
                    data={"budget_tokens": p.budget_tokens, "used_tokens": used, "over_budget": rejected})
        return RetrievedContext(items=items, node_ids=[i.id for i in items])

