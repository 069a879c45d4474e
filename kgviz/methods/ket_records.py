"""Step records of KET-RAG's keyword channel (paper 004, Algorithm 4 lines 2-4).

The channel's algorithm (``kgviz.methods.ket_channels``) returns one frozen record per line of the
algorithm box it implements; ``kgviz.methods.ket_narrator`` turns each record into the step the
player shows. A record names its line (``LINE``) and is kept, as ``record_data``, in its step's
``TraceStep.record``: the numbers that decided, in their own types, beside the words.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Mapping


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


def record_data(record: Any) -> dict[str, Any]:
    """A record as trace data: its type, the algorithm line and its fields (JSON-ready)."""
    return {"type": type(record).__name__, "line": record.LINE, **asdict(record)}
