"""KET-RAG retrieval (paper 004, Algorithm 4 "KET-Retrieval"), and its one-channel variants.

The context limit λ is split by θ (§4.1, §5.2):

* skeleton channel, ⌊θ·λ⌋ tokens: KG-Retrieval (Algorithm 2, Microsoft Graph-RAG local search)
  on the KG skeleton G_s —
  line 1: S_e = the k = 10 entities nearest the query (cosine on unit vectors ranks exactly like
          the Euclidean distance of the box);
  line 2: S_r = relationships (Triple nodes) ranked by adjacency to S_e — both ends in S_e first
          (§2.3 "those connecting two seed entities ranking higher"), then by how many seed
          entities the other end is linked to (as Graph-RAG's local search does), then by cosine
          to the query (ours) — taken while |S_e| + |S_r| fits half the channel (λ/2 in the box);
  line 3: S_t = text units ranked by adjacency to S_e ∪ S_r (how many of them the unit's chunk
          is linked to: MENTIONS for entities, FROM_CHUNK for triples, Algorithm 1 line 5), ties
          by cosine to the query (ours), taken while they fit the rest of the channel (at least
          half: §2.3 fills text units "until the total context length reaches λ"). Text units are the
          chunk's sub-chunks (§5.1: chunk nodes of G_s "are replaced by their corresponding
          partitioned sub-chunk nodes ... with edges rewired"), or the chunk itself when the
          graph has no sub-chunks.
* keyword channel, ⌊(1-θ)·λ⌋ tokens (Algorithm 4 lines 2-4): seed keywords by cosine, added
  until their neighbouring sub-chunks (HAS_KEYWORD) hold 2·(1-θ)·λ tokens (the candidate pool);
  then the pool's sub-chunks most similar to the query, while they fit. ``pool_mode='code'``
  follows the authors' create_context.py instead: each keyword's sub-chunks are added best first
  and the pool stops at the first one that would overflow.

"Taken while it fits" is the box's argmax-k s.t. a token total: the longest prefix of the ranking
that fits (the authors' code also stops at the first item that does not fit). Each channel's item
token counts (kgviz.text.count_tokens) never exceed its budget. A sub-chunk already chosen by the
skeleton channel is not repeated by the keyword channel (ours). The trace's steps carry
``data = {"channel", "used", "budget"}`` so a viewer can show each budget filling.

The skeleton and β. β is an index-time choice (kgviz.index.ket): a graph built with β < 1 holds
triples from core chunks only, so "the skeleton as built" is every triple in the graph
(``skeleton_beta = 0``). On a graph whose KG covers every chunk (built with β = 1, or before KET
was enabled) a method can *simulate* a smaller skeleton: ``skeleton_beta = b`` keeps only the
entities, triples and chunks of the top-⌈b·n⌉ chunks by the stored PageRank (or the seeded random
ranking). One full build then reproduces the Table 2 rows: ket-full (KG-RAG, β = θ = 1),
skeleton-rag (β = 0.8 simulated), keyword-rag, ket-rag with 'pagerank' (KET-RAG-P) or 'random'
(KET-RAG-U) selection. Every trace states the graph's built β and the skeleton used.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from kgviz.errors import ConfigError, MethodError
from kgviz.index.ket import core_ranking, ket_info, n_core
from kgviz.methods.base import (ContextItem, EdgeRef, MethodContext, NodeRef, RetrievedContext, Tracer, param,
                                register)
from kgviz.methods.ket_cache import keyword_view, triple_cosines
from kgviz.text import count_tokens

SHOWN_REJECTED = 25  # ours: rejected candidates listed per step (the data counts them all)
_EPS = 1e-9

Q_ENTITIES = ("UNWIND $ids AS x MATCH (e:Entity) WHERE e.id = x "
              "RETURN e.id AS id, e.name AS name, e.description AS description, e.origin AS origin")
Q_ENTITY_CHUNKS = "UNWIND $ids AS x MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) WHERE e.id = x RETURN e.id AS eid, c.id AS cid"
Q_TRIPLES = ("UNWIND $ids AS x MATCH (t:Triple)-[:SUBJ|:OBJ]->(e:Entity) WHERE e.id = x "
             "RETURN DISTINCT t.id AS id, t.text AS text, t.subject_id AS s, t.object_id AS o, "
             "t.relation AS relation, t.origin AS origin, t.chunk_id AS chunk_id")
Q_TRIPLE_CHUNKS = "UNWIND $ids AS x MATCH (t:Triple)-[:FROM_CHUNK]->(c:Chunk) WHERE t.id = x RETURN t.id AS tid, c.id AS cid"
Q_CHUNKS = ("UNWIND $ids AS x MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk) WHERE c.id = x "
            "RETURN c.id AS id, c.text AS text, c.ord AS ord, d.title AS title")
Q_CHUNK_RANKS = "MATCH (c:Chunk) RETURN c.id AS id, c.pagerank AS pr"
Q_SUBCHUNKS = "UNWIND $ids AS x MATCH (s:SubChunk) WHERE s.id = x RETURN s.id AS id, s.text AS text"
QUERIES = (Q_ENTITIES, Q_ENTITY_CHUNKS, Q_TRIPLES, Q_TRIPLE_CHUNKS, Q_CHUNKS, Q_CHUNK_RANKS, Q_SUBCHUNKS)

_POOL_MODES = ("paper", "code")
_SELECTIONS = ("pagerank", "random")

# shared field docs
D_LIMIT = ("λ: context limit in tokens, split θ : 1-θ between the channels (Algorithm 4). The paper uses "
           "12,000 (§6.1, preset 'paper'); 4,000 here so the shared answer step's default budget cuts nothing (ours)")
D_SEEDS = "k: seed entities nearest the query (Algorithm 2 line 1: k = 10)"
D_SHARE = ("share of the skeleton channel for text units; the rest is entities + relationships (Algorithm 2 lines "
           "2-3: λ/2 each; Graph-RAG's text_unit_prop = 0.5)")
D_RELCAP = ("most relationships per seed entity, 0 = no cap (Algorithm 2 has none; Graph-RAG's local search, which the "
            "authors' code calls, keeps top_k_relationships = 10 per entity: preset 'code')")
D_POOL = "candidate pool of the keyword channel, in multiples of its budget (Algorithm 4 line 2: 2·(1-θ)·λ)"
D_POOLMODE = ("'paper': add seed keywords with all their sub-chunks until the pool holds its tokens (Algorithm 4 line 2); "
              "'code': add each keyword's sub-chunks best first and stop at the first that overflows (create_context.py)")
D_SKEL = ("β of the skeleton: 0 = as built (every triple in the graph; the build's β is in the trace); b in (0, 1] = only "
          "the entities, triples and chunks of the top-⌈b·n⌉ chunks (simulates a smaller skeleton on a fuller graph, ours)")
D_SEL = "ranking used when skeleton_beta > 0: 'pagerank' (KET-RAG-P) or 'random' (KET-RAG-U, the build's seed) (§6.1)"


def _check_common(limit: int, seeds: int, share: float, relcap: int) -> None:
    if limit < 1 or seeds < 1 or relcap < 0 or not 0.0 <= share <= 1.0:
        raise ConfigError("ket-rag: context_limit and seed_entities must be >= 1, max_relationships_per_seed >= 0, "
                          "text_unit_share in [0, 1]")


def _check_pool(factor: float, mode: str) -> None:
    if factor < 1.0 or mode not in _POOL_MODES:
        raise ConfigError(f"ket-rag: pool_factor must be >= 1 and pool_mode one of {', '.join(_POOL_MODES)}")


def _check_skeleton(beta: float, selection: str) -> None:
    if not 0.0 <= beta <= 1.0 or selection not in _SELECTIONS:
        raise ConfigError(f"ket-rag: skeleton_beta must be in [0, 1] and core_selection one of {', '.join(_SELECTIONS)}")


@dataclass(frozen=True)
class KetRagParams:
    context_limit: int = param(4000, D_LIMIT)
    theta: float = param(0.4, "θ: share of λ for the skeleton channel; the keyword channel gets 1-θ (Algorithm 4; "
                              "θ = 0.4 in §6.1)")
    seed_entities: int = param(10, D_SEEDS)
    text_unit_share: float = param(0.5, D_SHARE)
    max_relationships_per_seed: int = param(0, D_RELCAP)
    pool_factor: float = param(2.0, D_POOL)
    pool_mode: str = param("paper", D_POOLMODE)
    skeleton_beta: float = param(0.0, D_SKEL)
    core_selection: str = param("pagerank", D_SEL)

    def __post_init__(self) -> None:
        if not 0.0 <= self.theta <= 1.0:
            raise ConfigError(f"ket-rag: θ must be in [0, 1], got {self.theta}")
        _check_common(self.context_limit, self.seed_entities, self.text_unit_share, self.max_relationships_per_seed)
        _check_pool(self.pool_factor, self.pool_mode)
        _check_skeleton(self.skeleton_beta, self.core_selection)


@dataclass(frozen=True)
class SkeletonRagParams:
    context_limit: int = param(4000, D_LIMIT)
    seed_entities: int = param(10, D_SEEDS)
    text_unit_share: float = param(0.5, D_SHARE)
    max_relationships_per_seed: int = param(0, D_RELCAP)
    skeleton_beta: float = param(0.0, D_SKEL)
    core_selection: str = param("pagerank", D_SEL)

    def __post_init__(self) -> None:
        _check_common(self.context_limit, self.seed_entities, self.text_unit_share, self.max_relationships_per_seed)
        _check_skeleton(self.skeleton_beta, self.core_selection)


@dataclass(frozen=True)
class KeywordRagParams:
    context_limit: int = param(4000, D_LIMIT)
    pool_factor: float = param(2.0, D_POOL)
    pool_mode: str = param("paper", D_POOLMODE)

    def __post_init__(self) -> None:
        _check_common(self.context_limit, 1, 0.5, 0)
        _check_pool(self.pool_factor, self.pool_mode)


@dataclass(frozen=True)
class KetFullParams:
    context_limit: int = param(4000, D_LIMIT)
    seed_entities: int = param(10, D_SEEDS)
    text_unit_share: float = param(0.5, D_SHARE)
    max_relationships_per_seed: int = param(0, D_RELCAP)

    def __post_init__(self) -> None:
        _check_common(self.context_limit, self.seed_entities, self.text_unit_share, self.max_relationships_per_seed)


@dataclass(frozen=True)
class _Config:
    """Everything one retrieval needs, whichever variant asked."""

    limit: int
    theta: float
    seed_entities: int = 10
    text_unit_share: float = 0.5
    max_relationships_per_seed: int = 0
    pool_factor: float = 2.0
    pool_mode: str = "paper"
    skeleton_beta: float = 0.0
    core_selection: str = "pagerank"

    @property
    def skeleton_budget(self) -> int:
        return int(math.floor(self.theta * self.limit + _EPS))

    @property
    def keyword_budget(self) -> int:
        return int(math.floor((1.0 - self.theta) * self.limit + _EPS))


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def _cosines(store: Any, table: str, ids: list[str], qv: np.ndarray) -> dict[str, float]:
    embs = store.get_embeddings(table, ids)
    return {i: float(_unit(np.asarray(embs[i], dtype=np.float32)) @ qv) if i in embs else 0.0 for i in ids}


def _prefix(ranked: list[tuple[str, int]], room: int) -> tuple[list[str], list[str], int]:
    """The longest prefix of (id, tokens) that fits ``room``: (chosen, rejected, tokens used)."""
    used = 0
    for pos, (item, n) in enumerate(ranked):
        if used + n > room:
            return [i for i, _ in ranked[:pos]], [i for i, _ in ranked[pos:]], used
        used += n
    return [i for i, _ in ranked], [], used


@dataclass
class _Skeleton:
    """Which chunks the skeleton may use: None = every chunk (the KG as built)."""

    chunks: set[str] | None
    label: str
    graph_beta: float
    warning: str = ""


@dataclass
class _Channel:
    items: list[ContextItem] = field(default_factory=list)
    used: int = 0


def _skeleton_scope(store: Any, cfg: _Config) -> _Skeleton:
    info = ket_info(store)
    built = float(info.get("skeleton_beta", 1.0)) if info else 1.0
    built_text = (f"the graph's KG covers β={built:g} of its chunks" if info
                  else "the graph has no KET index, so its KG covers every chunk (β=1)")
    short = (f"asked for a β={cfg.skeleton_beta:g} skeleton but {built_text}: the chunks outside it have no "
             f"triples, so this is effectively β={built:g}; rebuild with β=1 for the full KG")
    if cfg.skeleton_beta <= 0.0:
        return _Skeleton(None, f"skeleton as built ({built_text})", built)
    if cfg.skeleton_beta >= 1.0:
        return _Skeleton(None, f"full KG, β=1 ({built_text})", built, short if built < 1.0 - _EPS else "")
    rows = store.query(Q_CHUNK_RANKS)
    if any(r["pr"] is None for r in rows) and cfg.core_selection == "pagerank":
        raise MethodError("skeleton_beta needs the chunks' PageRank, and this graph has no KET index",
                          hint="rebuild with KET enabled, or set skeleton_beta to 0 (the skeleton as built)")
    ids = [r["id"] for r in rows]
    seed = int(info.get("params", {}).get("seed", 42)) if info else 42
    ranking = core_ranking(ids, [r["pr"] or 0.0 for r in rows], cfg.core_selection, seed)
    chunks = set(ranking[: n_core(len(ids), cfg.skeleton_beta)])
    label = (f"simulated β={cfg.skeleton_beta:g} skeleton ({cfg.core_selection}: {len(chunks)} of {len(ids)} chunks; "
             f"{built_text})")
    return _Skeleton(chunks, label, built, short if cfg.skeleton_beta > built + _EPS else "")


def _seed_entities(store: Any, qv: np.ndarray, cfg: _Config, scope: _Skeleton
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, set[str]]]:
    """(seeds best first, skipped candidates, entity -> chunks mentioning it in scope)."""
    fetch = max(3 * cfg.seed_entities, 30)
    while True:
        hits = store.vector_search("Entity", qv, fetch)
        info = {r["id"]: r for r in store.query(Q_ENTITIES, {"ids": [e for e, _ in hits]})}
        chunks: dict[str, set[str]] = {}
        for r in store.query(Q_ENTITY_CHUNKS, {"ids": [e for e, _ in hits]}):
            if scope.chunks is None or r["cid"] in scope.chunks:
                chunks.setdefault(r["eid"], set()).add(r["cid"])
        seeds, skipped = [], []
        for e, score in hits:
            row = info.get(e)
            if row is None:
                continue
            ent = {**row, "score": score}
            in_scope = row["origin"] != "curated" and (scope.chunks is None or e in chunks)
            (seeds if in_scope and len(seeds) < cfg.seed_entities else skipped).append(ent)
        if len(seeds) >= cfg.seed_entities or len(hits) < fetch:
            return seeds, skipped, chunks
        fetch *= 4


def _entity_text(e: dict[str, Any]) -> str:
    desc = (e.get("description") or "").strip()
    return f"{e['name']}: {desc}" if desc else str(e["name"])


class _KetEngine:
    def __init__(self, store: Any, qv: np.ndarray, cfg: _Config, tracer: Tracer) -> None:
        self.store, self.qv, self.cfg, self.tracer = store, qv, cfg, tracer

    # -- skeleton channel (Algorithm 2 on G_s) ------------------------------------------------------
    def skeleton(self, scope: _Skeleton) -> _Channel:
        cfg, store, ch = self.cfg, self.store, _Channel()
        budget = cfg.skeleton_budget
        er_budget = int(math.floor(budget * (1.0 - cfg.text_unit_share) + _EPS))
        seeds, skipped, ent_chunks = _seed_entities(store, self.qv, cfg, scope)
        ranked = [(e["id"], count_tokens(_entity_text(e))) for e in seeds]
        chosen_e, over_e, ch.used = _prefix(ranked, er_budget)
        by_id = {e["id"]: e for e in seeds + skipped}
        for eid in chosen_e:
            e = by_id[eid]
            ch.items.append(ContextItem(eid, "entity", _entity_text(e), e["score"], count_tokens(_entity_text(e))))
        detail = (f"{len(chosen_e)} entities nearest the question (k={cfg.seed_entities}); {scope.label}."
                  + (f" {scope.warning}." if scope.warning else "")
                  + (f" {len(over_e)} did not fit the entity+relationship half ({er_budget} tokens)." if over_e else ""))
        self.tracer.step(
            "seed", "Skeleton channel: seed entities", detail,
            nodes=[NodeRef(e, "Entity", "seed", by_id[e]["name"], by_id[e]["score"]) for e in chosen_e]
            + [NodeRef(e, "Entity", "rejected", by_id[e]["name"], by_id[e]["score"]) for e in over_e]
            + [NodeRef(e["id"], "Entity", "rejected", e["name"], e["score"]) for e in skipped[:SHOWN_REJECTED]],
            scores={e["id"]: e["score"] for e in seeds},
            data={"channel": "skeleton", "used": ch.used, "budget": budget, "entity_relationship_budget": er_budget,
                  "graph_beta": scope.graph_beta, "skeleton": scope.label, "warning": scope.warning,
                  "out_of_skeleton": [e["id"] for e in skipped if e["origin"] == "curated" or e["id"] not in ent_chunks]})
        if not chosen_e:
            self.tracer.step("context", "Skeleton channel: nothing to retrieve",
                             "no entity of the skeleton matched (or none fits the budget)",
                             data={"channel": "skeleton", "used": ch.used, "budget": budget})
            return ch
        chosen_r, rel_rows = self._relationships(set(chosen_e), er_budget, ch, scope, by_id)
        self._text_units(chosen_e, chosen_r, rel_rows, ent_chunks, budget, ch, scope)
        return ch

    def _relationships(self, seeds: set[str], er_budget: int, ch: _Channel, scope: _Skeleton,
                       ents: dict[str, dict[str, Any]]) -> tuple[list[str], dict[str, dict[str, Any]]]:
        store, cfg = self.store, self.cfg
        rows = {r["id"]: r for r in store.query(Q_TRIPLES, {"ids": sorted(seeds)}) if r["origin"] != "curated"}
        t_chunks: dict[str, set[str]] = {}
        for r in store.query(Q_TRIPLE_CHUNKS, {"ids": list(rows)}):
            t_chunks.setdefault(r["tid"], set()).add(r["cid"])
        if scope.chunks is not None:
            rows = {t: r for t, r in rows.items() if t_chunks.get(t, set()) & scope.chunks}
        cos = triple_cosines(store, list(rows), self.qv)
        adj = {t: (r["s"] in seeds) + (r["o"] in seeds) for t, r in rows.items()}
        links: dict[str, set[str]] = {}  # non-seed end -> seeds it is linked to
        for t, r in rows.items():
            for end, other in ((r["s"], r["o"]), (r["o"], r["s"])):
                if other in seeds and end not in seeds:
                    links.setdefault(end, set()).add(other)

        def key(t: str) -> tuple[float, ...]:
            r = rows[t]
            other = r["o"] if r["s"] in seeds else r["s"]
            return (-adj[t], -(len(links.get(other, ())) if adj[t] == 1 else 2), -cos[t])

        order = sorted(rows, key=lambda t: (key(t), t))
        capped: list[str] = []
        if cfg.max_relationships_per_seed > 0:
            cap = cfg.max_relationships_per_seed * len(seeds)
            order, capped = order[:cap], order[cap:]
        chosen, over, used = _prefix([(t, count_tokens(rows[t]["text"] or "")) for t in order], er_budget - ch.used)
        ch.used += used
        for t in chosen:
            ch.items.append(ContextItem(t, "triple", rows[t]["text"] or "", cos[t], count_tokens(rows[t]["text"] or ""),
                                        source=rows[t]["chunk_id"] or ""))
        rejected = over + capped
        shown = chosen + rejected[:SHOWN_REJECTED]
        both = sum(1 for t in chosen if adj[t] == 2)
        self.tracer.step(
            "select", "Skeleton channel: relationships",
            f"{len(rows)} relationships touch the seed entities; {len(chosen)} chosen ({both} join two seeds), "
            f"ranked by adjacency to the seeds, then links of the other end to seeds, then cosine to the question; "
            f"{len(rejected)} rejected (over the {er_budget}-token entity+relationship half"
            + (f" or past the cap of {cfg.max_relationships_per_seed} per seed" if capped else "") + ")",
            nodes=[NodeRef(t, "Triple", "chosen" if t in chosen else "rejected", rows[t]["text"] or t, cos[t])
                   for t in shown]
            + [NodeRef(e, "Entity", "candidate", ents[e]["name"] if e in ents else e) for e in
               sorted({x for t in shown for x in (rows[t]["s"], rows[t]["o"])} - seeds)],
            edges=[EdgeRef(rows[t]["s"], rows[t]["o"], rows[t]["relation"] or "RELATED",
                           "chosen" if t in chosen else "rejected", cos[t]) for t in shown],
            scores={t: float(adj[t]) for t in shown},
            data={"channel": "skeleton", "used": ch.used, "budget": self.cfg.skeleton_budget,
                  "entity_relationship_budget": er_budget, "adjacency": {t: adj[t] for t in shown},
                  "n_candidates": len(rows), "n_rejected": len(rejected)})
        return chosen, {t: {**rows[t], "chunks": t_chunks.get(t, set())} for t in chosen}

    def _text_units(self, seeds: list[str], rels: list[str], rel_rows: dict[str, dict[str, Any]],
                    ent_chunks: dict[str, set[str]], budget: int, ch: _Channel, scope: _Skeleton) -> None:
        store = self.store
        linked: dict[str, set[str]] = {}  # chunk -> the S_e ∪ S_r elements linked to it
        for e in seeds:
            for c in ent_chunks.get(e, ()):
                linked.setdefault(c, set()).add(e)
        for t in rels:
            for c in rel_rows[t]["chunks"]:
                if scope.chunks is None or c in scope.chunks:
                    linked.setdefault(c, set()).add(t)
        view = keyword_view(store)
        rows = [i for c in sorted(linked) for i in view.by_chunk.get(c, [])] if view is not None else []
        chunk_rows = {} if rows else {r["id"]: r for r in store.query(Q_CHUNKS, {"ids": sorted(linked)})}
        units: dict[str, str] = {}  # unit id -> its chunk
        if rows:
            assert view is not None
            sims = view.sub_matrix[rows] @ self.qv
            units = {view.sub_ids[i]: view.sub_chunk[i] for i in rows}
            tokens = {view.sub_ids[i]: int(view.sub_tokens[i]) for i in rows}
            cos = {view.sub_ids[i]: float(x) for i, x in zip(rows, sims.tolist())}
            table, kind = "SubChunk", "subchunk"
        else:  # no sub-chunks in this graph: the chunks themselves are the text units
            units = {c: c for c in chunk_rows}
            tokens = {c: count_tokens(r["text"] or "") for c, r in chunk_rows.items()}
            cos = _cosines(store, "Chunk", list(units), self.qv)
            table, kind = "Chunk", "chunk"
        order = sorted(units, key=lambda u: (-len(linked.get(units[u], ())), -cos[u], u))
        text_room = budget - ch.used
        chosen, over, _ = _prefix([(u, tokens[u]) for u in order], text_room)
        texts = ({r["id"]: r["text"] or "" for r in store.query(Q_SUBCHUNKS, {"ids": chosen})} if table == "SubChunk"
                 else {c: chunk_rows[c]["text"] or "" for c in chosen})
        kept, late, used = _prefix([(u, count_tokens(texts.get(u, ""))) for u in chosen], text_room)
        chosen, over = kept, late + over  # the stored counts are count_tokens of the same text: a no-op guard
        ch.used += used
        title = ({c: view.title(c) for c in linked} if rows and view is not None
                 else {c: r["title"] for c, r in chunk_rows.items()})
        for u in chosen:
            ch.items.append(ContextItem(u, kind, texts[u], cos[u], count_tokens(texts[u]), source=title.get(units[u], "")))
        shown = chosen + over[:SHOWN_REJECTED]
        chunks_shown = sorted({units[u] for u in shown})
        used_chunks = {units[u] for u in chosen}
        edges = [EdgeRef(x, c, "FROM_CHUNK", "chosen" if c in used_chunks else "candidate") if x in rel_rows
                 else EdgeRef(c, x, "MENTIONS", "chosen" if c in used_chunks else "candidate")
                 for c in chunks_shown for x in sorted(linked.get(c, ()))]
        if table == "SubChunk":
            edges += [EdgeRef(u, units[u], "SUB_CHUNK_OF", "chosen" if u in chosen else "rejected") for u in shown]
        self.tracer.step(
            "context", "Skeleton channel: text units",
            f"{len(linked)} chunks linked to the chosen entities and relationships; {len(units)} "
            f"{'sub-chunks' if table == 'SubChunk' else 'chunks (the graph has no sub-chunks)'} ranked by how many of "
            f"them their chunk is linked to, then cosine; {len(chosen)} fit the remaining {text_room} tokens. "
            f"Skeleton channel total: {ch.used} of {budget} tokens",
            nodes=[NodeRef(u, table, "chosen" if u in chosen else "rejected",
                           f"{title.get(units[u], '')} · {u.rsplit('#', 1)[-1]}", cos[u]) for u in shown]
            + ([NodeRef(c, "Chunk", "candidate", f"{title.get(c, '')} · {c.rsplit('#', 1)[-1]}") for c in chunks_shown]
               if table == "SubChunk" else []),
            edges=edges,
            scores={u: float(len(linked.get(units[u], ()))) for u in shown},
            data={"channel": "skeleton", "used": ch.used, "budget": budget, "text_budget": text_room,
                  "items": [i.id for i in ch.items], "n_candidates": len(units)})

    # -- keyword channel (Algorithm 4 lines 2-4) ----------------------------------------------------
    def keyword(self, skip: set[str]) -> _Channel:
        cfg, store, ch = self.cfg, self.store, _Channel()
        budget = cfg.keyword_budget
        pool_budget = int(math.floor(cfg.pool_factor * budget + _EPS))
        view = keyword_view(store)
        if view is None or not view.kw_ids:
            raise MethodError("this graph has no KET keyword index (no Keyword nodes)",
                              hint="rebuild with KET enabled, or use skeleton-rag / θ = 1")
        order, kw_sims = view.keyword_ranking(self.qv)
        sub_sims = view.sub_matrix @ self.qv
        pool: dict[int, int] = {}  # sub-chunk row -> tokens, in the order added
        via: dict[int, list[int]] = {}  # sub-chunk row -> seed keyword rows that brought it
        pool_tokens, n_seeds, full = 0, 0, False
        for kw in order.tolist():
            n_seeds += 1
            nbrs = view.neighbours(kw)
            if cfg.pool_mode == "code":  # best sub-chunks first; rows are in id order for ties
                nbrs = nbrs[np.lexsort((nbrs, -sub_sims[nbrs]))]
            for row in nbrs.tolist():
                if row in pool:
                    via[row].append(kw)
                    continue
                n = int(view.sub_tokens[row])
                if cfg.pool_mode == "code" and pool_tokens + n > pool_budget:
                    full = True
                    break
                pool[row], via[row] = n, [kw]
                pool_tokens += n
            if full or pool_tokens >= pool_budget:
                break
        seeds = [(int(k), float(x)) for k, x in zip(order[:n_seeds].tolist(), kw_sims[:n_seeds].tolist())]
        near = [(int(k), float(x)) for k, x in zip(order[n_seeds : n_seeds + 3].tolist(),
                                                   kw_sims[n_seeds : n_seeds + 3].tolist())]
        self.tracer.step(
            "seed", "Keyword channel: seed keywords",
            f"{len(seeds)} keywords by cosine to the question until their sub-chunks hold "
            f"{pool_budget} tokens (2·(1-θ)·λ); pool: {len(pool)} sub-chunks, {pool_tokens} tokens"
            + (" (pool_mode 'code': stopped at the first sub-chunk that overflowed)" if cfg.pool_mode == "code" else ""),
            nodes=[NodeRef(view.kw_ids[k], "Keyword", "seed", view.kw_words[k], x) for k, x in seeds]
            + [NodeRef(view.kw_ids[k], "Keyword", "rejected", view.kw_words[k], x) for k, x in near],
            scores={view.kw_ids[k]: x for k, x in seeds},
            data={"channel": "keyword", "used": pool_tokens, "budget": pool_budget, "pool_mode": cfg.pool_mode})
        ids = {row: view.sub_ids[row] for row in pool}
        cos = {ids[row]: float(sub_sims[row]) for row in pool}
        ranked = sorted(cos, key=lambda sid: (-cos[sid], sid))
        label = {sid: view.label(sid) for sid in ranked}
        kws = {ids[row]: [view.kw_ids[k] for k in ks] for row, ks in via.items()}
        self.tracer.step(
            "score", "Keyword channel: candidate sub-chunks",
            f"{len(pool)} sub-chunks next to the seed keywords, scored by cosine to the question",
            nodes=[NodeRef(sid, "SubChunk", "candidate", label.get(sid, sid), cos[sid]) for sid in ranked],
            edges=[EdgeRef(sid, k, "HAS_KEYWORD", "candidate") for sid in ranked for k in kws[sid]],
            scores=dict(cos),
            data={"channel": "keyword", "used": pool_tokens, "budget": pool_budget})
        tokens = {view.sub_ids[row]: n for row, n in pool.items()}
        fresh = [sid for sid in ranked if sid not in skip]
        chosen, over, _ = _prefix([(sid, tokens[sid]) for sid in fresh], budget)
        texts = {r["id"]: r["text"] or "" for r in store.query(Q_SUBCHUNKS, {"ids": chosen})}
        kept, late, ch.used = _prefix([(sid, count_tokens(texts.get(sid, ""))) for sid in chosen], budget)
        chosen, over = kept, late + over  # stored counts are count_tokens of the same text: a no-op guard
        for sid in chosen:
            ch.items.append(ContextItem(sid, "subchunk", texts[sid], cos[sid], count_tokens(texts[sid]),
                                        source=view.title(view.sub_chunk[view.sub_index[sid]])))
        dup = [sid for sid in ranked if sid in skip]
        self.tracer.step(
            "context", "Keyword channel: chosen sub-chunks",
            f"{len(chosen)} most similar sub-chunks fit {budget} tokens ((1-θ)·λ); {len(over)} did not fit"
            + (f"; {len(dup)} already in the skeleton channel" if dup else ""),
            nodes=[NodeRef(sid, "SubChunk", "chosen", label.get(sid, sid), cos[sid]) for sid in chosen]
            + [NodeRef(sid, "SubChunk", "rejected", label.get(sid, sid), cos[sid]) for sid in over[:SHOWN_REJECTED]],
            edges=[EdgeRef(sid, k, "HAS_KEYWORD", "chosen") for sid in chosen for k in kws[sid]],
            scores={sid: cos[sid] for sid in chosen},
            data={"channel": "keyword", "used": ch.used, "budget": budget, "items": chosen,
                  "already_in_skeleton": dup})
        return ch


def retrieve_ket(question: str, ctx: MethodContext, cfg: _Config, tracer: Tracer) -> RetrievedContext:
    """Algorithm 4: the skeleton channel (when θ > 0), then the keyword channel (when θ < 1)."""
    store = ctx.store
    qv = _unit(np.asarray(ctx.embedder.embed([question])[0], dtype=np.float32))
    engine = _KetEngine(store, qv, cfg, tracer)
    skel, kw = _Channel(), _Channel()
    scope_label = ""
    if cfg.skeleton_budget > 0:
        scope = _skeleton_scope(store, cfg)
        scope_label = scope.label
        skel = engine.skeleton(scope)
    if cfg.keyword_budget > 0:
        kw = engine.keyword({i.id for i in skel.items})
    items = skel.items + kw.items
    note = (f"θ={cfg.theta:g}, λ={cfg.limit}: skeleton channel {skel.used}/{cfg.skeleton_budget} tokens"
            + (f" ({scope_label})" if scope_label else "")
            + f"; keyword channel {kw.used}/{cfg.keyword_budget} tokens")
    return RetrievedContext(items=items, node_ids=[i.id for i in items], notes={"ket-rag": note})


class _Base:
    paper: ClassVar[str] = "004"

    def _config(self, p: Any) -> _Config:
        raise NotImplementedError

    def retrieve(self, question: str, ctx: MethodContext, params: Any, tracer: Tracer) -> RetrievedContext:
        return retrieve_ket(question, ctx, self._config(params), tracer)


@register
class KetRag(_Base):
    name: ClassVar[str] = "ket-rag"
    title: ClassVar[str] = "KET-RAG (skeleton + keyword channels)"
    Params: ClassVar[type] = KetRagParams
    presets: ClassVar[dict[str, Any]] = {
        "default": KetRagParams(),
        "paper": KetRagParams(context_limit=12000),
        # Graph-RAG local search as called by create_context.py: 10 relationships per seed entity
        "code": KetRagParams(context_limit=12000, max_relationships_per_seed=10, pool_mode="code"),
        "KET-RAG-P (β=0.8 on a full graph)": KetRagParams(skeleton_beta=0.8, core_selection="pagerank"),
        "KET-RAG-U (β=0.8 on a full graph)": KetRagParams(skeleton_beta=0.8, core_selection="random"),
    }

    def _config(self, p: KetRagParams) -> _Config:
        return _Config(p.context_limit, p.theta, p.seed_entities, p.text_unit_share, p.max_relationships_per_seed,
                       p.pool_factor, p.pool_mode, p.skeleton_beta, p.core_selection)


@register
class SkeletonRag(_Base):
    name: ClassVar[str] = "skeleton-rag"
    title: ClassVar[str] = "Skeleton-RAG (KET-RAG, skeleton channel only, θ=1)"
    Params: ClassVar[type] = SkeletonRagParams
    presets: ClassVar[dict[str, Any]] = {
        "default": SkeletonRagParams(),
        "paper": SkeletonRagParams(context_limit=12000),
        "β=0.8 on a full graph": SkeletonRagParams(skeleton_beta=0.8),
    }

    def _config(self, p: SkeletonRagParams) -> _Config:
        return _Config(p.context_limit, 1.0, p.seed_entities, p.text_unit_share, p.max_relationships_per_seed,
                       skeleton_beta=p.skeleton_beta, core_selection=p.core_selection)


@register
class KeywordRag(_Base):
    name: ClassVar[str] = "keyword-rag"
    title: ClassVar[str] = "Keyword-RAG (KET-RAG, keyword channel only, θ=0)"
    Params: ClassVar[type] = KeywordRagParams
    presets: ClassVar[dict[str, Any]] = {
        "default": KeywordRagParams(),
        "paper": KeywordRagParams(context_limit=12000),
        "code": KeywordRagParams(context_limit=12000, pool_mode="code"),
    }

    def _config(self, p: KeywordRagParams) -> _Config:
        return _Config(p.context_limit, 0.0, pool_factor=p.pool_factor, pool_mode=p.pool_mode)


@register
class KetFull(_Base):
    name: ClassVar[str] = "ket-full"
    title: ClassVar[str] = "KG-RAG local search (KET-RAG with β=1, θ=1)"
    Params: ClassVar[type] = KetFullParams
    presets: ClassVar[dict[str, Any]] = {
        "default": KetFullParams(),
        "paper": KetFullParams(context_limit=12000),
        "code": KetFullParams(context_limit=12000, max_relationships_per_seed=10),
    }

    def _config(self, p: KetFullParams) -> _Config:
        # skeleton_beta=1: every chunk's triples; on a β<1 graph the trace says the full KG is missing
        return _Config(p.context_limit, 1.0, p.seed_entities, p.text_unit_share, p.max_relationships_per_seed,
                       skeleton_beta=1.0)
