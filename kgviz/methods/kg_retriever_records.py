"""Step records of KG-Retriever's retrieval (paper 002, §3.2.2; the lines of the algorithm box in
``kgviz.methods.algorithm_lines.KG_RETRIEVER``).

The algorithm (``kgviz.methods.kg_retriever``) returns one frozen record per line it carries out;
``kgviz.methods.kg_retriever_narrator`` turns each record into the step the player shows. A record
names its line (``LINE``) and is kept, as ``record_data``, in its step's ``TraceStep.record``: the
numbers that decided and the settings that bounded them, in their own types, beside the words.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping


@dataclass(frozen=True)
class ScoredDocument:
    id: str
    cosine: float  # to the question


@dataclass(frozen=True)
class TopDocuments:
    """Line 1: the top-N documents by cosine to the question; the next ``near_misses`` (ours) are
    kept so that a miss can be diagnosed."""

    LINE: ClassVar[str] = "§3.2.2 line 1"
    top_n: int
    seeds: tuple[ScoredDocument, ...]
    near_misses: tuple[ScoredDocument, ...]


@dataclass(frozen=True)
class DocumentLink:
    """One SIMILAR_DOC edge looked at by the collaboration: followed (``w`` set: the weight it
    gives ``target``, w = ``source_weight`` · min(1, ``doc_cosine`` / scale) under attentive and
    multi-hop, 1 under one-hop) or over K (``w`` None)."""

    source: str
    target: str
    hop: int
    rank: int  # 1-based place among the source's edges, by stored edge weight (then id)
    edge_weight: float  # the stored SIMILAR_DOC weight (Eq. 1)
    doc_cosine: float  # cosine of the two documents (1.0 under one-hop, where it is not read)
    source_weight: float  # w of the source when the hop began
    w: float | None


@dataclass(frozen=True)
class Collaboration:
    """Line 2: document-layer collaboration over SIMILAR_DOC (one-hop, attentive or multi-hop)
    from the top-N documents, each followed up to K edges; a document reached along several
    paths keeps its largest weight (ours)."""

    LINE: ClassVar[str] = "§3.2.2 line 2"
    strategy: str
    hops: int  # hops walked at most (1 unless multi-hop)
    k_neighbours: int
    lam_mode: str
    weights: Mapping[str, float]  # document -> w, the top-N first, then in the order reached
    hop_of: Mapping[str, int]  # document -> the hop it was first reached at (0: top-N)
    links: tuple[DocumentLink, ...]  # in the order looked at
    over_k: tuple[str, ...]  # documents only reachable past K (not candidates)
    doc_scale: float  # relative λ: the best first-hop followed cosine (1.0 otherwise)


@dataclass(frozen=True)
class EntityScore:
    """An entity of the candidate documents and its Eq. 2 score: w · cosine / ``EntityFilter.cos_scale``."""

    id: str
    name: str
    w: float  # the largest w among the candidate documents mentioning it (ours)
    cosine: float  # raw cosine to the question
    score: float
    hop: int  # hop of the document that gives it its weight (the nearest on ties)


@dataclass(frozen=True)
class HopReach:
    """Per hop of the document layer: its entities, how many pass λ, the best score among them,
    and whether none can pass (``blocked``)."""

    hop: int
    entities: int
    passed: int
    best: float | None
    blocked: bool


@dataclass(frozen=True)
class EntityFilter:
    """Line 3 (Eq. 2): the candidate documents' entities kept when w · cos(entity, query) > λ; with
    ``t_caps`` 'entities' only the top T of them."""

    LINE: ClassVar[str] = "§3.2.2 line 3 (Eq. 2)"
    lam: float
    lam_mode: str
    cos_scale: float  # relative λ: the best entity cosine (1.0 otherwise)
    t_caps: str
    max_t: int
    ranked: tuple[EntityScore, ...]  # by score, then id
    kept: tuple[str, ...]
    below: tuple[str, ...]  # at or below λ
    over_t: tuple[str, ...]  # above λ but past T (t_caps 'entities')
    hops: tuple[HopReach, ...]
    n_documents: int  # candidate documents
    mentions: Mapping[str, tuple[str, ...]]  # entity -> chunks mentioning it, sorted
    chunk_doc: Mapping[str, str]  # chunk -> its candidate document

    @property
    def n_passing(self) -> int:
        return len(self.kept) + len(self.over_t)


@dataclass(frozen=True)
class TripleScore:
    """A triple of the kept entities: ranked by ``score`` (its best kept end entity's), ties by
    ``cosine`` to the question (ours)."""

    id: str
    text: str
    subject_id: str
    object_id: str
    score: float
    cosine: float
    sentence_fact: bool  # a sentence fact, stated with the sentence it stands for


@dataclass(frozen=True)
class TripleSelection:
    """Line 4: the triples of the kept entities inside the candidate documents, at most T
    (``t_caps`` 'triples'; under 'entities' all of them)."""

    LINE: ClassVar[str] = "§3.2.2 line 4"
    t_caps: str
    max_t: int
    ranked: tuple[TripleScore, ...]
    chosen: tuple[str, ...]
    over_t: tuple[str, ...]


@dataclass(frozen=True)
class TripleContext:
    """Line 5: the context is the selected triples, best first (the paper gives the LLM triples
    only); ``tokens`` as counted for the answer step."""

    LINE: ClassVar[str] = "§3.2.2 line 5"
    items: tuple[str, ...]
    tokens: int
    sentence_facts: int
