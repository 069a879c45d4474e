"""The words of KET-RAG's keyword channel: each step record of ``kgviz.methods.ket_records``
becomes the ``TraceStep`` the player shows (title, detail, nodes with their deciding scores,
edges, the figures the viewer draws), with the record itself in ``TraceStep.record``.

The algorithm (``kgviz.methods.ket_channels``) decides; nothing here changes what was retrieved.
"""
from __future__ import annotations

from dataclasses import dataclass

from kgviz.methods import deciding
from kgviz.methods.base import EdgeRef, NodeRef, Tracer, TraceStep
from kgviz.methods.ket_records import KeywordFill, KeywordPool, KeywordRanking, SeedKeyword, record_data

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
