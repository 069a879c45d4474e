"""KET-RAG retrieval (paper 004, Algorithm 4 "KET-Retrieval"), and its one-channel variants.

The context limit λ is split by θ (§4.1, §5.2):

* skeleton channel, ⌊θ·λ⌋ tokens: KG-Retrieval (Algorithm 2, Microsoft Graph-RAG local search)
  on the KG skeleton G_s —
  line 1: S_e = the k = 10 entities nearest the query (cosine on unit vectors ranks exactly like
          the Euclidean distance of the box). An entity's vector and context text are its
          LLM-written description (Algorithm 1 line 3) on a graph built with an LLM
          (kgviz.index.ket_describe; a relationship's too), else its name and source sentences
          (ours: offline there is no model to write one; the trace marks it);
  line 2: S_r = relationships (Triple nodes) ranked by adjacency to S_e — both ends in S_e first
          (§2.3 "those connecting two seed entities ranking higher"), then by how many seed
          entities the other end is linked to (as Graph-RAG's local search does), then by cosine
          to the query (ours) — taken while |S_e| + |S_r| fits half the channel (λ/2 in the box);
  line 3: S_t = text units ranked by adjacency to S_e ∪ S_r (how many of them the unit's chunk
          is linked to: MENTIONS for entities, FROM_CHUNK for triples, Algorithm 1 line 5), ties
          by cosine to the query (ours), taken while they fit the rest of the channel (at least
          half: §2.3 fills text units "until the total context length reaches λ"). Text units are the
          chunk's sub-chunks (§5.1: chunk nodes of G_s "are replaced by their corresponding
          partitioned sub-chunk nodes ... with edges rewired"), or the chunk itself when the
          graph has no sub-chunks.
* keyword channel, ⌊(1-θ)·λ⌋ tokens (Algorithm 4 lines 2-4): seed keywords by cosine, added
  until their neighbouring sub-chunks (HAS_KEYWORD) hold 2·(1-θ)·λ tokens (the candidate pool);
  then the pool's sub-chunks most similar to the query, while they fit. ``pool_mode='code'``
  follows the authors' create_context.py instead: each keyword's sub-chunks are added best first
  and the pool stops at the first one that would overflow.

"Taken while it fits" is the box's argmax-k s.t. a token total: the longest prefix of the ranking
that fits (the authors' code also stops at the first item that does not fit). Each channel's item
token counts (kgviz.text.count_tokens) never exceed its budget. A sub-chunk already chosen by the
skeleton channel is not repeated by the keyword channel (ours). The trace's steps carry
``data = {"channel", "used", "budget"}`` so a viewer can show each budget filling: the channel's
share of the context (θ·λ, (1-θ)·λ), except the keyword channel's seed and scoring steps, whose
``budget_of`` is "pool": their numbers are the candidate pool's (2·(1-θ)·λ), gathered to be ranked.

The skeleton and β. β is an index-time choice (kgviz.index.ket): a graph built with β < 1 holds
triples from core chunks only, so "the skeleton as built" is every triple in the graph
(``skeleton_beta = 0``). On a graph whose KG covers every chunk (built with β = 1, or before KET
was enabled) a method can *simulate* a smaller skeleton: ``skeleton_beta = b`` keeps only the
entities, triples and chunks of the top-⌈b·n⌉ chunks by the stored PageRank (or the seeded random
ranking). One build with KET enabled and β = 1 then reproduces the Table 2 rows: ket-full
(KG-RAG, β = θ = 1), skeleton-rag (Skeleton-RAG, β = 0.8), keyword-rag (Keyword-RAG), ket-rag
with its default params or preset 'simulate-P', and 'simulate-U' (KET-RAG-P / -U), text-rag (Text-RAG); the build report's
``ket.cost`` gives the skeleton's share of the extraction cost. Every trace states the graph's
built β and the skeleton used.

Product defaults (ours). A default build (BuildParams: KET on, β = 1) extracts every chunk, so
kg-rag, kg-retriever and kg-infused compare on a complete KG, and ket-rag's and skeleton-rag's
default ``skeleton_beta = 0.8`` (PageRank) simulates the paper's KET-RAG β = 0.8 skeleton on it
(§6.1). The price is extraction: the β = 1 build spends about 1/0.8 of what a real skeleton costs
(§5.3). To save it, build a real skeleton (``kgviz build --beta 0.8``, or the Build page's β
slider): only the core chunks are extracted, and the same default params then use the skeleton
as built — the simulation is never applied on top of a built skeleton unless it is a genuine,
smaller sub-skeleton of it (same ranking, b below the built β), so nothing is restricted twice
(kgviz.methods.ket_channels). ``skeleton_beta = 0`` (preset 'as-built') always uses every triple
the graph holds.
"""
from __future__ import annotations

from typing import Any, ClassVar

from kgviz.methods.base import MethodContext, RetrievedContext, Tracer, register
from kgviz.methods.ket_channels import retrieve_ket
from kgviz.methods.ket_params import (AnyKetParams, KetFullParams, KetRagParams, KeywordRagParams,
                                      SkeletonRagParams)

class _Base:
    paper: ClassVar[str] = "004"
    budget_param: ClassVar[str | None] = "context_limit"  # λ, split θ : 1-θ between the channels
    no_context: ClassVar[bool] = False

    def retrieve(self, question: str, ctx: MethodContext, params: AnyKetParams, tracer: Tracer) -> RetrievedContext:
        return retrieve_ket(question, ctx, params.resolve(), tracer)


@register
class KetRag(_Base):
    name: ClassVar[str] = "ket-rag"
    title: ClassVar[str] = "KET-RAG (skeleton + keyword channels)"
    Params: ClassVar[type] = KetRagParams
    # no "default" preset: the Params defaults are the default (the UI lists them as "(defaults)")
    presets: ClassVar[dict[str, Any]] = {
        # the paper's own matching too (cosine seeds in both channels), whatever the embedder
        "paper": KetRagParams(context_limit=12000, keyword_match="embedding", entity_match="embedding"),
        # Graph-RAG local search as called by create_context.py: 10 relationships per seed entity
        "code": KetRagParams(context_limit=12000, max_relationships_per_seed=10, pool_mode="code",
                             keyword_match="embedding", entity_match="embedding"),
        # Table 2's KET-RAG-P / KET-RAG-U on a graph whose KG covers every chunk (β = 0.8 simulated);
        # simulate-P spells out what the default does
        "simulate-P": KetRagParams(skeleton_beta=0.8, core_selection="pagerank"),
        "simulate-U": KetRagParams(skeleton_beta=0.8, core_selection="random"),
        # every triple the graph holds: the built skeleton, or KET-RAG with β = 1 on a full build
        "as-built": KetRagParams(skeleton_beta=0.0),
    }


@register
class SkeletonRag(_Base):
    name: ClassVar[str] = "skeleton-rag"
    title: ClassVar[str] = "Skeleton-RAG (KET-RAG, skeleton channel only, θ=1)"
    Params: ClassVar[type] = SkeletonRagParams
    presets: ClassVar[dict[str, Any]] = {
        "paper": SkeletonRagParams(context_limit=12000, entity_match="embedding"),
        "simulate": SkeletonRagParams(skeleton_beta=0.8),  # Table 2's Skeleton-RAG on a full-KG graph (= default)
        "as-built": SkeletonRagParams(skeleton_beta=0.0),  # every triple the graph holds
    }


@register
class KeywordRag(_Base):
    name: ClassVar[str] = "keyword-rag"
    title: ClassVar[str] = "Keyword-RAG (KET-RAG, keyword channel only, θ=0)"
    Params: ClassVar[type] = KeywordRagParams
    presets: ClassVar[dict[str, Any]] = {
        "paper": KeywordRagParams(context_limit=12000, keyword_match="embedding"),
        "code": KeywordRagParams(context_limit=12000, pool_mode="code", keyword_match="embedding"),
    }


@register
class KetFull(_Base):
    name: ClassVar[str] = "ket-full"
    title: ClassVar[str] = "KG-RAG local search (KET-RAG with β=1, θ=1)"
    Params: ClassVar[type] = KetFullParams
    presets: ClassVar[dict[str, Any]] = {
        "paper": KetFullParams(context_limit=12000, entity_match="embedding"),
        "code": KetFullParams(context_limit=12000, max_relationships_per_seed=10, entity_match="embedding"),
    }
