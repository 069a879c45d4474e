"""KG-Retriever (paper 002): retrieval on a hierarchical index graph (HIG) — a document layer
(SIMILAR_DOC edges to each document's K most similar documents, §3.2.1 Eq. 1) over an entity KG
layer (the triples extracted from each document).

Retrieval (§3.2.2), as traced here:
1. seed    — the top-N documents by cosine similarity to the query (Document.emb);
2. expand  — document-layer collaboration over SIMILAR_DOC: one-hop (w = 1), attentive
             (w = cosine of the two documents) or multi-hop (2 hops, weights multiplied);
3. score   — the entities of the candidate documents (HAS_CHUNK -> MENTIONS) kept when
             w·cos(entity, query) > λ (Eq. 2);
4. select  — the triples of the kept entities inside the candidate documents' KG layer, at most T;
5. context — those triples. The paper feeds only the triples and the query to the LLM (§3.1,
             §3.2.2 last paragraph), so no document text is added.

Each line is a function returning its step record (kgviz.methods.kg_retriever_records: the
numbers that decided, naming the line); kgviz.methods.kg_retriever_narrator turns the records
into the steps the player shows.

Choices the paper leaves open (ours, labelled): in the attentive and multi-hop strategies the top-N
documents themselves weigh w = 1 (§3.2.2 defines w for one-hop, and for neighbours as the documents'
cosine; the trace's expand step says so); an entity mentioned by several candidate documents
takes the largest w; triples are ranked by the best score of their kept end entities, ties broken
by cos(triple, query); a document reached along several paths keeps its largest weight.

λ and the embedder's scale (ours). λ = 0.1 (§4.1) is set for RoBERTa cosines, which crowd near 1:
there a neighbour document weighs about 0.9 and an entity matches the query at about 0.8, so
w·cos clears 0.1 for nearly every candidate and λ only drops the weakly related ones. With the
hashing embedder cosines are far smaller (documents ~0.3, entities ~0.1-0.5 on the sample graph),
so a two-hop weight (~0.1) times an entity cosine never passes λ = 0.1 (the best second-hop score
there is 0.004-0.015 for every sample question) and the multi-hop strategy silently equals
attentive. Other embedders have their own scales: with all-MiniLM-L6-v2 on the sample graph λ = 0.1
blocks the second hop for 4 of the 11 questions that reach one, the relative reading for none.
``lam_mode='relative'`` (the default) reads both factors on the embedder's own scale before Eq. 2:
each document-layer cosine is divided by the largest cosine among the first hop's followed edges
(the closest neighbour weighs 1, as under RoBERTa) and capped at 1, and each entity cosine is
divided by the largest entity cosine among the candidates (the best match scores 1); λ then keeps
its paper value as a share of the best score. ``lam_mode='absolute'`` (preset 'paper') is Eq. 2 on
raw cosines. Either way the score step says, per hop of the document layer, the best score its
entities reach, and when that is at or below λ ("hop 2: best score 0.008 ≤ λ 0.1 — nothing can
pass").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Mapping, get_args

import numpy as np

from kgviz.errors import MethodError
from kgviz.facts.triples import SENTENCE_KIND, stated_fact
from kgviz.graph import memory_reads
from kgviz.graph.arrow import vectors_to_numpy
from kgviz.graph.protocol import GraphStore
from kgviz.methods.base import ContextItem, MethodContext, RetrievedContext, Tracer, check_params, param, register
from kgviz.methods.kg_retriever_narrator import (
    narrate_collaboration, narrate_context, narrate_filter, narrate_nothing_passed, narrate_selection, narrate_top,
)
from kgviz.methods.kg_retriever_records import (
    Collaboration, DocumentLink, EntityFilter, EntityScore, HopReach, ScoredDocument, TopDocuments, TripleContext,
    TripleScore, TripleSelection,
)
from kgviz.text import count_tokens
from kgviz.vectors import cosine_unit, unit, unit_rows

Strategy = Literal["one-hop", "attentive", "multi-hop"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)
LamMode = Literal["relative", "absolute"]
NEAR_MISSES = 3  # ours: documents ranked just below N, shown as rejected so a miss can be diagnosed


@dataclass(frozen=True)
class KGRetrieverParams:
    top_n: int = param(3, label="Documents retrieved (N)", min=1,
                       doc="N: documents retrieved by similarity to the query (§3.2.2 Document-level "
                           "Retrieval; §4.1 gives N=3 for MuSiQue, 2Wiki and both CRUD-QA sets — the HotpotQA "
                           "value is cut from our copy of the paper, which keeps only its T=20, λ=0.1)")
    k_neighbours: int = param(3, label="Document-layer neighbours (K)", min=0,
                              doc="K: document-layer neighbours used per document, most similar first "
                                  "(§3.2.1 Eq. 1; §4.1 gives K=3 for MuSiQue and 2Wiki — the HotpotQA value "
                                  "is cut from our copy of the paper). At most the K the index was built with")
    strategy: Strategy = param("one-hop", label="Document-layer strategy",
                               doc="document-layer collaboration (§3.2.2): 'one-hop' (w = 1), 'attentive' "
                                   "(w = cosine of the two documents) or 'multi-hop' (weights multiplied "
                                   "along the path)")
    hops: int = param(2, label="Hops (multi-hop strategy)", min=1,
                      doc="hops of the multi-hop strategy (§4.2 (4) reports 2-hop collaboration)")
    lam: float = param(0.1, label="Entity filter λ",
                       doc="λ: an entity is kept when w·cos(entity, query) > λ (§3.2.2 Eq. 2; λ=0.1 for "
                           "HotpotQA, §4.1); read on the scale lam_mode names")
    lam_mode: LamMode = param("relative", label="Scale of λ (relative: the embedder's own)",
                              doc="'absolute': Eq. 2 on raw cosines (the paper, calibrated for RoBERTa, whose "
                                  "cosines crowd near 1; preset 'paper'). 'relative' (ours, default): document "
                                  "cosines divided by the best first-hop neighbour's, entity cosines by the best "
                                  "candidate's, so λ is a share of the best score on any embedder's scale")
    max_t: int = param(20, label="Items retrieved (T)", min=1,
                       doc="T: at most T items retrieved (§3.2.2; T=20 for HotpotQA, §4.1)")
    t_caps: Literal["triples", "entities"] = param("triples", label="What T counts",
                                                   doc="what T caps: 'triples' (§3.2.2 'maximum of retrieved triples') or "
                                                       "'entities' (§4.1 'max retrieved entity count', as in the public code: "
                                                       "the top-T entities and all their triples)")

    def __post_init__(self) -> None:
        check_params(self, "kg-retriever")


PRESETS = {
    "paper": KGRetrieverParams(lam_mode="absolute"),
    # BAI-LAB/KG-Retriever run_demo_EX_hotpop_v0.py: 3 documents, neighbours = top-3 most similar
    # documents (the document itself among them, so 2 others), top-20 entities, threshold 0
    "code": KGRetrieverParams(top_n=3, k_neighbours=2, lam=0.0, lam_mode="absolute", max_t=20, t_caps="entities"),
}


def _vectors(column: Any, dim: int) -> list[np.ndarray | None]:
    """Row vectors (L2-normalised) of a FLOAT[dim] arrow column; None where the row has none."""
    array = column.combine_chunks()
    if array.null_count == 0:
        return list(unit_rows(vectors_to_numpy(array, dim)))
    return [None if v is None else unit(np.asarray(v, dtype=np.float32)) for v in array.to_pylist()]


def _rows_with_vectors(store: GraphStore, table: Any) -> list[dict[str, Any]]:
    """Rows of an arrow table as dicts; every column ending in "emb" becomes a normalised numpy
    vector (or None)."""
    cols = {name: (_vectors(table.column(name), int(store.dim)) if name.endswith("emb")
                   else table.column(name).to_pylist()) for name in table.column_names}
    return [dict(zip(cols, values)) for values in zip(*cols.values())]


@register
class KGRetriever:
    """§3.2.2 as its five lines, each returning its step record (kgviz.methods.kg_retriever_records);
    kgviz.methods.kg_retriever_narrator writes the steps."""

    name: ClassVar[str] = "kg-retriever"
    title: ClassVar[str] = "KG-Retriever (hierarchical index graph)"
    paper: ClassVar[str] = "002"
    Params: ClassVar[type] = KGRetrieverParams
    presets: ClassVar[dict[str, Any]] = PRESETS
    budget_param: ClassVar[str | None] = None  # stops at T items (§3.2.2); the answer step caps at B
    no_context: ClassVar[bool] = False

    def retrieve(self, question: str, ctx: MethodContext, params: KGRetrieverParams, tracer: Tracer) -> RetrievedContext:
        p, store = params, ctx.store
        qv = unit(np.asarray(ctx.embedder.embed([question])[0], dtype=np.float32))
        top = _top_documents(store, qv, p)
        titles = _titles(store, [d.id for d in top.seeds + top.near_misses], {})
        narrate_top(tracer, top, titles)
        co = _collaborate(store, [d.id for d in top.seeds], p)
        narrate_collaboration(tracer, top, co, _titles(store, list(co.weights) + list(co.over_k), titles))
        entities = _filter_entities(store, qv, co, p)
        narrate_filter(tracer, entities)
        if not entities.kept:
            narrate_nothing_passed(tracer, TripleSelection(p.t_caps, p.max_t, (), (), ()), TripleContext((), 0, 0))
            return RetrievedContext(notes={"kg-retriever": "no entity passed the λ filter"})
        selection, stated, chunk_of = _select_triples(store, qv, list(co.weights), entities, p)
        narrate_selection(tracer, selection, entities)
        score = {t.id: t.score for t in selection.ranked}
        items = [ContextItem(t, "triple", stated[t], score[t], count_tokens(stated[t]), source=chunk_of[t])
                 for t in selection.chosen]
        sentences = {t.id for t in selection.ranked if t.sentence_fact}
        narrate_context(tracer, TripleContext(tuple(selection.chosen), sum(i.n_tokens for i in items),
                                              sum(t in sentences for t in selection.chosen)), selection)
        kept, chosen = set(entities.kept), set(selection.chosen)
        used_entities = sorted({e for t in selection.ranked if t.id in chosen
                                for e in (t.subject_id, t.object_id) if e in kept})
        return RetrievedContext(items=items, node_ids=[i.id for i in items] + used_entities)


# -- document layer (lines 1-2) --------------------------------------------------------------------
def _top_documents(store: GraphStore, qv: np.ndarray, p: KGRetrieverParams) -> TopDocuments:
    """Line 1: the top-N documents by cosine, and the next NEAR_MISSES."""
    hits = store.vector_search("Document", qv, p.top_n + NEAR_MISSES)
    if not hits:
        raise MethodError("the graph has no documents with embeddings", hint="build the index first")
    docs = [ScoredDocument(d, s) for d, s in hits]
    return TopDocuments(p.top_n, tuple(docs[: p.top_n]), tuple(docs[p.top_n :]))


def _neighbours(store: GraphStore, frontier: list[str], one_hop: bool) -> dict[str, list[tuple[str, float, float]]]:
    """Each frontier document's SIMILAR_DOC edges as (target, edge weight, document cosine), by
    edge weight then id; the cosine is only read (and the vectors fetched) off one-hop."""
    out_edges: list[tuple[str, str, float | None, float]]  # (src, dst, edge weight, doc cosine)
    if one_hop:
        out_edges = [(r["src"], r["dst"], r["weight"], 1.0) for r in memory_reads.similar_documents(store, frontier)]
    else:
        out_edges = [(r["src"], r["dst"], r["weight"],
                      cosine_unit(r["src_emb"], r["emb"]) if r["emb"] is not None else 0.0)
                     for r in _rows_with_vectors(store, memory_reads.similar_documents_with_vectors(store, frontier))]
    by_src: dict[str, list[tuple[str, float, float]]] = {}
    for src, dst, weight, doc_cos in out_edges:
        by_src.setdefault(src, []).append((dst, float(weight or 0.0), doc_cos))
    return {src: sorted(by_src.get(src, []), key=lambda x: (-x[1], x[0])) for src in frontier}


def _collaborate(store: GraphStore, seeds: list[str], p: KGRetrieverParams) -> Collaboration:
    """Line 2. The top-N documents themselves count fully (w = 1): the paper sets w = 1 in one-hop
    and gives the attentive w for neighbours only, so under attentive / multi-hop this is ours
    (traced)."""
    weights = {d: 1.0 for d in seeds}
    hop_of = {d: 0 for d in seeds}
    links: list[DocumentLink] = []
    over_k: list[str] = []
    frontier = list(seeds)
    one_hop = p.strategy == "one-hop"
    hops = p.hops if p.strategy == "multi-hop" else 1
    scale = 1.0  # relative λ: the first hop's best followed document cosine (set below)
    for hop in range(1, hops + 1):
        if not frontier:
            break
        ranked_of = _neighbours(store, frontier, one_hop)
        before = dict(weights)  # weights of this hop's sources, unaffected by this hop's updates
        if hop == 1 and not one_hop and p.lam_mode == "relative":
            scale = max((c for src in frontier for _, _, c in ranked_of[src][: p.k_neighbours]), default=0.0)
            scale = scale if scale > 0.0 else 1.0
        nxt: list[str] = []
        for src in frontier:
            for rank, (dst, edge_w, doc_cos) in enumerate(ranked_of[src], 1):
                if rank > p.k_neighbours:
                    links.append(DocumentLink(src, dst, hop, rank, edge_w, doc_cos, before[src], None))
                    if dst not in weights and dst not in over_k:
                        over_k.append(dst)
                    continue
                w = 1.0 if one_hop else before[src] * min(1.0, doc_cos / scale)
                links.append(DocumentLink(src, dst, hop, rank, edge_w, doc_cos, before[src], w))
                if dst not in weights:
                    nxt.append(dst)
                    hop_of[dst] = hop
                if w > weights.get(dst, float("-inf")):
                    weights[dst] = w
        frontier = nxt
    return Collaboration(p.strategy, hops, p.k_neighbours, p.lam_mode, weights, hop_of, tuple(links),
                         tuple(d for d in over_k if d not in weights), scale)


# -- entity layer (lines 3-4) ----------------------------------------------------------------------
def _filter_entities(store: GraphStore, qv: np.ndarray, co: Collaboration, p: KGRetrieverParams) -> EntityFilter:
    """Line 3 (Eq. 2): score every entity of the candidate documents, keep those above λ."""
    weights, hop_of = co.weights, co.hop_of
    rows = _rows_with_vectors(store, memory_reads.document_entities(store, list(weights)))
    w: dict[str, float] = {}
    names: dict[str, str] = {}
    cos: dict[str, float] = {}
    hop: dict[str, int] = {}  # entity -> hop of the document that gives it its weight (the nearest on ties)
    mentions: dict[str, set[str]] = {}  # entity -> chunks mentioning it
    chunk_doc: dict[str, str] = {}
    for r in rows:
        e, dw, dh = r["id"], weights[r["doc"]], hop_of[r["doc"]]
        if dw > w.get(e, float("-inf")) or (dw == w[e] and dh < hop[e]):
            w[e], hop[e] = dw, dh
        names[e] = r["name"]
        cos[e] = cosine_unit(r["emb"], qv)
        mentions.setdefault(e, set()).add(r["chunk"])
        chunk_doc[r["chunk"]] = r["doc"]
    best_cos = max(cos.values(), default=0.0)
    cos_scale = best_cos if p.lam_mode == "relative" and best_cos > 0.0 else 1.0
    score = {e: w[e] * cos[e] / cos_scale for e in w}
    order = sorted(w, key=lambda e: (-score[e], e))
    passing = [e for e in order if score[e] > p.lam]
    below = [e for e in order if score[e] <= p.lam]
    kept, over_t = (passing[: p.max_t], passing[p.max_t :]) if p.t_caps == "entities" else (passing, [])
    return EntityFilter(
        p.lam, p.lam_mode, cos_scale, p.t_caps, p.max_t,
        ranked=tuple(EntityScore(e, names[e], w[e], cos[e], score[e], hop[e]) for e in order),
        kept=tuple(kept), below=tuple(below), over_t=tuple(over_t),
        hops=_per_hop(order, hop, score, set(passing), hop_of, p.lam), n_documents=len(weights),
        mentions={e: tuple(sorted(cs)) for e, cs in mentions.items()}, chunk_doc=chunk_doc)


def _per_hop(order: list[str], hop: dict[str, int], score: dict[str, float], passing: set[str],
             hop_of: Mapping[str, int], lam: float) -> tuple[HopReach, ...]:
    """Per hop of the document layer (0 = the top-N documents): its entities, how many pass λ,
    the best score among them, and whether none can pass (so a hop that only costs is named)."""
    out = []
    for h in sorted(set(hop_of.values())):
        mine = [e for e in order if hop[e] == h]
        best = max((score[e] for e in mine), default=None)
        out.append(HopReach(h, len(mine), sum(e in passing for e in mine), best, best is not None and best <= lam))
    return tuple(out)


def _select_triples(store: GraphStore, qv: np.ndarray, docs: list[str], f: EntityFilter, p: KGRetrieverParams
                    ) -> tuple[TripleSelection, dict[str, str], dict[str, str]]:
    """Line 4: the kept entities' triples in the candidate documents, ranked by their best kept
    end's score (ties: cosine to the question), at most T. Also each triple's stated text and chunk."""
    kept = set(f.kept)
    score = {e.id: e.score for e in f.ranked}
    layer = _rows_with_vectors(store, memory_reads.document_triples(store, docs))
    rows = {r["id"]: r for r in layer if r["subject_id"] in kept or r["object_id"] in kept}
    t_score = {t: max(score[x] for x in (r["subject_id"], r["object_id"]) if x in kept) for t, r in rows.items()}
    t_cos = {t: cosine_unit(r["emb"], qv) for t, r in rows.items()}
    order = sorted(rows, key=lambda t: (-t_score[t], -t_cos[t], t))
    chosen, over_t = (order[: p.max_t], order[p.max_t :]) if p.t_caps == "triples" else (order, [])
    text = {t: r["text"] or f"{r['subject']} {r['relation']} {r['object']}" for t, r in rows.items()}
    ranked = tuple(TripleScore(t, text[t], rows[t]["subject_id"], rows[t]["object_id"], t_score[t], t_cos[t],
                               rows[t].get("kind") == SENTENCE_KIND) for t in order)
    stated = {t: stated_fact(text[t], rows[t].get("kind"), rows[t].get("sentence")) for t in chosen}
    return (TripleSelection(p.t_caps, p.max_t, ranked, tuple(chosen), tuple(over_t)), stated,
            {t: rows[t]["chunk_id"] for t in chosen})


def _titles(store: GraphStore, ids: list[str], into: dict[str, str]) -> dict[str, str]:
    """``into`` with the titles of the documents in ``ids`` it lacks (a document's id where it has none)."""
    missing = [d for d in dict.fromkeys(ids) if d not in into]
    if missing:
        into.update({i: t or i for i, t in memory_reads.document_titles(store, missing).items()})
    return into
