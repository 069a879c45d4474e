"""The shapes of the rows the graph's named reads return (kgviz.graph.reads, neighbourhood,
explore, writes): one TypedDict per shape, keyed by the column aliases of its statement.

Rows stay dicts at run time (methods record them into traces as they are, and Kùzu hands back
dicts), so these types cost nothing and change no trace; they let the type checker see a read's
columns where the rows are used. A column that may be NULL in the graph is typed ``| None``.
"""
from __future__ import annotations

from typing import Any, TypedDict, TypeVar, cast

R = TypeVar("R")


def typed(row: type[R], records: list[dict[str, Any]]) -> list[R]:
    """``records`` (a statement's result) declared as rows of ``row``, the TypedDict naming the
    statement's columns: for the type checker only, nothing is converted or checked at run time."""
    return cast("list[R]", records)


# --- chunks and documents --------------------------------------------------------------------------
class ChunkRow(TypedDict):
    """``reads.chunks``: a chunk with its document's title (every Document is written with one:
    kgviz.types.Document.title is a str)."""

    id: str
    text: str
    ord: int
    title: str


class ChunkLabelRow(TypedDict):
    id: str
    ord: int
    title: str


class ChunkDocRow(TypedDict):
    id: str
    doc: str
    text: str


class ChunkTextRow(TypedDict):
    id: str
    text: str


class ChunkRankRow(TypedDict):
    id: str
    pr: float | None  # None before the KET index is built


class CoreChunkRow(TypedDict):
    id: str
    pr: float | None
    text: str


class ChunkOverviewRow(TypedDict):
    id: str
    text: str
    n: int  # tokens
    pr: float | None
    core: bool | None
    doc: str
    ord: int


class SimilarDocRow(TypedDict):
    src: str
    dst: str
    weight: float


class DocumentRow(TypedDict):
    id: str
    title: str
    text: str


# --- entities and triples --------------------------------------------------------------------------
class EntityRow(TypedDict):
    id: str
    name: str
    description: str | None


class EntityChunksRow(TypedDict):
    """``reads.entities_with_chunks``: an entity and the chunks that mention it."""

    id: str
    name: str
    description: str | None
    origin: str
    chunks: list[str]


class EntityNameRow(TypedDict):
    id: str
    name: str
    aliases: str | None  # the names an entity was also written as, joined by "|"


class RelatedEdgeRow(TypedDict):
    """A RELATED edge between two entities, named by both ends."""

    src: str
    src_name: str
    relation: str
    triple_id: str
    dst: str
    dst_name: str


class TripleSourceRow(TypedDict):
    id: str
    text: str
    sentence: str | None
    chunk_id: str | None


class TripleAtEntityRow(TypedDict):
    """``reads.triples_at_entities``: s / o are the subject and object ids, sname / oname their names."""

    id: str
    text: str
    s: str
    o: str
    sname: str
    oname: str
    relation: str
    origin: str
    chunk_id: str | None
    kind: str | None
    sentence: str | None


class TripleChunkRow(TypedDict):
    tid: str
    cid: str


class TripleFactRow(TypedDict):
    """A triple's text and ends: s subject id, o object id, c chunk id."""

    id: str
    text: str
    s: str
    o: str
    c: str | None


class TripleLinkRow(TypedDict):
    id: str
    s: str
    o: str
    s_name: str
    o_name: str


class TripleEndRow(TypedDict):
    id: str
    s: str
    o: str
    c: str | None


class TripleProvenanceRow(TypedDict):
    """``writes.triple_provenance``: one FROM_CHUNK edge of a triple."""

    id: str
    chunk: str
    doc: str
    sentence: str | None


# --- the Explore page (kgviz.graph.explore) ----------------------------------------------------------
class EntitySummaryRow(TypedDict):
    id: str
    name: str
    type: str | None
    n: int | None  # mentions


class EntityInfoRow(TypedDict):
    id: str
    name: str
    type: str | None
    description: str | None
    n: int | None
    origin: str


class EntityDetailRow(TypedDict):
    id: str
    name: str
    type: str | None
    description: str | None
    aliases: str | None
    n_mentions: int | None
    origin: str


class RelatedAtRow(TypedDict):
    src: str
    dst: str
    rel: str
    tid: str


class EntityTripleRow(TypedDict):
    """``explore.triples_of_entity``: kind is relation | sentence (None before schema v2)."""

    id: str
    subject: str
    relation: str
    object: str
    sentence: str | None
    chunk_id: str | None
    doc_id: str | None
    origin: str
    kind: str | None


class ChunkDocumentRow(TypedDict):
    id: str
    text: str
    doc_id: str
    title: str | None  # None when the document is missing


class ExtractionRecordRow(TypedDict):
    chunk_id: str
    mode: str
    prompt_name: str
    raw: str | None
    status: str
    n_triples: int
    n_malformed: int
    error: str | None


class ExtractionSummaryRow(TypedDict):
    chunk_id: str
    raw: str | None
    status: str
    n_malformed: int
    input_tokens: int
    output_tokens: int


# --- kg-rag's neighbourhood reads (kgviz.graph.neighbourhood) ----------------------------------------
class NeighbourRow(TypedDict, total=False):
    """One row of kg-rag's fixed queries: a triple next to its anchor (``side``: SUBJ or OBJ, the
    triple columns), a RELATED edge (src / dst and their names and origins), a node looked up by
    id (``tbl``: Triple or Entity; ``name`` on an entity) or a stored vector (``emb``). Which keys
    a row has follows from the query that returned it; kg-rag adds ``inner`` to a hypernode row
    and ``_in`` to an incoming RELATED row."""

    anchor: str
    side: str
    tbl: str
    id: str
    subject: str
    relation: str
    object: str
    subject_id: str
    object_id: str
    text: str
    sentence: str | None
    chunk_id: str | None
    origin: str
    kind: str | None
    name: str
    src: str
    src_name: str
    dst: str
    dst_name: str
    triple_id: str
    src_origin: str
    dst_origin: str
    inner: str
    _in: bool  # kg-rag marks an incoming RELATED row
    emb: Any  # a list of floats (Kùzu FLOAT[n])


# --- the build's bookkeeping (kgviz.graph.writes) ----------------------------------------------------
class ExtractionRow(TypedDict):
    """``writes.extractions``: what the build stored for a chunk's extraction."""

    chunk_id: str
    mode: str
    raw: str | None
    status: str
    error: str | None


class EntityMergeRow(TypedDict):
    """``writes.entity_details``: an entity as the resolver merges new mentions into it."""

    id: str
    name: str
    type: str | None
    description: str | None
    aliases: str | None  # "|"-joined


class EntityDetailUpdate(TypedDict):
    """A row of ``writes.set_entity_details``."""

    id: str
    description: str
    aliases: str  # "|"-joined
    type: str


class ChunkRankUpdate(TypedDict):
    """A row of ``writes.set_chunk_ranks``: PageRank and core membership (KET-RAG Alg. 3)."""

    id: str
    pr: float
    core: bool
