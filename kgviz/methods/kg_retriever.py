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
from typing import Any, ClassVar, Literal, get_args

import numpy as np

from kgviz.errors import MethodError
from kgviz.facts.triples import SENTENCE_KIND, stated_fact
from kgviz.graph import reads
from kgviz.graph.arrow import vectors_to_numpy
from kgviz.graph.protocol import GraphStore
from kgviz.methods import deciding
from kgviz.methods.base import (ContextItem, EdgeRef, MethodContext, NodeRef, RetrievedContext, Tracer, check_params, param,
                                register)
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
    name: ClassVar[str] = "kg-retriever"
    title: ClassVar[str] = "KG-Retriever (hierarchical index graph)"
    paper: ClassVar[str] = "002"
    Params: ClassVar[type] = KGRetrieverParams
    presets: ClassVar[dict[str, Any]] = PRESETS
    budget_param: ClassVar[str | None] = None  # stops at T items (§3.2.2); the answer step caps at B
    no_context: ClassVar[bool] = False

    def retrieve(self, question: str, ctx: MethodContext, params: KGRetrieverParams, tracer: Tracer) -> RetrievedContext:
        p = params
        store = ctx.store
        qv = unit(np.asarray(ctx.embedder.embed([question])[0], dtype=np.float32))
        hits = store.vector_search("Document", qv, p.top_n + NEAR_MISSES)
        if not hits:
            raise MethodError("the graph has no documents with embeddings", hint="build the index first")
        seeds, misses = hits[: p.top_n], hits[p.top_n :]
        titles: dict[str, str] = {}
        self._titles(store, [d for d, _ in hits], titles)
        tracer.step("seed", f"Top-{p.top_n} documents", "documents most similar to the question (cosine)",
                    nodes=[NodeRef(d, "Document", "chosen", titles.get(d, d), s) for d, s in seeds]
                    + [NodeRef(d, "Document", "rejected", titles.get(d, d), s) for d, s in misses],
                    scores={d: s for d, s in hits})

        weights, edges, hop_of, over_k, doc_scale = self._collaborate(store, [d for d, _ in seeds], p)
        self._titles(store, list(weights) + over_k, titles)
        ours = [] if p.strategy == "one-hop" else [
            f"the top-{p.top_n} documents weigh w = 1 (the paper gives the {p.strategy} w for neighbours only)"]
        if p.strategy != "one-hop" and p.lam_mode == "relative":
            ours.append("relative λ: document cosines divided by the best first-hop neighbour's (lam_mode='relative')")
        tracer.step("expand", f"Document layer: {p.strategy} collaboration",
                    self._expand_detail(p, weights, len(seeds), doc_scale),
                    nodes=[NodeRef(d, "Document", "seed" if hop_of[d] == 0 else "chosen", titles.get(d, d), w)
                           for d, w in weights.items()]
                    + [NodeRef(d, "Document", "rejected", titles.get(d, d)) for d in over_k],
                    edges=edges, scores=dict(weights),
                    data={"hop": hop_of, "strategy": p.strategy, "lam_mode": p.lam_mode, "doc_cosine_scale": doc_scale},
                    ours="; ".join(ours))

        ent = self._score_entities(store, qv, weights, hop_of, p, tracer)
        if not ent["kept"]:
            tracer.step("select", "Top triples", "no entity passed the λ filter, so no triples are retrieved")
            tracer.step("context", "0 triples", "empty context: the answer step will say so")
            return RetrievedContext(notes={"kg-retriever": "no entity passed the λ filter"})
        return self._select_triples(store, qv, list(weights), ent, p, tracer)

    # -- document layer ----------------------------------------------------------------------
    def _collaborate(self, store: GraphStore, seeds: list[str], p: KGRetrieverParams
                     ) -> tuple[dict[str, float], list[EdgeRef], dict[str, int], list[str], float]:
        # the top-N documents themselves count fully (w = 1): the paper sets w = 1 in one-hop and gives
        # the attentive w for neighbours only, so under attentive / multi-hop this is ours (traced)
        weights = {d: 1.0 for d in seeds}
        hop_of = {d: 0 for d in seeds}
        edges: list[EdgeRef] = []
        over_k: list[str] = []
        frontier = list(seeds)
        one_hop = p.strategy == "one-hop"
        scale = 1.0  # relative λ: the first hop's best followed document cosine (set below)
        for hop in range(1, (p.hops if p.strategy == "multi-hop" else 1) + 1):
            if not frontier:
                break
            by_src: dict[str, list[tuple[str, float, float]]] = {}  # src -> (dst, edge weight, doc cosine)
            out_edges: list[tuple[str, str, float | None, float]]  # (src, dst, edge weight, doc cosine)
            if one_hop:
                out_edges = [(r["src"], r["dst"], r["weight"], 1.0) for r in reads.similar_documents(store, frontier)]
            else:
                out_edges = [(r["src"], r["dst"], r["weight"],
                              cosine_unit(r["src_emb"], r["emb"]) if r["emb"] is not None else 0.0)
                             for r in _rows_with_vectors(store, reads.similar_documents(store, frontier, vectors=True))]
            for src, dst, weight, doc_cos in out_edges:
                by_src.setdefault(src, []).append((dst, float(weight or 0.0), doc_cos))
            before = dict(weights)  # weights of this hop's sources, unaffected by this hop's updates
            nxt: list[str] = []
            ranked_of = {src: sorted(by_src.get(src, []), key=lambda x: (-x[1], x[0])) for src in frontier}
            if hop == 1 and not one_hop and p.lam_mode == "relative":
                followed = [c for src in frontier for _, _, c in ranked_of[src][: p.k_neighbours]]
                scale = max(followed, default=0.0)
                scale = scale if scale > 0.0 else 1.0
            for src in frontier:
                for rank, (dst, edge_w, doc_cos) in enumerate(ranked_of[src]):
                    if rank >= p.k_neighbours:
                        edges.append(EdgeRef(src, dst, "SIMILAR_DOC", "rejected", edge_w))
                        if dst not in weights and dst not in over_k:
                            over_k.append(dst)
                        continue
                    w = 1.0 if one_hop else before[src] * min(1.0, doc_cos / scale)
                    edges.append(EdgeRef(src, dst, "SIMILAR_DOC", "chosen", w))
                    if dst not in weights:
                        nxt.append(dst)
                        hop_of[dst] = hop
                    if w > weights.get(dst, float("-inf")):
                        weights[dst] = w
            frontier = nxt
        over_k = [d for d in over_k if d not in weights]
        return weights, edges, hop_of, over_k, scale

    @staticmethod
    def _expand_detail(p: KGRetrieverParams, weights: dict[str, float], n_seeds: int, doc_scale: float) -> str:
        rule = {"one-hop": "w = 1 for every neighbour",
                "attentive": "w = cosine(document, neighbour)",
                "multi-hop": f"{p.hops} hops, w = product of the cosines along the path"}[p.strategy]
        if p.strategy != "one-hop" and p.lam_mode == "relative":
            rule += (f", each cosine divided by {doc_scale:.3f} (the best first-hop neighbour's: relative λ, ours) "
                     "and capped at 1")
        return f"{len(weights) - n_seeds} neighbour documents (up to K={p.k_neighbours} per document); {rule}"

    # -- entity layer ------------------------------------------------------------------------
    def _score_entities(self, store: GraphStore, qv: np.ndarray, weights: dict[str, float], hop_of: dict[str, int],
                        p: KGRetrieverParams, tracer: Tracer) -> dict[str, Any]:
        rows = _rows_with_vectors(store, reads.document_entities(store, list(weights)))
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
        over_t: list[str] = []
        kept = passing
        if p.t_caps == "entities":
            kept, over_t = passing[: p.max_t], passing[p.max_t :]
        hops = self._per_hop(order, hop, score, set(passing), hop_of, p)
        role = {**{e: "chosen" for e in kept}, **{e: "rejected" for e in below + over_t}}
        nodes = [NodeRef(e, "Entity", role[e], names[e], score[e],  # type: ignore[arg-type]
                         {"w": w[e], "cosine": cos[e]}, rank) for rank, e in enumerate(order, 1)]
        deciding.set_reasons(nodes, {**{e: f"w·cos ≤ λ {p.lam:g}" for e in below},
                                     **{e: f"over T={p.max_t} entities" for e in over_t}})
        nodes += [NodeRef(c, "Chunk", "candidate", c) for c in sorted(chunk_doc)]
        edges = [EdgeRef(d, c, "HAS_CHUNK", "candidate") for c, d in sorted(chunk_doc.items())]
        edges += [EdgeRef(c, e, "MENTIONS", role[e])  # type: ignore[arg-type]
                  for e in order for c in sorted(mentions[e])]
        cap = f"; top T={p.max_t} entities kept, {len(over_t)} over T" if p.t_caps == "entities" else ""
        scale = (f" (relative λ, ours: cosines divided by the best entity's, {cos_scale:.3f})"
                 if p.lam_mode == "relative" else "")
        blocked = [h for h in hops if h["blocked"]]
        tracer.step("score", f"Entity filter w·cos > λ={p.lam:g}",
                    f"{len(order)} entities in {len(weights)} candidate documents: {len(passing)} above λ, "
                    f"{len(below)} at or below{cap}{scale}"
                    + "".join(f"; {h['message']}" for h in blocked),
                    nodes=nodes, edges=edges, scores=dict(score),
                    data={"lambda": p.lam, "lam_mode": p.lam_mode, "cosine_scale": cos_scale, "w": w, "cosine": cos,
                          "hop": hop, "hops": hops, "below_lambda": below, "over_t": over_t,
                          "score_name": "w · cosine" + (f" / {cos_scale:.3f} (the best entity's cosine: relative λ)"
                                                       if cos_scale != 1.0 else "") + " (Eq. 2)"},
                    ours="relative λ: entity cosines divided by the best candidate's before Eq. 2 (lam_mode='relative'; "
                         "the paper's λ is for RoBERTa cosines)" if p.lam_mode == "relative" else "")
        return {"kept": kept, "score": score, "names": names}

    @staticmethod
    def _per_hop(order: list[str], hop: dict[str, int], score: dict[str, float], passing: set[str],
                 hop_of: dict[str, int], p: KGRetrieverParams) -> list[dict[str, Any]]:
        """Per hop of the document layer (0 = the top-N documents): its entities, how many pass λ,
        the best score among them, and whether none can pass (so a hop that only costs is named)."""
        out = []
        for h in sorted(set(hop_of.values())):
            mine = [e for e in order if hop[e] == h]
            best = max((score[e] for e in mine), default=None)
            where = "the top-N documents" if h == 0 else f"hop {h}"
            blocked = best is not None and best <= p.lam
            if best is None:
                message = f"{where}: no entity in its documents"
            elif blocked:
                message = f"{where}: best score {best:.3g} ≤ λ {p.lam:g} — nothing can pass"
            else:
                message = f"{where}: best score {best:.3g}, {sum(e in passing for e in mine)} of {len(mine)} pass λ {p.lam:g}"
            out.append({"hop": h, "entities": len(mine), "passed": sum(e in passing for e in mine),
                        "best": best, "blocked": blocked, "message": message})
        return out

    def _select_triples(self, store: GraphStore, qv: np.ndarray, docs: list[str], ent: dict[str, Any],
                        p: KGRetrieverParams, tracer: Tracer) -> RetrievedContext:
        kept: list[str] = ent["kept"]
        kept_set = set(kept)
        score: dict[str, float] = ent["score"]
        layer = _rows_with_vectors(store, reads.document_triples(store, docs))
        rows = {r["id"]: r for r in layer if r["subject_id"] in kept_set or r["object_id"] in kept_set}
        ends = {t: [x for x in (r["subject_id"], r["object_id"]) if x in kept_set] for t, r in rows.items()}
        t_score = {t: max(score[e] for e in ends[t]) for t in rows}
        t_cos = {t: cosine_unit(r["emb"], qv) for t, r in rows.items()}
        order = sorted(rows, key=lambda t: (-t_score[t], -t_cos[t], t))
        chosen, rejected = (order[: p.max_t], order[p.max_t :]) if p.t_caps == "triples" else (order, [])
        role = {**{t: "chosen" for t in chosen}, **{t: "rejected" for t in rejected}}

        def text(t: str) -> str:
            r = rows[t]
            return r["text"] or f"{r['subject']} {r['relation']} {r['object']}"

        def stated(t: str) -> str:
            return stated_fact(text(t), rows[t].get("kind"), rows[t].get("sentence"))

        edges = []
        for t in order:
            r = rows[t]
            for rel, e in (("SUBJ", r["subject_id"]), ("OBJ", r["object_id"])):
                if e in kept_set:
                    edges.append(EdgeRef(t, e, rel, role[t]))  # type: ignore[arg-type]
        cap = f"top T={p.max_t} triples" if p.t_caps == "triples" else "all triples of the top-T entities"
        nodes = [NodeRef(t, "Triple", role[t], text(t), t_score[t], rank=rank)  # type: ignore[arg-type]
                 for rank, t in enumerate(order, 1)]
        deciding.set_reasons(nodes, {t: f"over T={p.max_t}: #{rank} of {len(order)} triples"
                                     for rank, t in enumerate(order, 1) if t in rejected})
        tracer.step("select", f"{len(chosen)} triples selected",
                    f"{len(order)} triples of the kept entities in the candidate documents; {cap}, ranked by "
                    f"their best entity score (ties: cosine to the question)",
                    nodes=nodes + [NodeRef(e, "Entity", "chosen", ent["names"].get(e, e), score[e]) for e in kept],
                    edges=edges, scores=dict(t_score),
                    data={"triple_cosine": t_cos, "over_t": rejected,
                          "score_name": "a triple's best kept-entity score (w·cos); entities: their own; ties "
                                        "broken by the triple's cosine to the question"})
        items = [ContextItem(t, "triple", stated(t), t_score[t], count_tokens(stated(t)), source=rows[t]["chunk_id"])
                 for t in chosen]
        n_sent = sum(rows[t].get("kind") == SENTENCE_KIND for t in chosen)
        tracer.step("context", f"{len(items)} triples as context",
                    "the selected triples, best first (the paper gives the LLM triples only)"
                    + (f"; {n_sent} sentence fact(s) with the sentence each stands for" if n_sent else ""),
                    nodes=[NodeRef(i.id, "Triple", "chosen", text(i.id), i.score) for i in items],
                    data={"n_tokens": sum(i.n_tokens for i in items)})
        used_entities = sorted({e for t in chosen for e in ends[t]})
        return RetrievedContext(items=items, node_ids=[i.id for i in items] + used_entities)

    @staticmethod
    def _titles(store: GraphStore, ids: list[str], into: dict[str, str]) -> None:
        missing = [d for d in dict.fromkeys(ids) if d not in into]
        if missing:
            into.update({i: t or i for i, t in reads.document_titles(store, missing).items()})
