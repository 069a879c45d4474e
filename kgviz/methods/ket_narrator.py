"""The words of KET-RAG's two channels (skeleton and keyword): each step record of ``kgviz.methods.ket_records``
becomes the ``TraceStep`` the player shows (title, detail, nodes with their deciding scores,
edges, the figures the viewer draws), with the record itself in ``TraceStep.record``.

The algorithm (``kgviz.methods.ket_channels``) decides; nothing here changes what was retrieved.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from kgviz.methods import deciding
from kgviz.methods.base import EdgeRef, NodeRef, Tracer, TraceStep, record_data
from kgviz.methods.ket_records import (
    KeywordFill, KeywordPool, KeywordRanking, RankedUnit, SeedKeyword, SkeletonEmpty, SkeletonRelationships,
    SkeletonSeeds, SkeletonTextUnits,
)

SHOWN_REJECTED = 25  # ours: rejected candidates listed per step (the data counts them all)
# ours: seed keywords drawn in the seed step, most similar first. On a small corpus the pool may
# seed every keyword (hundreds): drawing them all hides the graph; data["seeded_total"] counts them
# all, and retrieval uses them all
SHOWN_SEED_KEYWORDS = 25
# data["budget_of"] of the channel's first two steps: their used/budget is the candidate pool
# (2·(1-θ)·λ tokens of sub-chunks gathered to be ranked), not the channel's share of the context
# ((1-θ)·λ, every other channel step): the viewer shows the two as two bars
POOL = "pool"
RRF_K = 60  # ours: the reciprocal-rank-fusion constant of the 'hybrid' match mode (text-rag's default)


@dataclass(frozen=True)
class KeywordVoice:
    """How the channel matched, for the words: ``lexical`` (BM25 over the question's keywords),
    ``mode`` (embedding | lexical | hybrid), the ``keyword_match`` setting, and sub-chunk labels."""

    lexical: bool
    mode: str
    keyword_match: str


def shown_seeds(pool: KeywordPool, voice: KeywordVoice) -> list[SeedKeyword]:
    """The seeds drawn: in the order taken (lexical: the question's own first), else most similar first."""
    seeds = list(pool.seeds) if voice.lexical else sorted(pool.seeds, key=lambda k: (-k.cosine, k.id))
    return seeds[:SHOWN_SEED_KEYWORDS]


def narrate_pool(tracer: Tracer, pool: KeywordPool, voice: KeywordVoice) -> TraceStep:
    shown = shown_seeds(pool, voice)
    which = "first" if voice.lexical else "most similar"
    n = len(pool.seeds)
    listed = (f"showing the {len(shown)} {which} of {n} seeded keywords" if len(shown) < n
              else f"showing all {n} seeded keywords")
    how = (f"the question's own {len(pool.asked)} keyword(s) rarest first, then the rest by cosine (keyword_match "
           f"'{voice.keyword_match}': {voice.mode}, ours)" if voice.lexical else "keywords by cosine to the question")
    return tracer.step(
        "seed", "Keyword channel: seed keywords",
        f"{n} seeds: {how}, until their sub-chunks hold "
        f"{pool.budget} tokens (2·(1-θ)·λ); pool: {len(pool.pool)} sub-chunks, {pool.tokens} tokens"
        + (" (pool_mode 'code': stopped at the first sub-chunk that overflowed)" if pool.pool_mode == "code" else "")
        + f"; {listed}",
        nodes=_seed_nodes(shown, pool),
        scores={k.id: k.cosine for k in shown},
        data={"channel": "keyword", "used": pool.tokens, "budget": pool.budget, "budget_of": POOL,
              "pool_mode": pool.pool_mode,
              "seeded_total": n, "seeded_shown": len(shown), "match": voice.mode,
              "question_keywords": list(pool.asked),
              "score_name": "cosine to the question; seeds are taken in rank order "
                            + ("(the question's own keywords first)" if voice.lexical else "(by cosine)")},
        record=record_data(pool))


def _seed_nodes(shown: list[SeedKeyword], pool: KeywordPool) -> list[NodeRef]:
    """Seed keywords in the order taken (rank) and the next ones, not needed (reason)."""
    nodes = ([NodeRef(k.id, "Keyword", "seed", k.word, k.cosine) for k in shown]
             + [NodeRef(k.id, "Keyword", "rejected", k.word, k.cosine) for k in pool.next_keywords])
    deciding.set_ranks(nodes, [k.id for k in pool.seeds + pool.next_keywords])
    deciding.set_reasons(nodes, {k.id: f"not needed: the pool reached {pool.budget} tokens first"
                                 for k in pool.next_keywords})
    return nodes


def narrate_ranking(tracer: Tracer, ranking: KeywordRanking, pool: KeywordPool, voice: KeywordVoice,
                    label: dict[str, str]) -> TraceStep:
    shown = shown_seeds(pool, voice)
    shown_ids = {k.id for k in shown}
    fused = voice.mode == "hybrid"
    return tracer.step(
        "score", "Keyword channel: candidate sub-chunks",
        f"{len(pool.pool)} sub-chunks next to the seed keywords, scored by "
        + ((f"BM25 over the question's keywords fused with cosine (reciprocal rank, k={RRF_K})"
            if fused else "BM25 over the question's keywords (cosine breaks ties)")
           if voice.lexical else "cosine to the question"),
        # the seed keywords are drawn for their HAS_KEYWORD edges, unscored: their cosine (the seed
        # step's number) is on another scale than the sub-chunks' score this step ranks by
        nodes=[NodeRef(sid, "SubChunk", "candidate", label.get(sid, sid), ranking.score[sid],
                       {"lexical": ranking.lexical[sid], "cosine": ranking.cosine[sid]}
                       if ranking.lexical is not None else {}, rank) for rank, sid in enumerate(ranking.ranked, 1)]
        + [NodeRef(k.id, "Keyword", "seed", k.word) for k in shown],
        # only the seed step's shown keywords: an edge to an undrawn keyword would pull it in unlabelled
        edges=[EdgeRef(sid, k, "HAS_KEYWORD", "candidate") for sid in ranking.ranked for k in pool.via[sid]
               if k in shown_ids],
        scores=dict(ranking.score),
        data={"channel": "keyword", "used": pool.tokens, "budget": pool.budget, "budget_of": POOL,
              **({"cosines": dict(ranking.cosine)} if voice.lexical else {}),
              "score_name": ("BM25 over the question's keywords fused with cosine (reciprocal rank)"
                             if fused else "BM25 over the question's keywords, cosine "
                             "breaking ties") if voice.lexical else "cosine to the question"},
        record=record_data(ranking))


def narrate_fill(tracer: Tracer, fill: KeywordFill, ranking: KeywordRanking, pool: KeywordPool,
                 voice: KeywordVoice, label: dict[str, str]) -> TraceStep:
    shown_ids = {k.id for k in shown_seeds(pool, voice)}
    dup = fill.already_in_skeleton
    return tracer.step(
        "context", "Keyword channel: chosen sub-chunks",
        f"{len(fill.chosen)} best-scored sub-chunks fit {fill.budget} tokens ((1-θ)·λ); {len(fill.over)} did not fit"
        + (f"; {len(dup)} already in the skeleton channel" if dup else ""),
        nodes=_fill_nodes(fill, ranking, label),
        edges=[EdgeRef(sid, k, "HAS_KEYWORD", "chosen") for sid in fill.chosen for k in pool.via[sid]
               if k in shown_ids],
        scores={sid: ranking.score[sid] for sid in fill.chosen},
        data={"channel": "keyword", "used": fill.used, "budget": fill.budget, "items": list(fill.chosen),
              "already_in_skeleton": list(dup)},
        record=record_data(fill))


def _fill_nodes(fill: KeywordFill, ranking: KeywordRanking, label: dict[str, str]) -> list[NodeRef]:
    """Chosen and rejected sub-chunks, their place in the ranking and why each rejected one did not
    fit (stop-at-first-overflow)."""
    over = fill.over[:SHOWN_REJECTED]
    score = ranking.score
    nodes = ([NodeRef(sid, "SubChunk", "chosen", label.get(sid, sid), score[sid]) for sid in fill.chosen]
             + [NodeRef(sid, "SubChunk", "rejected", label.get(sid, sid), score[sid]) for sid in over])
    deciding.set_ranks(nodes, list(fill.fresh))
    deciding.set_reasons(nodes, deciding.budget_reasons([(s, fill.tokens[s]) for s in fill.fresh], fill.budget,
                                                        list(fill.chosen), stop_at_first=True))
    return nodes


# -- skeleton channel (Algorithm 2 on G_s) ----------------------------------------------------------
# ours: in the text-unit step, links drawn from each chunk that gave a chosen text unit to the
# entities / relationships it is linked to (chosen relationships first, then seeds, then the other
# ends reached one hop out). Drawing every link (a hundred on the sample) hid the chosen units;
# data["links"] keeps them all
SHOWN_LINKS_PER_CHUNK = 2


@dataclass(frozen=True)
class SkeletonVoice:
    """How the skeleton channel matched and what it ran on, for the words: ``lexical`` (entity_match
    reads the question's own words), ``mode`` (embedding | lexical | hybrid), the ``entity_match``
    setting, the skeleton's scope, and the descriptions' prompt (None: the graph has none)."""

    lexical: bool
    mode: str
    entity_match: str
    scope: str
    graph_beta: float
    warning: str
    description_prompt: str | None


def _described(voice: SkeletonVoice, not_described: tuple[str, ...]) -> dict[str, object]:
    """Whose descriptions the chosen items carry: only on a graph with LLM-written descriptions,
    so traces of other graphs keep their keys."""
    if voice.description_prompt is None:
        return {}
    return {"descriptions": "llm", "description_prompt": voice.description_prompt,
            "not_described": list(not_described)}


def narrate_seeds(tracer: Tracer, seeds: SkeletonSeeds, voice: SkeletonVoice) -> TraceStep:
    k, named = seeds.seed_entities, seeds.named
    how = (f"{len(seeds.chosen)} entities: first the {sum(e in named for e in seeds.chosen)} named in the question "
           f"(entity_match '{voice.entity_match}': {voice.mode}, ours), then the nearest by cosine" if voice.lexical
           else f"{len(seeds.chosen)} entities nearest the question")
    detail = (f"{how} (k={k}); {voice.scope}."
              + (f" {voice.warning}." if voice.warning else "")
              + (f" {len(seeds.over)} did not fit the entity+relationship half ({seeds.entity_relationship_budget} "
                 "tokens)." if seeds.over else ""))
    by_id = {e.id: e for e in seeds.seeds + seeds.skipped}
    nodes = ([NodeRef(e, "Entity", "seed", by_id[e].name, by_id[e].cosine) for e in seeds.chosen]
             + [NodeRef(e, "Entity", "rejected", by_id[e].name, by_id[e].cosine) for e in seeds.over]
             + [NodeRef(e.id, "Entity", "rejected", e.name, e.cosine) for e in seeds.skipped[:SHOWN_REJECTED]])
    deciding.set_ranks(nodes, [e for e, _ in seeds.sized])
    deciding.set_reasons(nodes, {
        **{e.id: ("a curated KG entity: the skeleton is the corpus KG" if e.origin == "curated"
                  else "outside the skeleton: no chunk of it mentions the entity" if not e.in_skeleton
                  else f"k={k} seeds already taken" + (" (named entities first)" if named else ""))
           for e in seeds.skipped},
        **deciding.budget_reasons(list(seeds.sized), seeds.entity_relationship_budget, list(seeds.chosen),
                                  stop_at_first=True)})
    return tracer.step(
        "seed", "Skeleton channel: seed entities", detail,
        nodes=nodes,
        scores={e.id: e.cosine for e in seeds.seeds},
        data={"channel": "skeleton", "used": seeds.used, "budget": seeds.budget,
              "entity_relationship_budget": seeds.entity_relationship_budget,
              "graph_beta": voice.graph_beta, "skeleton": voice.scope, "warning": voice.warning,
              "match": voice.mode, "named": list(named), **_described(voice, seeds.not_described),
              "score_name": "cosine to the question; taken in rank order: "
                            + ("the entities the question names first, then by cosine" if named else "by cosine"),
              "out_of_skeleton": list(seeds.out_of_skeleton)},
        record=record_data(seeds))


def narrate_nothing(tracer: Tracer, empty: SkeletonEmpty) -> TraceStep:
    return tracer.step("context", "Skeleton channel: nothing to retrieve",
                       "no entity of the skeleton matched (or none fits the budget)",
                       data={"channel": "skeleton", "used": empty.used, "budget": empty.budget},
                       record=record_data(empty))


def end_table(node_id: str) -> str:
    """A triple's subject or object is an Entity, or a Triple when it is a hypernode (ids "tri:")."""
    return "Triple" if node_id.startswith("tri:") else "Entity"


def narrate_relationships(tracer: Tracer, rels: SkeletonRelationships, voice: SkeletonVoice) -> TraceStep:
    rejected = rels.over + rels.capped
    shown = rels.chosen + rejected[:SHOWN_REJECTED]
    by_id = {r.id: r for r in rels.ranked}
    both = sum(1 for t in rels.chosen if by_id[t].adjacency == 2)
    ends = {end: name or end for t in shown
            for end, name in ((by_id[t].subject, by_id[t].subject_name), (by_id[t].object, by_id[t].object_name))}
    seeds, taken = set(rels.seeds), set(rels.chosen)
    return tracer.step(
        "select", "Skeleton channel: relationships",
        f"{len(rels.ranked)} relationships touch the seed entities; {len(rels.chosen)} chosen ({both} join two "
        "seeds), ranked by adjacency to the seeds, then links of the other end to seeds, then cosine to the "
        f"question; {len(rejected)} rejected (over the {rels.entity_relationship_budget}-token entity+relationship "
        "half" + (f" or past the cap of {rels.cap_per_seed} per seed" if rels.capped else "") + ")",
        nodes=_relationship_nodes(rels, shown)
        + [NodeRef(x, end_table(x), "candidate", label) for x, label in sorted(ends.items())
           if x not in seeds and x not in shown],
        edges=[EdgeRef(by_id[t].subject, by_id[t].object, by_id[t].relation or "RELATED",
                       "chosen" if t in taken else "rejected", by_id[t].cosine) for t in shown],
        scores={t: float(by_id[t].adjacency) for t in shown},
        data={"channel": "skeleton", "used": rels.used, "budget": rels.budget,
              "entity_relationship_budget": rels.entity_relationship_budget,
              "adjacency": {t: by_id[t].adjacency for t in shown},
              "n_candidates": len(rels.ranked), "n_rejected": len(rejected), **_described(voice, rels.not_described),
              "score_name": "adjacency: how many seed entities the relationship joins; ranked by it, then "
                            "by the other end's links to seeds, then by cosine (parts)"},
        record=record_data(rels))


def _relationship_nodes(rels: SkeletonRelationships, shown: tuple[str, ...]) -> list[NodeRef]:
    """The relationships' nodes with their deciding score (adjacency), its tie-breakers as parts,
    their place in the ranking and why each rejected one was left out."""
    taken = set(rels.chosen)
    by_id = {r.id: r for r in rels.ranked}
    nodes = [NodeRef(t, "Triple", "chosen" if t in taken else "rejected", by_id[t].text or t,
                     float(by_id[t].adjacency),
                     {"adjacency": float(by_id[t].adjacency), "other end's links": float(by_id[t].other_links),
                      "cosine": float(by_id[t].cosine)})
             for t in shown]
    deciding.set_ranks(nodes, [r.id for r in rels.ranked])
    sized = [(r.id, r.tokens) for r in rels.ranked if r.tokens is not None]
    reasons = deciding.budget_reasons(sized, rels.room, list(rels.chosen), stop_at_first=True)
    reasons.update({t: f"past the cap of {rels.cap_per_seed} per seed" for t in rels.capped})
    deciding.set_reasons(nodes, reasons)
    return nodes


def shown_units(units: SkeletonTextUnits) -> tuple[str, ...]:
    """The text units drawn: the chosen ones and the first SHOWN_REJECTED that did not fit."""
    return units.chosen + units.over[:SHOWN_REJECTED]


def shown_chunks(units: SkeletonTextUnits) -> list[str]:
    """The chunks of the drawn text units, sorted."""
    chunk = {u.id: u.chunk for u in units.ranked}
    return sorted({chunk[u] for u in shown_units(units)})


def narrate_text_units(tracer: Tracer, units: SkeletonTextUnits, rels: SkeletonRelationships, voice: SkeletonVoice,
                       titles: Mapping[str, str], link_labels: Mapping[str, list[str]]) -> TraceStep:
    """``titles``: chunk id -> its document's title; ``link_labels``: chunk id -> its links as a
    reader names them (the step panel shows them)."""
    shown = shown_units(units)
    by_id = {u.id: u for u in units.ranked}
    chunks_shown = shown_chunks(units)
    used_chunks = {by_id[u].chunk for u in units.chosen}
    relationships = set(rels.chosen)
    drawn = {c: units.linked.get(c, ())[:SHOWN_LINKS_PER_CHUNK] for c in chunks_shown if c in used_chunks}
    edges = [EdgeRef(x, c, "FROM_CHUNK", "chosen") if x in relationships else EdgeRef(c, x, "MENTIONS", "chosen")
             for c, xs in drawn.items() for x in xs]
    sub = units.table == "SubChunk"
    if sub:
        taken = set(units.chosen)
        edges += [EdgeRef(u, by_id[u].chunk, "SUB_CHUNK_OF", "chosen" if u in taken else "rejected") for u in shown]
    fused = voice.mode == "hybrid"
    lexical = bool(units.ranked) and units.ranked[0].lexical is not None

    def label(unit: str, chunk: str) -> str:
        return f"{titles.get(chunk, '')} · {unit.rsplit('#', 1)[-1]}"
    return tracer.step(
        "context", "Skeleton channel: text units",
        f"{units.n_chunks} chunks linked to the chosen entities and relationships"
        + (f" (with {units.one_hop_out} that mention the other end of a chosen relationship: one hop out, "
           f"entity_match '{voice.entity_match}': {voice.mode}, ours)" if voice.lexical else "")
        + f"; {len(units.ranked)} {'sub-chunks' if sub else 'chunks (the graph has no sub-chunks)'} ranked by "
        + ((f"BM25 over the question's keywords fused with cosine (reciprocal rank, k={RRF_K}), then "
            if fused else "BM25 over the question's keywords, then ") if lexical else "")
        + f"how many of them their chunk is linked to, then cosine; {len(units.chosen)} fit the remaining "
        f"{units.room} tokens. Skeleton channel total: {units.used} of {units.budget} tokens",
        nodes=_unit_nodes(units, shown, {u: label(u, by_id[u].chunk) for u in shown}, lexical)
        + ([NodeRef(c, "Chunk", "chosen" if c in used_chunks else "rejected", label(c, c)) for c in chunks_shown]
           if sub else []),
        edges=edges,
        scores={u: _unit_score(by_id[u], lexical) for u in shown},
        data={"channel": "skeleton", "used": units.used, "budget": units.budget, "text_budget": units.room,
              "items": list(units.items), "n_candidates": len(units.ranked),
              "links": {c: list(link_labels.get(c, [])) for c in chunks_shown},
              "links_drawn_per_chunk": SHOWN_LINKS_PER_CHUNK,
              "score_name": (("BM25 over the question's keywords fused with cosine (reciprocal rank)"
                              if fused else "BM25 over the question's keywords")
                             if lexical else "how many chosen entities and relationships the unit's chunk is "
                                             "linked to") + "; ties: links, then cosine (parts)"},
        record=record_data(units))


def _unit_score(u: RankedUnit, lexical: bool) -> float:
    """A text unit's deciding score: BM25 (or fused) when matching lexically, else its chunk's links."""
    return float(u.lexical or 0.0) if lexical else float(u.links)


def _unit_nodes(units: SkeletonTextUnits, shown: tuple[str, ...], labels: Mapping[str, str],
                lexical: bool) -> list[NodeRef]:
    """The text units' nodes: the deciding score, the ranking key's terms as parts, the place in
    the ranking and why a unit that did not fit was left out (stop-at-first-overflow)."""
    taken = set(units.chosen)
    by_id = {u.id: u for u in units.ranked}
    nodes = []
    for u in shown:
        r = by_id[u]
        parts = {**({"lexical": float(r.lexical or 0.0)} if lexical else {}), "links": float(r.links),
                 "cosine": r.cosine}
        nodes.append(NodeRef(u, units.table, "chosen" if u in taken else "rejected", labels[u],
                             _unit_score(r, lexical), parts))
    deciding.set_ranks(nodes, [r.id for r in units.ranked])
    deciding.set_reasons(nodes, deciding.budget_reasons([(r.id, r.tokens) for r in units.ranked], units.room,
                                                        list(units.chosen), stop_at_first=True))
    return nodes
