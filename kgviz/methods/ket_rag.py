"""KET-RAG retrieval (paper 004, Algorithm 4 "KET-Retrieval"), and its one-channel variants.

The context limit λ is split by θ (§4.1, §5.2):

* skeleton channel, ⌊θ·λ⌋ tokens: KG-Retrieval (Algorithm 2, Microsoft Graph-RAG local search)
  on the KG skeleton G_s —
  line 1: S_e = the k = 10 entities nearest the query (cosine on unit vectors ranks exactly like
          the Euclidean distance of the box);
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
``data = {"channel", "used", "budget"}`` so a viewer can show each budget filling.

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

from dataclasses import dataclass
from typing import Any, ClassVar

from kgviz.errors import ConfigError
from kgviz.methods.base import MethodContext, RetrievedContext, Tracer, param, register
from kgviz.methods.ket_channels import Config, retrieve_ket

_POOL_MODES = ("paper", "code")
_SELECTIONS = ("pagerank", "random")

# shared field docs
D_LIMIT = ("λ: context limit in tokens, split θ : 1-θ between the channels (Algorithm 4). The paper uses "
           "12,000 (§6.1, preset 'paper'); 4,000 here so the shared answer step's default budget cuts nothing (ours)")
D_SEEDS = "k: seed entities nearest the query (Algorithm 2 line 1: k = 10)"
D_SHARE = ("share of the skeleton channel for text units; the rest is entities + relationships (Algorithm 2 lines "
           "2-3: λ/2 each; Graph-RAG's text_unit_prop = 0.5)")
D_RELCAP = ("most relationships per seed entity, 0 = no cap (Algorithm 2 has none; Graph-RAG's local search, which the "
            "authors' code calls, keeps top_k_relationships = 10 per entity: preset 'code')")
D_POOL = "candidate pool of the keyword channel, in multiples of its budget (Algorithm 4 line 2: 2·(1-θ)·λ)"
D_POOLMODE = ("'paper': add seed keywords with all their sub-chunks until the pool holds its tokens (Algorithm 4 line 2); "
              "'code': add each keyword's sub-chunks best first and stop at the first that overflows (create_context.py)")
D_SKEL = ("β of the skeleton (§6.1: 0.8). 0 = as built (every triple in the graph; the build's β is in the trace); "
          "b in (0, 1) = only the entities, triples and chunks of the top-⌈b·n⌉ chunks, which simulates the skeleton on a "
          "graph whose KG covers every chunk (ours). On a graph built with β < 1 the built skeleton is used, unless b is "
          "below it with the same ranking (a genuine sub-skeleton): no double restriction. 1 = the full KG")
D_SEL = "ranking used when skeleton_beta > 0: 'pagerank' (KET-RAG-P) or 'random' (KET-RAG-U, the build's seed) (§6.1)"


def _check_common(limit: int, seeds: int, share: float, relcap: int) -> None:
    if limit < 1 or seeds < 1 or relcap < 0 or not 0.0 <= share <= 1.0:
        raise ConfigError("ket-rag: context_limit and seed_entities must be >= 1, max_relationships_per_seed >= 0, "
                          "text_unit_share in [0, 1]")


def _check_pool(factor: float, mode: str) -> None:
    if factor < 1.0 or mode not in _POOL_MODES:
        raise ConfigError(f"ket-rag: pool_factor must be >= 1 and pool_mode one of {', '.join(_POOL_MODES)}")


def _check_skeleton(beta: float, selection: str) -> None:
    if not 0.0 <= beta <= 1.0 or selection not in _SELECTIONS:
        raise ConfigError(f"ket-rag: skeleton_beta must be in [0, 1] and core_selection one of {', '.join(_SELECTIONS)}")


@dataclass(frozen=True)
class KetRagParams:
    context_limit: int = param(4000, D_LIMIT)
    theta: float = param(0.4, "θ: share of λ for the skeleton channel; the keyword channel gets 1-θ (Algorithm 4; "
                              "θ = 0.4 in §6.1)")
    seed_entities: int = param(10, D_SEEDS)
    text_unit_share: float = param(0.5, D_SHARE)
    max_relationships_per_seed: int = param(0, D_RELCAP)
    pool_factor: float = param(2.0, D_POOL)
    pool_mode: str = param("paper", D_POOLMODE)
    skeleton_beta: float = param(0.8, D_SKEL)
    core_selection: str = param("pagerank", D_SEL)

    def __post_init__(self) -> None:
        if not 0.0 <= self.theta <= 1.0:
            raise ConfigError(f"ket-rag: θ must be in [0, 1], got {self.theta}")
        _check_common(self.context_limit, self.seed_entities, self.text_unit_share, self.max_relationships_per_seed)
        _check_pool(self.pool_factor, self.pool_mode)
        _check_skeleton(self.skeleton_beta, self.core_selection)


@dataclass(frozen=True)
class SkeletonRagParams:
    context_limit: int = param(4000, D_LIMIT)
    seed_entities: int = param(10, D_SEEDS)
    text_unit_share: float = param(0.5, D_SHARE)
    max_relationships_per_seed: int = param(0, D_RELCAP)
    skeleton_beta: float = param(0.8, D_SKEL)
    core_selection: str = param("pagerank", D_SEL)

    def __post_init__(self) -> None:
        _check_common(self.context_limit, self.seed_entities, self.text_unit_share, self.max_relationships_per_seed)
        _check_skeleton(self.skeleton_beta, self.core_selection)


@dataclass(frozen=True)
class KeywordRagParams:
    context_limit: int = param(4000, D_LIMIT)
    pool_factor: float = param(2.0, D_POOL)
    pool_mode: str = param("paper", D_POOLMODE)

    def __post_init__(self) -> None:
        _check_common(self.context_limit, 1, 0.5, 0)
        _check_pool(self.pool_factor, self.pool_mode)


@dataclass(frozen=True)
class KetFullParams:
    context_limit: int = param(4000, D_LIMIT)
    seed_entities: int = param(10, D_SEEDS)
    text_unit_share: float = param(0.5, D_SHARE)
    max_relationships_per_seed: int = param(0, D_RELCAP)

    def __post_init__(self) -> None:
        _check_common(self.context_limit, self.seed_entities, self.text_unit_share, self.max_relationships_per_seed)


class _Base:
    paper: ClassVar[str] = "004"

    def _config(self, p: Any) -> Config:
        raise NotImplementedError

    def retrieve(self, question: str, ctx: MethodContext, params: Any, tracer: Tracer) -> RetrievedContext:
        return retrieve_ket(question, ctx, self._config(params), tracer)


@register
class KetRag(_Base):
    name: ClassVar[str] = "ket-rag"
    title: ClassVar[str] = "KET-RAG (skeleton + keyword channels)"
    Params: ClassVar[type] = KetRagParams
    # no "default" preset: the Params defaults are the default (the UI lists them as "(defaults)")
    presets: ClassVar[dict[str, Any]] = {
        "paper": KetRagParams(context_limit=12000),
        # Graph-RAG local search as called by create_context.py: 10 relationships per seed entity
        "code": KetRagParams(context_limit=12000, max_relationships_per_seed=10, pool_mode="code"),
        # Table 2's KET-RAG-P / KET-RAG-U on a graph whose KG covers every chunk (β = 0.8 simulated);
        # simulate-P spells out what the default does
        "simulate-P": KetRagParams(skeleton_beta=0.8, core_selection="pagerank"),
        "simulate-U": KetRagParams(skeleton_beta=0.8, core_selection="random"),
        # every triple the graph holds: the built skeleton, or KET-RAG with β = 1 on a full build
        "as-built": KetRagParams(skeleton_beta=0.0),
    }

    def _config(self, p: KetRagParams) -> Config:
        return Config(p.context_limit, p.theta, p.seed_entities, p.text_unit_share, p.max_relationships_per_seed,
                      p.pool_factor, p.pool_mode, p.skeleton_beta, p.core_selection)


@register
class SkeletonRag(_Base):
    name: ClassVar[str] = "skeleton-rag"
    title: ClassVar[str] = "Skeleton-RAG (KET-RAG, skeleton channel only, θ=1)"
    Params: ClassVar[type] = SkeletonRagParams
    presets: ClassVar[dict[str, Any]] = {
        "paper": SkeletonRagParams(context_limit=12000),
        "simulate": SkeletonRagParams(skeleton_beta=0.8),  # Table 2's Skeleton-RAG on a full-KG graph (= default)
        "as-built": SkeletonRagParams(skeleton_beta=0.0),  # every triple the graph holds
    }

    def _config(self, p: SkeletonRagParams) -> Config:
        return Config(p.context_limit, 1.0, p.seed_entities, p.text_unit_share, p.max_relationships_per_seed,
                      skeleton_beta=p.skeleton_beta, core_selection=p.core_selection)


@register
class KeywordRag(_Base):
    name: ClassVar[str] = "keyword-rag"
    title: ClassVar[str] = "Keyword-RAG (KET-RAG, keyword channel only, θ=0)"
    Params: ClassVar[type] = KeywordRagParams
    presets: ClassVar[dict[str, Any]] = {
        "paper": KeywordRagParams(context_limit=12000),
        "code": KeywordRagParams(context_limit=12000, pool_mode="code"),
    }

    def _config(self, p: KeywordRagParams) -> Config:
        return Config(p.context_limit, 0.0, pool_factor=p.pool_factor, pool_mode=p.pool_mode)


@register
class KetFull(_Base):
    name: ClassVar[str] = "ket-full"
    title: ClassVar[str] = "KG-RAG local search (KET-RAG with β=1, θ=1)"
    Params: ClassVar[type] = KetFullParams
    presets: ClassVar[dict[str, Any]] = {
        "paper": KetFullParams(context_limit=12000),
        "code": KetFullParams(context_limit=12000, max_relationships_per_seed=10),
    }

    def _config(self, p: KetFullParams) -> Config:
        # skeleton_beta=1: every chunk's triples; on a β<1 graph the trace says the full KG is missing
        return Config(p.context_limit, 1.0, p.seed_entities, p.text_unit_share, p.max_relationships_per_seed,
                      skeleton_beta=1.0)
