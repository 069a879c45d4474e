"""Read-only graph queries behind the Explore page: entity search, an entity's neighbourhood as
VizNode/VizEdge lists, and the provenance details of one entity.

The statements live in ``kgviz.graph.explore`` (user text is only ever a $param there); the
name search, the neighbourhood's edges and nodes and an entity's facts are read from memory
(``kgviz.graph.memory_explore``: the same rows, without the whole-table scans that made each
Explore action take seconds at 100,000 passages); this module shapes the rows for the page. No streamlit import here, so the page stays a thin shell.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Mapping

from kgviz.errors import KgvizError
from kgviz.graph import explore as reads
from kgviz.graph import memory_explore
from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import EntityDetailRow, EntityTripleRow, ExtractionRecordRow
from kgviz.viz.graph_html import CappedGraph, VizEdge, VizNode, cap_graph

# a hub entity can have thousands of relations: never pull more rows than this per hop (ours)
MAX_ROWS_PER_HOP = 5000
# the neighbourhood's labels on screen at any zoom: a 2-hop view fitted to the frame zooms out to
# about a third, which drew the 14-unit labels at ~5 px (ours: the smallest size read without effort)
LABEL_PX = 13.0


@dataclass(frozen=True)
class EntityHit:
    id: str
    name: str
    type: str
    n_mentions: int
    match: str  # "name" (substring) or "vector" (embedding fallback)
    score: float | None = None

    def label(self) -> str:
        extra = f", {self.type}" if self.type else ""
        how = f" · similarity {self.score:.2f}" if self.match == "vector" and self.score is not None else ""
        return f"{self.name} ({self.n_mentions} mentions{extra}){how}"


def search_entities(store: GraphStore, text: str, *, limit: int = 20, embedder: Any | None = None,
                    vector_search: Any | None = None) -> list[EntityHit]:
    """Entities whose name contains ``text`` (case-insensitive), most mentioned first. With no
    name match and an embedder, fall back to vector search over entity embeddings.

    ``vector_search`` defaults to ``store.vector_search``; it is a parameter so the caller can
    decide what to do when the store has no vector index (the store raises a typed error)."""
    q = " ".join(text.split())
    if not q:
        return []
    rows = memory_explore.entities_named(store, q, limit)
    hits = [EntityHit(r["id"], r["name"] or r["id"], r["type"] or "", int(r["n"] or 0), "name") for r in rows]
    if hits or embedder is None:
        return hits
    search = vector_search or store.vector_search
    vec = embedder.embed([q])[0]
    scored = search("Entity", vec, int(limit))
    if not scored:
        return []
    info = {r["id"]: r for r in reads.entity_summaries(store, [i for i, _ in scored])}
    out = []
    for eid, score in scored:
        r = info.get(eid)
        if r is not None:
            out.append(EntityHit(eid, r["name"] or eid, r["type"] or "", int(r["n"] or 0), "vector", float(score)))
    return out


# --- neighbourhood ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Neighbourhood:
    centre: str
    graph: CappedGraph
    hops: int
    truncated: bool  # a hop hit MAX_ROWS_PER_HOP: the total is a lower bound
    names: dict[str, str] = field(default_factory=dict)  # shown node id -> entity name

    def caption(self) -> str:
        total = f"at least {self.graph.total_nodes}" if self.truncated else str(self.graph.total_nodes)
        return f"showing {self.graph.shown_nodes} of {total} nodes within {self.hops} hop(s)"


def neighbourhood(store: GraphStore, entity_id: str, *, hops: int = 1, cap: int = 50) -> Neighbourhood:
    """The entity, its RELATED neighbours up to ``hops`` (1 or 2) away, and the relations among
    them. Nodes are ranked centre first, then by hop distance, then by how connected they are in
    this neighbourhood, and the first ``cap`` are kept; the caption says how many there were."""
    if hops not in (1, 2):
        raise KgvizError(f"hops must be 1 or 2 (got {hops})")
    distance: dict[str, int] = {entity_id: 0}
    edges: dict[tuple[str, str, str], str] = {}  # (src, dst, relation) -> triple id
    frontier = [entity_id]
    truncated = False
    for hop in range(1, hops + 1):
        rows = memory_explore.related_at(store, frontier, MAX_ROWS_PER_HOP)
        truncated = truncated or len(rows) >= MAX_ROWS_PER_HOP
        nxt: list[str] = []
        for r in rows:
            edges.setdefault((r["src"], r["dst"], r["rel"] or ""), r["tid"] or "")
            for nid in (r["src"], r["dst"]):
                if nid not in distance:
                    distance[nid] = hop
                    nxt.append(nid)
        frontier = nxt
        if not frontier:
            break
    # edges found in the last hop may link two nodes both at the last hop; keep only known ends
    degree: dict[str, int] = defaultdict(int)
    for (s, d, _rel) in edges:
        degree[s] += 1
        degree[d] += 1
    order = sorted(distance, key=lambda n: (distance[n], -degree[n], n))
    info: dict[str, Mapping[str, Any]] = {r["id"]: r for r in memory_explore.entity_infos(store, order[:cap])} if order else {}
    nodes = [_entity_node(nid, info.get(nid), distance[nid], nid == entity_id) for nid in order]
    merged: dict[tuple[str, str], list[str]] = defaultdict(list)
    for (s, d, rel) in edges:
        if rel not in merged[(s, d)]:
            merged[(s, d)].append(rel)
    viz_edges = [VizEdge(s, d, label=" / ".join(rels[:2]) + (" …" if len(rels) > 2 else ""),
                         title="\n".join(rels)) for (s, d), rels in merged.items()]
    capped = cap_graph(nodes, viz_edges, cap)
    names = {n.id: (info.get(n.id) or {}).get("name") or n.id for n in capped.nodes}
    return Neighbourhood(entity_id, capped, hops, truncated, names)


def _entity_node(nid: str, row: Mapping[str, Any] | None, dist: int, is_centre: bool) -> VizNode:
    row = row or {}
    name = row.get("name") or nid
    lines = [name]
    if row.get("type"):
        lines.append(f"type: {row['type']}")
    if row.get("n") is not None:
        lines.append(f"mentions: {row['n']}")
    if row.get("origin") and row.get("origin") != "corpus":
        lines.append(f"origin: {row['origin']}")
    if row.get("description"):
        lines.append(str(row["description"])[:400])
    lines.append(f"hop: {dist}")
    return VizNode(nid, name, kind="Entity", title="\n".join(lines),
                   role="seed" if is_centre else None, size=26 if is_centre else None)


# --- details -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkDetail:
    id: str
    doc_title: str
    text: str
    extraction: ExtractionRecordRow | None  # the Extraction row (raw output, mode, status ...)


@dataclass(frozen=True)
class EntityDetails:
    entity: EntityDetailRow
    triples: list[EntityTripleRow]
    chunks: list[ChunkDetail]


def entity_details(store: GraphStore, entity_id: str, *, max_triples: int = 200, max_chunks: int = 20) -> EntityDetails:
    """The entity row, the triples it takes part in (with their provenance sentence), and the
    chunks they came from (text plus the raw extraction output for that chunk)."""
    row = reads.entity(store, entity_id)
    if row is None:
        raise KgvizError(f"no entity with id {entity_id!r} in this workspace",
                         hint="Search again: the workspace may have been rebuilt.")
    triples = memory_explore.triples_of_entity(store, entity_id, max_triples)
    chunk_ids = list(dict.fromkeys(c for t in triples if (c := t["chunk_id"])))
    if len(chunk_ids) < max_chunks:
        for cid in reads.chunks_mentioning_entity(store, entity_id, max_chunks):
            if cid not in chunk_ids:
                chunk_ids.append(cid)
    chunk_ids = chunk_ids[:max_chunks]
    chunks: list[ChunkDetail] = []
    if chunk_ids:
        texts = {r["id"]: r for r in memory_explore.chunks_with_documents(store, chunk_ids)}
        extractions = {r["chunk_id"]: r for r in memory_explore.extraction_records(store, chunk_ids)}
        for cid in chunk_ids:
            r = texts.get(cid)
            if r is None:
                continue
            chunks.append(ChunkDetail(cid, r.get("title") or r.get("doc_id") or "", r.get("text") or "",
                                      extractions.get(cid)))
    return EntityDetails(row, triples, chunks)


def degrees(store: GraphStore) -> list[int]:
    """Number of RELATED edges (either direction) per entity, isolated entities included."""
    return reads.related_degrees(store)
