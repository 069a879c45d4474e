"""Plain data shared across kgviz. No behaviour beyond small conveniences."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Document:
    id: str  # "doc:" + first 16 hex of sha256(text)
    title: str
    source: str  # path relative to the build root, upload name, or "<file>#<record id>"; never absolute
    sha256: str
    text: str


@dataclass(frozen=True)
class Chunk:
    id: str  # f"{doc_id}#c{ord}" for chunks, f"{parent_id}.s{ord}" for sub-chunks
    doc_id: str
    ord: int
    text: str
    n_tokens: int
    level: int = 0  # 0 = chunk, 1 = sub-chunk (KET-RAG tau split)
    parent_id: str = ""  # for sub-chunks


@dataclass(frozen=True)
class Entity:
    id: str
    name: str
    type: str = ""
    description: str = ""
    origin: Literal["corpus", "curated"] = "corpus"


@dataclass(frozen=True)
class Triple:
    """(subject, relation, object). Subject/object ids point at an Entity or, for a
    hypernode (KG-RAG §4.1), at another Triple."""

    id: str
    subject: str  # display text
    relation: str
    object: str
    subject_id: str = ""
    object_id: str = ""
    chunk_id: str = ""
    sentence: str = ""
    origin: Literal["corpus", "curated"] = "corpus"

    @property
    def text(self) -> str:
        return f"{self.subject} {self.relation} {self.object}"


@dataclass(frozen=True)
class Keyword:
    id: str
    word: str
    description: str = ""


@dataclass
class Usage:
    """Token and cost accounting for one call or an aggregate of calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.calls + other.calls,
            self.cached_calls + other.cached_calls,
            self.latency_s + other.latency_s,
            self.cost_usd + other.cost_usd,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["total_tokens"] = self.total_tokens
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Usage":
        """The inverse of ``to_dict`` (``total_tokens`` is derived, so it is not read back)."""
        return cls(**{k: v for k, v in d.items() if k != "total_tokens"})


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant"]
    content: str


@dataclass
class Completion:
    text: str
    usage: Usage
    model: str
    provider: str
    cached: bool = False
    latency_s: float = 0.0
    raw: dict[str, Any] = field(default_factory=dict)
