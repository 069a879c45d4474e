"""The words of KG-Retriever's retrieval: each step record of ``kgviz.methods.kg_retriever_records``
becomes the ``TraceStep`` the player shows (title, detail, nodes with their deciding scores, edges,
the figures the viewer reads), with the record itself in ``TraceStep.record``.

The algorithm (``kgviz.methods.kg_retriever``) decides; nothing here changes what was retrieved.
"""
from __future__ import annotations

from typing import Any, Mapping

from kgviz.methods import deciding
from kgviz.methods.base import EdgeRef, NodeRef, Role, Tracer, TraceStep, record_data
from kgviz.methods.kg_retriever_records import (
    Collaboration, EntityFilter, HopReach, TopDocuments, TripleContext, TripleSelection, 
)

_RULES = {"one-hop": "w = 1 for every neighbour",
          "attentive": "w = cosine(document, neighbour)",
          "multi-hop": "{hops} hops, w = product of the cosines along the path"}


def _roles(chosen: tuple[str, ...], rejected: tuple[str, ...]) -> dict[str, Role]:
    out: dict[str, Role] = {}
    for x in chosen:
        out[x] = "chosen"
    for x in rejected:
        out[x] = "rejected"
    return out


def narrate_top(tracer: Tracer, top: TopDocuments, titles: Mapping[str, str]) -> TraceStep:
    return tracer.step(
        "seed", f"Top-{top.top_n} documents", "documents most similar to the question (cosine)",
        nodes=[NodeRef(d.id, "Document", "chosen", titles.get(d.id, d.id), d.cosine) for d in top.seeds]
        + [NodeRef(d.id, "Document", "rejected", titles.get(d.id, d.id), d.cosine) for d in top.near_misses],
        scores={d.id: d.cosine for d in top.seeds + top.near_misses},
        record=record_data(top))


def narrate_collaboration(tracer: Tracer, top: TopDocuments, co: Collaboration,
                          titles: Mapping[str, str]) -> TraceStep:
    relative = co.strategy != "one-hop" and co.lam_mode == "relative"
    ours = [] if co.strategy == "one-hop" else [
        f"the top-{top.top_n} documents weigh w = 1 (the paper gives the {co.strategy} w for neighbours only)"]
    if relative:
        ours.append("relative λ: document cosines divided by the best first-hop neighbour's (lam_mode='relative')")
    rule = _RULES[co.strategy].format(hops=co.hops)
    if relative:
        rule += (f", each cosine divided by {co.doc_scale:.3f} (the best first-hop neighbour's: relative λ, ours) "
                 "and capped at 1")
    return tracer.step(
        "expand", f"Document layer: {co.strategy} collaboration",
        f"{len(co.weights) - len(top.seeds)} neighbour documents (up to K={co.k_neighbours} per document); {rule}",
        nodes=[NodeRef(d, "Document", "seed" if co.hop_of[d] == 0 else "chosen", titles.get(d, d), w)
               for d, w in co.weights.items()]
        + [NodeRef(d, "Document", "rejected", titles.get(d, d)) for d in co.over_k],
        edges=[EdgeRef(x.source, x.target, "SIMILAR_DOC", "rejected", x.edge_weight) if x.w is None
               else EdgeRef(x.source, x.target, "SIMILAR_DOC", "chosen", x.w) for x in co.links],
        scores=dict(co.weights),
        data={"hop": dict(co.hop_of), "strategy": co.strategy, "lam_mode": co.lam_mode,
              "doc_cosine_scale": co.doc_scale},
        ours="; ".join(ours),
        record=record_data(co))


def hop_message(h: HopReach, lam: float) -> str:
    """"hop 2: best score 0.008 ≤ λ 0.1 — nothing can pass": what one hop of the document layer
    brought to the entity filter."""
    where = "the top-N documents" if h.hop == 0 else f"hop {h.hop}"
    if h.best is None:
        return f"{where}: no entity in its documents"
    if h.blocked:
        return f"{where}: best score {h.best:.3g} ≤ λ {lam:g} — nothing can pass"
    return f"{where}: best score {h.best:.3g}, {h.passed} of {h.entities} pass λ {lam:g}"


def narrate_filter(tracer: Tracer, f: EntityFilter) -> TraceStep:
    role = _roles(f.kept, f.below + f.over_t)
    nodes = [NodeRef(e.id, "Entity", role[e.id], e.name, e.score, {"w": e.w, "cosine": e.cosine}, rank)
             for rank, e in enumerate(f.ranked, 1)]
    deciding.set_reasons(nodes, {**{e: f"w·cos ≤ λ {f.lam:g}" for e in f.below},
                                 **{e: f"over T={f.max_t} entities" for e in f.over_t}})
    nodes += [NodeRef(c, "Chunk", "candidate", c) for c in sorted(f.chunk_doc)]
    edges = [EdgeRef(d, c, "HAS_CHUNK", "candidate") for c, d in sorted(f.chunk_doc.items())]
    edges += [EdgeRef(c, e.id, "MENTIONS", role[e.id]) for e in f.ranked for c in f.mentions[e.id]]
    relative = f.lam_mode == "relative"
    cap = f"; top T={f.max_t} entities kept, {len(f.over_t)} over T" if f.t_caps == "entities" else ""
    scale = f" (relative λ, ours: cosines divided by the best entity's, {f.cos_scale:.3f})" if relative else ""
    hops: list[dict[str, Any]] = [{"hop": h.hop, "entities": h.entities, "passed": h.passed, "best": h.best,
                                   "blocked": h.blocked, "message": hop_message(h, f.lam)} for h in f.hops]
    return tracer.step(
        "score", f"Entity filter w·cos > λ={f.lam:g}",
        f"{len(f.ranked)} entities in {f.n_documents} candidate documents: {f.n_passing} above λ, "
        f"{len(f.below)} at or below{cap}{scale}" + "".join(f"; {h['message']}" for h in hops if h["blocked"]),
        nodes=nodes, edges=edges, scores={e.id: e.score for e in f.ranked},
        data={"lambda": f.lam, "lam_mode": f.lam_mode, "cosine_scale": f.cos_scale,
              "w": {e.id: e.w for e in f.ranked}, "cosine": {e.id: e.cosine for e in f.ranked},
              "hop": {e.id: e.hop for e in f.ranked}, "hops": hops, "below_lambda": list(f.below),
              "over_t": list(f.over_t),
              "score_name": "w · cosine" + (f" / {f.cos_scale:.3f} (the best entity's cosine: relative λ)"
                                           if f.cos_scale != 1.0 else "") + " (Eq. 2)"},
        ours="relative λ: entity cosines divided by the best candidate's before Eq. 2 (lam_mode='relative'; "
             "the paper's λ is for RoBERTa cosines)" if relative else "",
        record=record_data(f))


def narrate_nothing_passed(tracer: Tracer, sel: TripleSelection, context: TripleContext) -> None:
    """The select and context steps of a run whose entity filter kept no entity."""
    tracer.step("select", "Top triples", "no entity passed the λ filter, so no triples are retrieved",
                record=record_data(sel))
    tracer.step("context", "0 triples", "empty context: the answer step will say so", record=record_data(context))


def narrate_selection(tracer: Tracer, sel: TripleSelection, f: EntityFilter) -> TraceStep:
    role = _roles(sel.chosen, sel.over_t)
    kept = set(f.kept)
    edges = [EdgeRef(t.id, e, rel, role[t.id]) for t in sel.ranked
             for rel, e in (("SUBJ", t.subject_id), ("OBJ", t.object_id)) if e in kept]
    nodes = [NodeRef(t.id, "Triple", role[t.id], t.text, t.score, rank=rank) for rank, t in enumerate(sel.ranked, 1)]
    n = len(sel.ranked)
    over = set(sel.over_t)
    deciding.set_reasons(nodes, {t.id: f"over T={sel.max_t}: #{rank} of {n} triples"
                                 for rank, t in enumerate(sel.ranked, 1) if t.id in over})
    entity = {e.id: e for e in f.ranked}
    cap = f"top T={sel.max_t} triples" if sel.t_caps == "triples" else "all triples of the top-T entities"
    return tracer.step(
        "select", f"{len(sel.chosen)} triples selected",
        f"{n} triples of the kept entities in the candidate documents; {cap}, ranked by "
        f"their best entity score (ties: cosine to the question)",
        nodes=nodes + [NodeRef(e, "Entity", "chosen", entity[e].name, entity[e].score) for e in f.kept],
        edges=edges, scores={t.id: t.score for t in sel.ranked},
        data={"triple_cosine": {t.id: t.cosine for t in sel.ranked}, "over_t": list(sel.over_t),
              "score_name": "a triple's best kept-entity score (w·cos); entities: their own; ties "
                            "broken by the triple's cosine to the question"},
        record=record_data(sel))


def narrate_context(tracer: Tracer, context: TripleContext, sel: TripleSelection) -> TraceStep:
    ranked = {t.id: t for t in sel.ranked}
    n_sent = context.sentence_facts
    return tracer.step(
        "context", f"{len(context.items)} triples as context",
        "the selected triples, best first (the paper gives the LLM triples only)"
        + (f"; {n_sent} sentence fact(s) with the sentence each stands for" if n_sent else ""),
        nodes=[NodeRef(t, "Triple", "chosen", ranked[t].text, ranked[t].score) for t in context.items],
        data={"n_tokens": context.tokens},
        record=record_data(context))
