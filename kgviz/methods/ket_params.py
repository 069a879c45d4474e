"""KET-RAG's parameters (paper 004): every field declared once, in groups; each variant's Params
(ket-rag, skeleton-rag, keyword-rag, ket-full) is the union of the groups it reads, and resolves
to the one ``KetRetrievalParams`` (with its ``variant``) that the channels in ``kgviz.methods.ket_channels``
run on. All construction is keyword-only.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal, Union

from kgviz.methods.base import check_params, param

__all__ = ["AnyKetParams", "KetFullParams", "KetRagParams", "KetRetrievalParams", "KeywordRagParams",
           "SkeletonRagParams", "Variant"]

Variant = Literal["ket-rag", "skeleton-rag", "keyword-rag", "ket-full"]
PoolMode = Literal["paper", "code"]
CoreSelection = Literal["pagerank", "random"]
MatchMode = Literal["auto", "embedding", "lexical", "hybrid"]  # keyword_match and entity_match

# shared field docs
D_LIMIT = ("λ: context limit in tokens, split θ : 1-θ between the channels (Algorithm 4). The paper uses "
           "12,000 (§6.1, preset 'paper'); 4,000 by default (ours: a context a small local model reads in "
           "reasonable time). Either way the answer step takes λ unchanged (kgviz.run), so both channels reach it")
D_THETA = "θ: share of λ for the skeleton channel; the keyword channel gets 1-θ (Algorithm 4; θ = 0.4 in §6.1)"
D_SEEDS = "k: seed entities nearest the query (Algorithm 2 line 1: k = 10)"
D_SHARE = ("share of the skeleton channel for text units; the rest is entities + relationships (Algorithm 2 lines "
           "2-3: λ/2 each; Graph-RAG's text_unit_prop = 0.5)")
D_RELCAP = ("most relationships per seed entity, 0 = no cap (Algorithm 2 has none; Graph-RAG's local search, which the "
            "authors' code calls, keeps top_k_relationships = 10 per entity: preset 'code')")
D_POOL = "candidate pool of the keyword channel, in multiples of its budget (Algorithm 4 line 2: 2·(1-θ)·λ)"
D_POOLMODE = ("'paper': add seed keywords with all their sub-chunks until the pool holds its tokens (Algorithm 4 line 2); "
              "'code': add each keyword's sub-chunks best first and stop at the first that overflows (create_context.py)")
D_MATCH = ("how the keyword channel picks seed keywords and ranks their sub-chunks. 'embedding': cosine to the query "
           "(Algorithm 4 lines 2-3, the paper). 'lexical' (ours): the keywords the question itself contains, rarest "
           "first, then the rest by cosine; candidates ranked by BM25 over the question's keywords (k1 1.2, b 0.75), "
           "cosine breaking ties. 'hybrid' (ours): seeds as 'lexical', candidates ranked by the BM25 and cosine "
           "rankings fused by reciprocal rank (k 60). 'auto' (default): lexical with the offline hashing embedder, "
           "whose 768-d cosines are too coarse to rank tens of thousands of keywords, embedding with a neural model "
           "(on MuSiQue with all-MiniLM-L6-v2 the paper's cosine kept more gold answers than hybrid)")
D_EMATCH = ("how the skeleton channel finds its seed entities. 'embedding': the k entities nearest the query "
            "(Algorithm 2 line 1, the paper). 'lexical' (ours): the entities whose name the question spells out "
            "first (longest names first), then the nearest by cosine up to k; its text units also come from the "
            "chunks that mention the other end of each chosen relationship (one hop out) and rank by BM25 over the "
            "question's keywords before their links. 'hybrid' (ours): as 'lexical', with the text units ranked by "
            "the BM25 and cosine rankings fused by reciprocal rank (k 60). 'auto' (default): lexical with the offline "
            "hashing embedder, hybrid with a neural model (all-MiniLM-L6-v2, 3k tokens, gold answer in the context, "
            "paper's cosine -> hybrid: skeleton-rag 51 -> 71 % on MuSiQue, 67 -> 70 % on 2WikiMultihopQA; ket-rag "
            "71 -> 78 % and 81 -> 77 %)")
D_SKEL = ("β of the skeleton (§6.1: 0.8). 0 = as built (every triple in the graph; the build's β is in the trace); "
          "b in (0, 1) = only the entities, triples and chunks of the top-⌈b·n⌉ chunks, which simulates the skeleton on a "
          "graph whose KG covers every chunk (ours). On a graph built with β < 1 the built skeleton is used, unless b is "
          "below it with the same ranking (a genuine sub-skeleton): no double restriction. 1 = the full KG")
D_SEL = "ranking used when skeleton_beta > 0: 'pagerank' (KET-RAG-P) or 'random' (KET-RAG-U, the build's seed) (§6.1)"


# Field groups: each KET parameter is declared once, here, and every variant's Params is the union
# of the groups it uses (so a form shows only what the variant reads, and the run records only that).
# Keyword-only: a variant's fields come in MRO order, which no caller should have to remember.
@dataclass(frozen=True, kw_only=True)
class _LimitFields:
    context_limit: int = param(4000, label="Context limit λ (tokens)", doc=D_LIMIT, min=1)


@dataclass(frozen=True, kw_only=True)
class _ThetaFields:
    theta: float = param(0.4, label="Skeleton share θ", doc=D_THETA, min=0.0, max=1.0)


@dataclass(frozen=True, kw_only=True)
class _SkeletonFields:
    seed_entities: int = param(10, label="Seed entities (k)", doc=D_SEEDS, min=1)
    text_unit_share: float = param(0.5, label="Text share of the skeleton channel", doc=D_SHARE, min=0.0, max=1.0)
    max_relationships_per_seed: int = param(0, label="Relationships per seed", doc=D_RELCAP, min=0)
    entity_match: MatchMode = param("auto", label="Seed entity matching", doc=D_EMATCH)


@dataclass(frozen=True, kw_only=True)
class _KeywordFields:
    pool_factor: float = param(2.0, label="Keyword pool size (× budget)", doc=D_POOL, min=1.0)
    pool_mode: PoolMode = param("paper", label="Keyword pool mode", doc=D_POOLMODE)
    keyword_match: MatchMode = param("auto", label="Keyword matching", doc=D_MATCH)


@dataclass(frozen=True, kw_only=True)
class _SimulationFields:
    skeleton_beta: float = param(0.8, label="Skeleton β", doc=D_SKEL, min=0.0, max=1.0)
    core_selection: CoreSelection = param("pagerank", label="Core chunk ranking", doc=D_SEL)


@dataclass(frozen=True, kw_only=True)
class KetRetrievalParams:
    """The one resolved KET parameter set, whichever variant asked: what ``retrieve_ket`` reads.
    Built by a variant's ``Params.resolve()``; the fields a variant does not expose get the value
    that defines the variant (θ = 1 for skeleton-only, θ = 0 for keyword-only, β = 1 for the full KG)."""

    variant: Variant
    context_limit: int
    theta: float
    seed_entities: int = 10
    text_unit_share: float = 0.5
    max_relationships_per_seed: int = 0
    entity_match: MatchMode = "auto"
    pool_factor: float = 2.0
    pool_mode: PoolMode = "paper"
    keyword_match: MatchMode = "auto"
    skeleton_beta: float = 0.0
    core_selection: CoreSelection = "pagerank"

    @property
    def limit(self) -> int:
        return self.context_limit

    @property
    def skeleton_budget(self) -> int:
        return int(math.floor(self.theta * self.context_limit + _EPS))

    @property
    def keyword_budget(self) -> int:
        return int(math.floor((1.0 - self.theta) * self.context_limit + _EPS))


_EPS = 1e-9  # floor(θ·λ) must not lose a token to float error (0.3 · 1000 = 299.99999...)


@dataclass(frozen=True, kw_only=True)
class KetRagParams(_SimulationFields, _KeywordFields, _SkeletonFields, _ThetaFields, _LimitFields):
    def __post_init__(self) -> None:
        check_params(self, "ket-rag")

    def resolve(self) -> KetRetrievalParams:
        return KetRetrievalParams(variant="ket-rag", **asdict(self))


@dataclass(frozen=True, kw_only=True)
class SkeletonRagParams(_SimulationFields, _SkeletonFields, _LimitFields):
    def __post_init__(self) -> None:
        check_params(self, "skeleton-rag")

    def resolve(self) -> KetRetrievalParams:
        return KetRetrievalParams(variant="skeleton-rag", theta=1.0, **asdict(self))


@dataclass(frozen=True, kw_only=True)
class KeywordRagParams(_KeywordFields, _LimitFields):
    def __post_init__(self) -> None:
        check_params(self, "keyword-rag")

    def resolve(self) -> KetRetrievalParams:
        return KetRetrievalParams(variant="keyword-rag", theta=0.0, **asdict(self))


@dataclass(frozen=True, kw_only=True)
class KetFullParams(_SkeletonFields, _LimitFields):
    def __post_init__(self) -> None:
        check_params(self, "ket-full")

    def resolve(self) -> KetRetrievalParams:
        # skeleton_beta=1: every chunk's triples; on a β<1 graph the trace says the full KG is missing
        return KetRetrievalParams(variant="ket-full", theta=1.0, skeleton_beta=1.0, **asdict(self))


AnyKetParams = Union[KetRagParams, SkeletonRagParams, KeywordRagParams, KetFullParams]
