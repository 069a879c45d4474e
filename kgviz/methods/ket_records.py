"""Step records of KET-RAG's retrieval (paper 004): the skeleton channel (Algorithm 4 line 1, which
is Algorithm 2 lines 1-3 on the skeleton G_s) and the keyword channel (Algorithm 4 lines 2-4).

The channels' algorithm (``kgviz.methods.ket_channels``) returns one frozen record per line of the
algorithm box it implements; ``kgviz.methods.ket_narrator`` turns each record into the step the
player shows. A record names its line (``LINE``) and is kept, as ``record_data``, in its step's
``TraceStep.record``: the numbers that decided, in their own types, beside the words.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping


@dataclass(frozen=True)
class SeedKeyword:
    id: str
    word: str
    cosine: float  # to the question


@dataclass(frozen=True)
class KeywordPool:
    """Alg. 4 line 2: seed keywords, in the order taken, until their sub-chunks hold the pool
    budget 2·(1-θ)·λ (pool_mode 'code': each keyword's sub-chunks best first, stopping at the first
    that overflows)."""

    LINE: ClassVar[str] = "Alg. 4 line 2"
    seeds: tuple[SeedKeyword, ...]
    next_keywords: tuple[SeedKeyword, ...]  # the ones after the last seed, not needed
    asked: tuple[str, ...]  # lexical matching: the question's own keywords (words), rarest first
    pool: tuple[tuple[str, int], ...]  # (sub-chunk id, tokens) in the order added
    via: Mapping[str, tuple[str, ...]]  # sub-chunk id -> ids of the seed keywords that brought it
    tokens: int
    budget: int
    pool_mode: str


@dataclass(frozen=True)
class KeywordRanking:
    """Alg. 4 line 3: the pool's sub-chunks ranked by the deciding score (cosine to the question;
    BM25 with cosine breaking ties when matching lexically; both fused by reciprocal rank in the
    hybrid mode)."""

    LINE: ClassVar[str] = "Alg. 4 line 3"
    ranked: tuple[str, ...]  # sub-chunk ids, best first
    score: Mapping[str, float]
    cosine: Mapping[str, float]
    lexical: Mapping[str, float] | None  # BM25 of each ranked sub-chunk, when matching lexically


@dataclass(frozen=True)
class KeywordFill:
    """Alg. 4 line 4: the best-ranked sub-chunks not already in the skeleton channel, taken while
    they fit (1-θ)·λ tokens (stop at the first that overflows)."""

    LINE: ClassVar[str] = "Alg. 4 line 4"
    chosen: tuple[str, ...]
    over: tuple[str, ...]  # did not fit, in rank order
    fresh: tuple[str, ...]  # the ranking without the skeleton channel's sub-chunks
    already_in_skeleton: tuple[str, ...]
    tokens: Mapping[str, int]  # stored token count of each pooled sub-chunk
    used: int
    budget: int


# -- skeleton channel (Algorithm 2 on G_s) ----------------------------------------------------------
@dataclass(frozen=True)
class SeedEntity:
    id: str
    name: str
    cosine: float  # to the question (its LLM-written description's, when it has one)
    origin: str
    in_skeleton: bool  # a chunk of the skeleton mentions it


@dataclass(frozen=True)
class SkeletonSeeds:
    """Alg. 2 line 1: the k entities nearest the question (lexical / hybrid entity_match: the ones
    the question names first, ours), skipping curated entities and those outside the skeleton; then
    their texts while they fit the entity+relationship half of θ·λ (stop at the first that overflows)."""

    LINE: ClassVar[str] = "Alg. 2 line 1"
    seed_entities: int  # k
    seeds: tuple[SeedEntity, ...]  # the k taken, in rank order
    skipped: tuple[SeedEntity, ...]  # the other candidates looked at, in rank order
    named: tuple[str, ...]  # entities the question names (lexical / hybrid entity_match)
    sized: tuple[tuple[str, int], ...]  # (seed id, tokens of its text) in rank order
    chosen: tuple[str, ...]
    over: tuple[str, ...]  # seeds whose text did not fit
    used: int
    budget: int  # θ·λ, the channel's
    entity_relationship_budget: int
    not_described: tuple[str, ...]  # chosen entities without an LLM-written description (graph with them)

    @property
    def out_of_skeleton(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.skipped if e.origin == "curated" or not e.in_skeleton)


@dataclass(frozen=True)
class RankedRelationship:
    """A relationship adjacent to the seeds, ranked by ``adjacency`` (seeds it joins), then
    ``other_links`` (links of its other end to seeds; 2 when it joins two), then ``cosine``."""

    id: str
    text: str
    subject: str
    object: str
    subject_name: str
    object_name: str
    relation: str
    adjacency: int
    other_links: int
    cosine: float
    tokens: int | None  # of its stated text; None when past the per-seed cap (never sized)


@dataclass(frozen=True)
class SkeletonRelationships:
    """Alg. 2 line 2: the relationships adjacent to the seeds, best first, while they fit what is
    left of the entity+relationship half (stop at the first that overflows)."""

    LINE: ClassVar[str] = "Alg. 2 line 2"
    seeds: tuple[str, ...]  # the chosen seed entities
    ranked: tuple[RankedRelationship, ...]
    chosen: tuple[str, ...]
    over: tuple[str, ...]  # did not fit
    capped: tuple[str, ...]  # past max_relationships_per_seed per seed
    cap_per_seed: int  # 0: no cap
    room: int  # tokens left of the half when the step began
    used: int  # the channel's tokens after the step
    budget: int
    entity_relationship_budget: int
    not_described: tuple[str, ...]


@dataclass(frozen=True)
class RankedUnit:
    """A text unit (sub-chunk, or chunk on a graph without sub-chunks) of a chunk linked to the
    chosen entities and relationships; ranked by ``lexical`` (BM25, or fused with cosine, when
    matching lexically), then ``links`` (chosen items its chunk is linked to), then ``cosine``."""

    id: str
    chunk: str
    lexical: float | None
    links: int
    cosine: float
    tokens: int


@dataclass(frozen=True)
class SkeletonTextUnits:
    """Alg. 2 line 3: the text units most adjacent to S_e ∪ S_r while they fit the rest of θ·λ
    (stop at the first that overflows)."""

    LINE: ClassVar[str] = "Alg. 2 line 3"
    table: str  # SubChunk | Chunk
    n_chunks: int  # chunks linked to the chosen entities and relationships
    one_hop_out: int  # of them, reached one hop out (lexical / hybrid entity_match, ours)
    linked: Mapping[str, tuple[str, ...]]  # chunk -> the S_e ∪ S_r items linked to it, relationships then seeds first
    ranked: tuple[RankedUnit, ...]
    chosen: tuple[str, ...]
    over: tuple[str, ...]
    room: int  # tokens left of θ·λ
    used: int  # the channel's tokens after the step
    budget: int
    items: tuple[str, ...]  # every item of the channel


@dataclass(frozen=True)
class SkeletonEmpty:
    """Alg. 2 line 3 reached with no seed entity: the channel retrieves nothing."""

    LINE: ClassVar[str] = "Alg. 2 line 3"
    used: int
    budget: int
