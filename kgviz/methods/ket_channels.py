"""The two retrieval channels of KET-RAG (paper 004, Algorithms 2 and 4), shared by ket-rag and
its variants (kgviz.methods.ket_rag, which documents the method and its parameters).

``retrieve_ket(question, ctx, KetRetrievalParams, tracer)`` runs the skeleton channel when θ > 0 and the
keyword channel when θ < 1; ``KetRetrievalParams`` carries the resolved parameters of any variant. The
keyword layer and vectors come from the in-memory views of kgviz.methods.ket_cache.

Both channels are algorithm plus narrator: the skeleton channel's ``_seeds``, ``_relationships`` and
``_text_units`` return the step records of Algorithm 2 lines 1-3, the keyword channel's
``_keyword_pool`` and ``_keyword_fill`` those of Algorithm 4 lines 2-4 (kgviz.methods.ket_records),
and kgviz.methods.ket_narrator turns them into the steps the player shows.

Each step that departs from Algorithms 1-4 says so in ``TraceStep.ours`` (``_mark_ket``): the
skeleton's entity and relationship texts on a graph without LLM-written descriptions (source
sentences and triple text, where Alg. 1 line 3 has descriptions; a graph built with an LLM has them,
kgviz.index.ket_describe, and then only the items left undescribed are marked), a lexical or hybrid
match mode, and the keyword rules of ours the index
was built with (read back from its ``ket.params``: the regex word split always; keyword_max_df,
min_word_len and the adaptive τ unless built with the index preset 'paper').
"""
from __future__ import annotations

import copy
import itertools
import math
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from kgviz.embedding import is_hashing
from kgviz.errors import MethodError
from kgviz.graph import memory_reads, reads
from kgviz.facts.triples import stated_fact
from kgviz.graph.protocol import GraphStore
from kgviz.graph.search import row_scores
from kgviz.index.ket import KetParams, core_ranking, ket_info, n_core
from kgviz.index.knn import content_words
from kgviz.methods.base import ContextItem, MethodContext, RetrievedContext, Tracer, TraceStep, mark_ours
from kgviz.methods.budget import stop_at_first_overflow
from kgviz.methods.ket_cache import KeywordView, keyword_view, named_entities, triple_cosines
from kgviz.methods.ket_descriptions import DescriptionView, description_view
from kgviz.methods.ket_narrator import (
    RRF_K, KeywordVoice, SkeletonVoice, end_table, narrate_fill, narrate_nothing, narrate_pool, narrate_ranking,
    narrate_relationships, narrate_seeds, narrate_text_units, shown_chunks,
)
from kgviz.methods.ket_params import KetRetrievalParams
from kgviz.methods.ket_records import (
    KeywordFill, KeywordPool, KeywordRanking, RankedRelationship, RankedUnit, SeedEntity, SeedKeyword, SkeletonEmpty,
    SkeletonRelationships, SkeletonSeeds, SkeletonTextUnits,
)
from kgviz.text import count_tokens
from kgviz.vectors import rrf, unit

_EPS = 1e-9


def _cosines(store: GraphStore, table: str, ids: list[str], qv: np.ndarray) -> dict[str, float]:
    embs = store.get_embeddings(table, ids)
    return {i: float(unit(np.asarray(embs[i], dtype=np.float32)) @ qv) if i in embs else 0.0 for i in ids}


@dataclass
class _Skeleton:
    """Which chunks the skeleton may use: None = every chunk (the KG as built)."""

    chunks: frozenset[str] | None
    label: str
    graph_beta: float
    warning: str = ""


@dataclass(frozen=True)
class _Units:
    """The text units Alg. 2 line 3 ranks: each unit's chunk, stored tokens, cosine to the question
    and lexical score (empty unless matching lexically), the linked chunks' titles, and the chunks'
    texts when the units are chunks (None: sub-chunks, whose texts are read once chosen)."""

    table: str  # SubChunk | Chunk
    chunk_of: dict[str, str]
    tokens: dict[str, int]
    cos: dict[str, float]
    lexical: dict[str, float]
    title: dict[str, str]
    chunk_text: dict[str, str] | None


@dataclass
class _Channel:
    items: list[ContextItem] = field(default_factory=list)
    used: int = 0


def _built_info(store: GraphStore) -> dict[str, Any]:
    """``ket_info``, read once per database state (two Meta scans per question before, issue 29);
    a copy, so no caller changes the one held."""
    return copy.deepcopy(store.derived("ket.info", ket_info))


def _skeleton_scope(store: GraphStore, cfg: KetRetrievalParams) -> _Skeleton:
    info = _built_info(store)
    built = float(info.get("skeleton_beta", 1.0)) if info else 1.0
    built_text = (f"the graph's KG covers β={built:g} of its chunks" if info
                  else "the graph has no KET index, so its KG covers every chunk (β=1)")
    short = (f"asked for a β={cfg.skeleton_beta:g} skeleton but {built_text}: the chunks outside it have no "
             f"triples, so this is effectively β={built:g}; rebuild with β=1 for the full KG")
    if cfg.skeleton_beta <= 0.0:
        return _Skeleton(None, f"skeleton as built ({built_text})", built)
    if cfg.skeleton_beta >= 1.0:
        return _Skeleton(None, f"full KG, β=1 ({built_text})", built, short if built < 1.0 - _EPS else "")
    built_selection = str(info.get("params", {}).get("selection", "pagerank")) if info else "pagerank"
    if built < 1.0 - _EPS and (cfg.skeleton_beta >= built - _EPS or cfg.core_selection != built_selection):
        # the graph already is a skeleton: a bigger β adds nothing (the other chunks have no triples),
        # and another ranking would intersect two selections, so the built skeleton is used as is
        why = (f"a {cfg.core_selection} β={cfg.skeleton_beta:g} skeleton is simulated only on a graph whose KG covers "
               f"more chunks, or as a smaller {built_selection} sub-skeleton of this one")
        return _Skeleton(None, f"skeleton as built ({built_text}, {built_selection}); {why}", built)
    seed = int(info.get("params", {}).get("seed", 42)) if info else 42
    # every chunk's rank read and sorted: once per database state, not per question (issue 29)
    chunks, n = store.derived(f"ket.simulated_skeleton|{cfg.skeleton_beta!r}|{cfg.core_selection}|{seed}",
                              partial(_simulated_core, beta=cfg.skeleton_beta, selection=cfg.core_selection, seed=seed))
    label = (f"simulated β={cfg.skeleton_beta:g} skeleton ({cfg.core_selection}: {len(chunks)} of {n} chunks; "
             f"{built_text})")
    return _Skeleton(chunks, label, built)


def _simulated_core(store: GraphStore, *, beta: float, selection: str, seed: int) -> tuple[frozenset[str], int]:
    """(the first ceil(β·n) chunks by ``selection``, n): Algorithm 3 line 8 over the stored ranks."""
    rows = reads.chunk_ranks(store)
    if any(r["pr"] is None for r in rows) and selection == "pagerank":
        raise MethodError("skeleton_beta needs every chunk's PageRank, and some chunks have none (the graph has no "
                          "KET index, or documents were added by a build without KET)",
                          hint="build with KET enabled, or set skeleton_beta to 0 (the skeleton as built)")
    ids = [r["id"] for r in rows]
    ranking = core_ranking(ids, [r["pr"] or 0.0 for r in rows], selection, seed)
    return frozenset(ranking[: n_core(len(ids), beta)]), len(ids)


def _seed_entities(store: GraphStore, qv: np.ndarray, cfg: KetRetrievalParams, scope: _Skeleton, named: list[str],
                   dv: DescriptionView | None = None
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, set[str]]]:
    """(seeds best first, skipped candidates, entity -> chunks mentioning it in scope). ``named``:
    entities the question names (entity_match lexical), taken before the nearest by cosine. With
    LLM-written descriptions (``dv``, Alg. 1 line 3) an entity's cosine is its description's; an
    entity the LLM did not describe keeps the cosine of its name and source sentences."""
    fetch = max(3 * cfg.seed_entities, 30)
    named_cos = _cosines(store, "Entity", named, qv) if named else {}
    described = dv.nearest_entities(qv) if dv is not None else []
    if dv is not None:
        named_cos.update(dv.cosines(named, qv))
    while True:
        near = store.vector_search("Entity", qv, fetch)
        if dv is not None:  # described entities by their description, the others as before
            near = sorted(described + [(e, x) for e, x in near if dv.text(e) is None],
                          key=lambda ex: (-ex[1], ex[0]))[:fetch]
        hits = [(e, named_cos[e]) for e in named] + [(e, x) for e, x in near if e not in named_cos]
        info = {r["id"]: r for r in memory_reads.entities_with_chunks(store, [e for e, _ in hits])}
        chunks: dict[str, set[str]] = {}
        for e, r in info.items():
            mine = {c for c in r["chunks"] or () if c and (scope.chunks is None or c in scope.chunks)}
            if mine:
                chunks[e] = mine
        seeds: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        for e, score in hits:
            row = info.get(e)
            if row is None:
                continue
            ent = {**{k: v for k, v in row.items() if k != "chunks"}, "score": score}  # chunks: kept above
            in_scope = row["origin"] != "curated" and (scope.chunks is None or e in chunks)
            (seeds if in_scope and len(seeds) < cfg.seed_entities else skipped).append(ent)
        if len(seeds) >= cfg.seed_entities or len(near) < fetch:
            return seeds, skipped, chunks
        fetch *= 4


def _entity_text(e: dict[str, Any], dv: DescriptionView | None = None) -> str:
    """The entity as the context states it: its name and description, the LLM-written one when the
    graph has it (Alg. 1 line 3), else its source sentences (ours)."""
    llm = dv.text(e["id"]) if dv is not None else None
    desc = (llm if llm is not None else e.get("description") or "").strip()
    return f"{e['name']}: {desc}" if desc else str(e["name"])


def match_mode(choice: str, embedder_id: str, *, channel: str) -> str:
    """How a channel matches: 'embedding', 'lexical' or 'hybrid' (``keyword_match`` /
    ``entity_match``). 'auto' is 'lexical' with the hashing embedder, whose cosines rank passages well
    below BM25; with a neural one it is the paper's 'embedding' in the keyword channel and 'hybrid'
    in the skeleton channel (``channel`` 'keyword' / 'entity'; measured, see kgviz.methods.ket_params)."""
    if choice != "auto":
        return choice
    if is_hashing(embedder_id):
        return "lexical"
    return "hybrid" if channel == "entity" else "embedding"


def _fused(bm25: dict[str, float], cos: dict[str, float]) -> dict[str, float]:
    """Reciprocal rank fusion of a BM25 and a cosine ranking of the same ids (ties by id), the
    'hybrid' match mode's score (ours, as text-rag's hybrid retriever)."""
    ids = sorted(cos)
    by_bm25 = sorted(ids, key=lambda i: -bm25.get(i, 0.0))
    by_cos = sorted(ids, key=lambda i: -cos[i])
    return {i: round(x, 9) for i, x in rrf([by_bm25, by_cos], RRF_K).items()}


class _KetEngine:
    def __init__(self, store: GraphStore, qv: np.ndarray, cfg: KetRetrievalParams, tracer: Tracer, *,
                 question: str = "", keyword_mode: str = "embedding", entity_mode: str = "embedding") -> None:
        self.store, self.qv, self.cfg, self.tracer = store, qv, cfg, tracer
        self.question, self.keyword_mode, self.entity_mode = question, keyword_mode, entity_mode
        self._bm25: tuple[list[int], np.ndarray] | None = None
        # the skeleton's LLM-written descriptions (Alg. 1 line 3), None on a graph without them
        self.descriptions = description_view(store)

    # 'lexical' and 'hybrid' both read the question's own words (seeds); 'hybrid' then fuses the
    # BM25 ranking with the cosine one instead of ranking by BM25 alone
    @property
    def lexical(self) -> bool:
        return self.keyword_mode != "embedding"

    @property
    def lexical_entities(self) -> bool:
        return self.entity_mode != "embedding"

    def _not_described(self, chosen: Sequence[str]) -> tuple[str, ...]:
        """The chosen items without an LLM-written description (none on a graph without them)."""
        dv = self.descriptions
        return () if dv is None else tuple(x for x in chosen if dv.text(x) is None)

    def question_bm25(self, view: KeywordView) -> tuple[list[int], np.ndarray]:
        """The question's keywords (rows of ``view``, rarest first) and the BM25 of every sub-chunk
        over them: computed once per run, since both channels rank by it in lexical mode."""
        if self._bm25 is None:
            asked = view.question_keywords(content_words(self.question))
            self._bm25 = (asked, view.bm25(asked))
        return self._bm25

    # -- skeleton channel (Algorithm 2 on G_s) ------------------------------------------------------
    def skeleton(self, scope: _Skeleton) -> _Channel:
        """Algorithm 2 lines 1-3 on the skeleton as three step records, each narrated by
        kgviz.methods.ket_narrator."""
        dv = self.descriptions
        voice = SkeletonVoice(self.lexical_entities, self.entity_mode, self.cfg.entity_match, scope.label,
                              scope.graph_beta, scope.warning, None if dv is None else dv.info.get("prompt", ""))
        ch = _Channel()
        seeds, ent_chunks = self._seeds(scope, ch)
        narrate_seeds(self.tracer, seeds, voice)
        if not seeds.chosen:
            narrate_nothing(self.tracer, SkeletonEmpty(ch.used, self.cfg.skeleton_budget))
            return ch
        rels, rel_chunks = self._relationships(seeds, ch, scope)
        narrate_relationships(self.tracer, rels, voice)
        units, titles = self._text_units(seeds, rels, rel_chunks, ent_chunks, ch, scope)
        narrate_text_units(self.tracer, units, rels, voice, titles,
                           self._link_labels({c: units.linked.get(c, ()) for c in shown_chunks(units)}, rels))
        return ch

    def _seeds(self, scope: _Skeleton, ch: _Channel) -> tuple[SkeletonSeeds, dict[str, set[str]]]:
        """Alg. 2 line 1: the seed entities, then their texts while they fit the entity+relationship
        half. Also each entity's chunks in the skeleton."""
        cfg, dv = self.cfg, self.descriptions
        er_budget = int(math.floor(cfg.skeleton_budget * (1.0 - cfg.text_unit_share) + _EPS))
        named = named_entities(self.store, self.question) if self.lexical_entities else []
        seeds, skipped, ent_chunks = _seed_entities(self.store, self.qv, cfg, scope, named, dv)
        sized = [(e["id"], count_tokens(_entity_text(e, dv))) for e in seeds]
        chosen, over, ch.used = stop_at_first_overflow(sized, er_budget)
        by_id = {e["id"]: e for e in seeds + skipped}
        for eid in chosen:
            text = _entity_text(by_id[eid], dv)
            ch.items.append(ContextItem(eid, "entity", text, by_id[eid]["score"], count_tokens(text)))

        def seed(e: dict[str, Any]) -> SeedEntity:
            return SeedEntity(e["id"], e["name"], e["score"], e["origin"], e["id"] in ent_chunks)
        return SkeletonSeeds(cfg.seed_entities, tuple(seed(e) for e in seeds), tuple(seed(e) for e in skipped),
                             tuple(named), tuple(sized), tuple(chosen), tuple(over), ch.used, cfg.skeleton_budget,
                             er_budget, self._not_described(chosen)), ent_chunks

    def _relationships(self, seeds: SkeletonSeeds, ch: _Channel, scope: _Skeleton
                       ) -> tuple[SkeletonRelationships, dict[str, set[str]]]:
        """Alg. 2 line 2: the seeds' relationships in the skeleton ranked by adjacency to the seeds,
        then the other end's links to seeds, then cosine; taken while they fit the rest of the
        entity+relationship half. Also each chosen relationship's chunks."""
        store, cfg, dv = self.store, self.cfg, self.descriptions
        seed_set = set(seeds.chosen)
        rows = {r["id"]: r for r in memory_reads.triples_at_entities(store, sorted(seed_set)) if r["origin"] != "curated"}
        t_chunks: dict[str, set[str]] = {}
        for link in memory_reads.triple_chunks(store, list(rows)):
            t_chunks.setdefault(link["tid"], set()).add(link["cid"])
        if scope.chunks is not None:
            rows = {t: r for t, r in rows.items() if t_chunks.get(t, set()) & scope.chunks}
        cos = triple_cosines(store, list(rows), self.qv)
        if dv is not None:  # a described relationship ranks by its description's cosine (Alg. 1 line 3)
            cos.update(dv.cosines(list(rows), self.qv))
        adj = {t: (r["s"] in seed_set) + (r["o"] in seed_set) for t, r in rows.items()}
        links: dict[str, set[str]] = {}  # non-seed end -> seeds it is linked to
        for t, r in rows.items():
            for end, other in ((r["s"], r["o"]), (r["o"], r["s"])):
                if other in seed_set and end not in seed_set:
                    links.setdefault(end, set()).add(other)
        other_links = {t: len(links.get(r["o"] if r["s"] in seed_set else r["s"], ())) if adj[t] == 1 else 2
                       for t, r in rows.items()}
        order = sorted(rows, key=lambda t: ((-adj[t], -other_links[t], -cos[t]), t))
        kept, capped = order, []
        if cfg.max_relationships_per_seed > 0:
            cap = cfg.max_relationships_per_seed * len(seed_set)
            kept, capped = order[:cap], order[cap:]
        stated = {t: stated_fact(rows[t]["text"] or "", rows[t].get("kind"), rows[t].get("sentence")) for t in kept}
        if dv is not None:
            stated = {t: f"{x}: {dv.text(t)}" if dv.text(t) else x for t, x in stated.items()}
        tokens = {t: count_tokens(stated[t]) for t in kept}
        room = seeds.entity_relationship_budget - ch.used
        chosen, over, used = stop_at_first_overflow([(t, tokens[t]) for t in kept], room)
        ch.used += used
        for t in chosen:
            ch.items.append(ContextItem(t, "triple", stated[t], cos[t], tokens[t], source=rows[t]["chunk_id"] or ""))
        ranked = tuple(RankedRelationship(t, r["text"] or "", r["s"], r["o"], r["sname"] or "", r["oname"] or "",
                                          r["relation"] or "", adj[t], other_links[t], cos[t], tokens.get(t))
                       for t, r in ((t, rows[t]) for t in order))
        record = SkeletonRelationships(tuple(seeds.chosen), ranked, tuple(chosen), tuple(over), tuple(capped),
                                       cfg.max_relationships_per_seed, room, ch.used, cfg.skeleton_budget,
                                       seeds.entity_relationship_budget, self._not_described(chosen))
        return record, {t: t_chunks.get(t, set()) for t in chosen}

    def _text_units(self, seeds: SkeletonSeeds, rels: SkeletonRelationships, rel_chunks: dict[str, set[str]],
                    ent_chunks: dict[str, set[str]], ch: _Channel, scope: _Skeleton
                    ) -> tuple[SkeletonTextUnits, dict[str, str]]:
        """Alg. 2 line 3: the text units of the chunks linked to S_e ∪ S_r, ranked by how many of
        them their chunk is linked to (BM25 first when matching lexically), then cosine; taken while
        they fit the rest of θ·λ. Also each linked chunk's title."""
        linked, hop = self._linked_chunks(seeds, rels, rel_chunks, ent_chunks, scope)
        pool = self._unit_pool(linked)
        units, lexical, cos, tokens = pool.chunk_of, pool.lexical, pool.cos, pool.tokens
        order = sorted(units, key=lambda u: (-lexical.get(u, 0.0), -len(linked.get(units[u], ())), -cos[u], u))
        room = self.cfg.skeleton_budget - ch.used
        chosen, over, _ = stop_at_first_overflow([(u, tokens[u]) for u in order], room)
        texts = (memory_reads.subchunk_texts(self.store, chosen) if pool.chunk_text is None
                 else {c: pool.chunk_text[c] for c in chosen})
        kept, late, used = stop_at_first_overflow([(u, count_tokens(texts.get(u, ""))) for u in chosen], room)
        chosen, over = kept, late + over  # the stored counts are count_tokens of the same text: a no-op guard
        ch.used += used
        kind = "subchunk" if pool.table == "SubChunk" else "chunk"
        for u in chosen:
            ch.items.append(ContextItem(u, kind, texts[u], cos[u], count_tokens(texts[u]),
                                        source=pool.title.get(units[u], "")))
        relationships, seed_set = set(rels.chosen), set(seeds.chosen)

        def link_rank(x: str) -> tuple[int, str]:  # chosen relationships first, then seeds, then one hop out
            return (0 if x in relationships else 1 if x in seed_set else 2, x)
        ranked = tuple(RankedUnit(u, units[u], lexical[u] if lexical else None, len(linked.get(units[u], ())), cos[u],
                                  tokens[u]) for u in order)
        record = SkeletonTextUnits(pool.table, len(linked), hop,
                                   {c: tuple(sorted(xs, key=link_rank)) for c, xs in sorted(linked.items())},
                                   ranked, tuple(chosen), tuple(over), room, ch.used, self.cfg.skeleton_budget,
                                   tuple(i.id for i in ch.items))
        return record, pool.title

    def _linked_chunks(self, seeds: SkeletonSeeds, rels: SkeletonRelationships, rel_chunks: dict[str, set[str]],
                       ent_chunks: dict[str, set[str]], scope: _Skeleton) -> tuple[dict[str, set[str]], int]:
        """Each skeleton chunk linked to S_e ∪ S_r with the items that link it, and how many of them
        were reached one hop out (lexical / hybrid entity_match, ours)."""
        linked: dict[str, set[str]] = {}
        for e in seeds.chosen:
            for c in ent_chunks.get(e, ()):
                linked.setdefault(c, set()).add(e)
        for t in rels.chosen:
            for c in rel_chunks[t]:
                if scope.chunks is None or c in scope.chunks:
                    linked.setdefault(c, set()).add(t)
        hop = self._one_hop_out(seeds.chosen, rels, linked, scope) if self.lexical_entities else 0
        return linked, hop

    def _unit_pool(self, linked: Mapping[str, set[str]]) -> _Units:
        """The text units of the linked chunks: their sub-chunks, with the keyword view's vectors and
        (lexical / hybrid entity_match) BM25 over the question's keywords; on a graph without
        sub-chunks the chunks themselves."""
        store = self.store
        view = keyword_view(store)
        rows = [i for c in sorted(linked) for i in view.by_chunk.get(c, [])] if view is not None else []
        if rows and view is not None:
            sims = view.sub_matrix[rows] @ self.qv
            cos = {view.sub_ids[i]: float(x) for i, x in zip(rows, sims.tolist())}
            lexical: dict[str, float] = {}
            if self.lexical_entities:
                bm = self.question_bm25(view)[1]
                lexical = {view.sub_ids[i]: round(float(bm[i]), 6) for i in rows}
                if self.entity_mode == "hybrid":
                    lexical = _fused(lexical, cos)
            return _Units("SubChunk", {view.sub_ids[i]: view.sub_chunk[i] for i in rows},
                          {view.sub_ids[i]: int(view.sub_tokens[i]) for i in rows}, cos, lexical,
                          {c: view.title(c) for c in linked}, None)
        chunk_rows = {r["id"]: r for r in memory_reads.chunks(store, sorted(linked))}
        return _Units("Chunk", {c: c for c in chunk_rows}, {c: count_tokens(r["text"] or "") for c, r in chunk_rows.items()},
                      _cosines(store, "Chunk", list(chunk_rows), self.qv), {},
                      {c: r["title"] for c, r in chunk_rows.items()}, {c: r["text"] or "" for c, r in chunk_rows.items()})

    def _link_labels(self, links: Mapping[str, Sequence[str]], rels: SkeletonRelationships) -> dict[str, list[str]]:
        """Each chunk's links as a reader names them (the step panel shows them): a relationship as
        'subject — relation — object', an entity by its name."""
        chosen = {r.id: r for r in rels.ranked if r.id in set(rels.chosen)}
        names: dict[str, str] = {}
        for r in chosen.values():
            names.setdefault(r.subject, r.subject_name or r.subject)
            names.setdefault(r.object, r.object_name or r.object)
        rest = sorted({x for xs in links.values() for x in xs if x not in chosen and x not in names
                       and end_table(x) == "Entity"})
        names.update({r["id"]: str(r["name"] or r["id"]) for r in memory_reads.entities(self.store, rest)} if rest else {})

        def label(x: str) -> str:
            r = chosen.get(x)
            if r is None:
                return names.get(x, x)
            return f"{names.get(r.subject, r.subject)} — {r.relation or 'related to'} — {names.get(r.object, r.object)}"
        return {c: [label(x) for x in xs] for c, xs in links.items()}

    def _one_hop_out(self, seeds: Sequence[str], rels: SkeletonRelationships, linked: dict[str, set[str]],
                     scope: _Skeleton) -> int:
        """Add to ``linked`` the chunks that mention the other end of each chosen relationship (ours,
        lexical mode): a multi-hop question's answer sits in a passage about the bridge entity,
        which the seed's own chunks rarely hold. Returns how many chunks this added."""
        chosen = set(rels.chosen)
        ends = sorted({x for r in rels.ranked if r.id in chosen for x in (r.subject, r.object)} - set(seeds))
        before = len(linked)
        for r in memory_reads.entities_with_chunks(self.store, [e for e in ends if end_table(e) == "Entity"]):
            for c in r.get("chunks") or ():
                if c and (scope.chunks is None or c in scope.chunks):
                    linked.setdefault(c, set()).add(r["id"])
        return len(linked) - before

    # -- keyword channel (Algorithm 4 lines 2-4) ----------------------------------------------------
    def keyword(self, skip: set[str]) -> _Channel:
        """Algorithm 4 lines 2-4 as three step records, each narrated by kgviz.methods.ket_narrator."""
        view = _keyword_index(self.store)
        voice = KeywordVoice(self.lexical, self.keyword_mode, self.cfg.keyword_match)
        pool, ranking = self._keyword_pool(view)
        label = {sid: view.label(sid) for sid in ranking.ranked}
        narrate_pool(self.tracer, pool, voice)
        narrate_ranking(self.tracer, ranking, pool, voice, label)
        ch, fill = self._keyword_fill(view, pool, ranking, skip)
        narrate_fill(self.tracer, fill, ranking, pool, voice, label)
        return ch

    def _keyword_pool(self, view: KeywordView) -> tuple[KeywordPool, KeywordRanking]:
        """Alg. 4 line 2 (seed keywords until their sub-chunks hold the pool budget) and line 3
        (rank the pool's sub-chunks), sharing the sub-chunk cosines."""
        cfg = self.cfg
        pool_budget = int(math.floor(cfg.pool_factor * cfg.keyword_budget + _EPS))
        kw_sims = row_scores(view.kw_matrix, self.qv)
        order = view.keyword_order(kw_sims)
        lexical: np.ndarray | None = None  # BM25 of every sub-chunk, when matching lexically
        asked: list[int] = []  # the question's own keywords (lexical), rarest first
        if self.lexical:
            asked, lexical = self.question_bm25(view)
            taken_first = set(asked)
            order = itertools.chain(asked, (k for k in order if k not in taken_first))
        sub_sims: dict[int, float] = {}

        def sims_of(rows: np.ndarray) -> np.ndarray:
            new = [r for r in rows.tolist() if r not in sub_sims]
            if new:
                sub_sims.update(zip(new, (view.sub_matrix[new] @ self.qv).tolist()))
            return np.asarray([sub_sims[r] for r in rows.tolist()])
        seen, pool, via, pool_tokens = self._fill_pool(view, order, pool_budget, sims_of)

        def keyword(k: int) -> SeedKeyword:
            return SeedKeyword(view.kw_ids[k], view.kw_words[k], float(kw_sims[k]))
        ids = {row: view.sub_ids[row] for row in pool}
        seeds = KeywordPool(
            seeds=tuple(keyword(k) for k in seen),
            next_keywords=tuple(keyword(k) for _, k in zip(range(3), order)),  # the next ones, not needed
            asked=tuple(view.kw_words[k] for k in asked), pool=tuple((ids[row], n) for row, n in pool.items()),
            via={ids[row]: tuple(view.kw_ids[k] for k in ks) for row, ks in via.items()},
            tokens=pool_tokens, budget=pool_budget, pool_mode=cfg.pool_mode)
        return seeds, self._rank_pool(view, ids, sims_of, lexical)

    def _fill_pool(self, view: KeywordView, order: Iterator[int], pool_budget: int, sims_of: Callable[[np.ndarray], np.ndarray]
                   ) -> tuple[list[int], dict[int, int], dict[int, list[int]], int]:
        """Alg. 4 line 2's loop: keywords taken from ``order`` (left just past the last one taken)
        until their sub-chunks hold ``pool_budget`` tokens. Returns the keyword rows taken, the pool
        (sub-chunk row -> tokens, in the order added), the keyword rows that brought each sub-chunk,
        and the pool's tokens."""
        code = self.cfg.pool_mode == "code"
        pool: dict[int, int] = {}
        via: dict[int, list[int]] = {}
        pool_tokens, full = 0, False
        seen: list[int] = []
        for kw in order:
            seen.append(kw)
            nbrs = view.neighbours(kw)
            if code:  # best sub-chunks first; rows are in id order for ties
                nbrs = nbrs[np.lexsort((nbrs, -sims_of(nbrs)))]
            for row in nbrs.tolist():
                if row in pool:
                    via[row].append(kw)
                    continue
                n = int(view.sub_tokens[row])
                if code and pool_tokens + n > pool_budget:
                    full = True
                    break
                pool[row], via[row] = n, [kw]
                pool_tokens += n
            if full or pool_tokens >= pool_budget:
                break
        return seen, pool, via, pool_tokens

    def _rank_pool(self, view: KeywordView, ids: dict[int, str], sims_of: Callable[[np.ndarray], np.ndarray],
                   lexical: np.ndarray | None) -> KeywordRanking:
        """Alg. 4 line 3: the pool's sub-chunks (``ids``: row -> id, in the order added) ranked by
        cosine (the paper), BM25 with cosine breaking ties (lexical), or both rankings fused by
        reciprocal rank (hybrid)."""
        rows = np.asarray(list(ids), dtype=np.int64)
        cos = {ids[row]: float(x) for row, x in zip(rows.tolist(), sims_of(rows).tolist())}
        score = cos if lexical is None else {ids[row]: round(float(lexical[row]), 6) for row in ids}
        if self.keyword_mode == "hybrid":
            score = _fused(score, cos)
        ranked = sorted(cos, key=lambda sid: (-score[sid], -cos[sid], sid))
        bm25 = None if lexical is None else {sid: float(lexical[view.sub_index[sid]]) for sid in ranked}
        return KeywordRanking(tuple(ranked), score, cos, bm25)

    def _keyword_fill(self, view: KeywordView, pool: KeywordPool, ranking: KeywordRanking,
                      skip: set[str]) -> tuple[_Channel, KeywordFill]:
        """Alg. 4 line 4: the best-ranked sub-chunks not in the skeleton channel, while they fit."""
        ch, budget = _Channel(), self.cfg.keyword_budget
        tokens = dict(pool.pool)
        fresh = [sid for sid in ranking.ranked if sid not in skip]
        chosen, over, _ = stop_at_first_overflow([(sid, tokens[sid]) for sid in fresh], budget)
        texts = memory_reads.subchunk_texts(self.store, chosen)
        kept, late, ch.used = stop_at_first_overflow([(sid, count_tokens(texts.get(sid, ""))) for sid in chosen], budget)
        chosen, over = kept, late + over  # stored counts are count_tokens of the same text: a no-op guard
        for sid in chosen:
            ch.items.append(ContextItem(sid, "subchunk", texts[sid], ranking.score[sid], count_tokens(texts[sid]),
                                        source=view.title(view.sub_chunk[view.sub_index[sid]])))
        dup = tuple(sid for sid in ranking.ranked if sid in skip)
        return ch, KeywordFill(tuple(chosen), tuple(over), tuple(fresh), dup, tokens, ch.used, budget)


def _keyword_index(store: GraphStore) -> KeywordView:
    view = keyword_view(store)
    if view is None or not view.kw_ids:
        raise MethodError("this graph has no KET keyword index (no Keyword nodes)",
                          hint="rebuild with KET enabled (the default; not --no-ket), or use skeleton-rag / θ = 1")
    return view


# The "ours" marks of a KET trace (TraceStep.ours): where a step departs from Algorithms 1-4, and why
OURS_ENTITY_TEXT = ("an entity is embedded from its name and source sentences, not an LLM-written description "
                    "(Alg. 1 line 3): this graph has none (built offline, or with ket_descriptions off)")
OURS_RELATIONSHIP_TEXT = ("a relationship is its triple's text, not an LLM-written description (Alg. 1 line 3): "
                          "this graph has none (built offline, or with ket_descriptions off)")


def _undescribed(step: TraceStep, what: str, default: str) -> str:
    """The skeleton step's mark for its texts: none when every chosen item carries an LLM-written
    description, the count when some do not (their call failed, or the reply left them out or was
    not grounded in the chunk), ``default`` on a graph without descriptions."""
    if step.data.get("descriptions") != "llm":
        return default
    missing = step.data.get("not_described") or []
    return (f"{len(missing)} chosen {what} have no LLM-written description (the model left them out, its reply "
            "was not grounded in the chunk, or the call failed): their source text stands in (Alg. 1 line 3)"
            if missing else "")
OURS_TOKENIZER = "keywords are the words a regex split finds, minus stop words (the paper does not say how it tokenizes)"


def _index_ours(info: dict[str, Any]) -> tuple[list[str], str]:
    """(keyword-layer reasons, sub-chunk reason) for the KET index the graph was built with
    (ket.params; a field an older build did not store had its default then)."""
    built = {**asdict(KetParams()), **info.get("params", {})}
    keyword = [OURS_TOKENIZER]
    if float(built["keyword_max_df"]) < 1.0:
        keyword.append(f"words in more than max({float(built['keyword_max_df']):g} of the sub-chunks, "
                       f"{built['keyword_df_floor']}) are no keywords (keyword_max_df; the paper keeps every non-stop word)")
    if int(built["min_word_len"]) > 1:
        keyword.append(f"words under {built['min_word_len']} characters are no keywords (min_word_len; the paper keeps "
                       "every non-stop word)")
    adaptive = built["tau"] is None and bool(built["adaptive_tau"])
    sub = ("sub-chunks halved only while that brings them nearer ~150 tokens (adaptive τ; Alg. 3 line 10 halves "
           "every chunk τ times)") if adaptive else ""
    return keyword, sub


def _mark_ket(steps: list[TraceStep], cfg: KetRetrievalParams, engine: "_KetEngine", info: dict[str, Any]) -> None:
    keyword_rules, sub_rule = _index_ours(info)
    entity_match = (f"entity_match '{cfg.entity_match}' ({engine.entity_mode}): the entities the question names first"
                    if engine.lexical_entities else "")
    keyword_match = (f"keyword_match '{cfg.keyword_match}' ({engine.keyword_mode}): the question's own keywords "
                     "first, sub-chunks by BM25" if engine.lexical else "")
    for s in steps:
        channel, title = s.data.get("channel"), s.title
        if channel == "skeleton" and s.kind == "seed":
            mark_ours(s, _undescribed(s, "entities", OURS_ENTITY_TEXT),
                      entity_match and entity_match + " (Alg. 2 line 1 ranks by distance only)")
        elif channel == "skeleton" and s.kind == "select":
            mark_ours(s, _undescribed(s, "relationships", OURS_RELATIONSHIP_TEXT))
        elif channel == "skeleton" and title.endswith("text units"):
            mark_ours(s, entity_match and f"entity_match '{cfg.entity_match}': text units ranked by BM25, with chunks "
                                          "one hop out (Alg. 2 line 3 ranks by adjacency)")
        elif channel == "keyword" and s.kind == "seed":
            mark_ours(s, *keyword_rules, keyword_match and keyword_match + " (Alg. 4 line 2 seeds by cosine)")
        elif channel == "keyword" and s.kind == "score":
            mark_ours(s, sub_rule, keyword_match and keyword_match + " (Alg. 4 line 3 ranks by cosine)")
        elif channel == "keyword" and s.kind == "context" and s.data.get("already_in_skeleton"):
            mark_ours(s, "a sub-chunk the skeleton channel already chose is not repeated (the paper is silent)")


def retrieve_ket(question: str, ctx: MethodContext, cfg: KetRetrievalParams, tracer: Tracer) -> RetrievedContext:
    """Algorithm 4: the skeleton channel (when θ > 0), then the keyword channel (when θ < 1)."""
    store = ctx.store
    qv = unit(np.asarray(ctx.embedder.embed([question])[0], dtype=np.float32))
    embedder_id = str(getattr(ctx.embedder, "id", ""))
    engine = _KetEngine(store, qv, cfg, tracer, question=question,
                        keyword_mode=match_mode(cfg.keyword_match, embedder_id, channel="keyword"),
                        entity_mode=match_mode(cfg.entity_match, embedder_id, channel="entity"))
    if cfg.keyword_budget > 0:
        _keyword_index(store)  # the missing index is the error to report, not a skeleton-channel symptom
    skel, kw = _Channel(), _Channel()
    first = len(tracer.steps)
    scope_label = ""
    try:
        if cfg.skeleton_budget > 0:
            scope = _skeleton_scope(store, cfg)
            scope_label = scope.label
            skel = engine.skeleton(scope)
        if cfg.keyword_budget > 0:
            kw = engine.keyword({i.id for i in skel.items})
    finally:  # a run that fails part-way still marks the steps it recorded
        _mark_ket(tracer.steps[first:], cfg, engine, _built_info(store))
    items = skel.items + kw.items
    note = (f"θ={cfg.theta:g}, λ={cfg.limit}: skeleton channel {skel.used}/{cfg.skeleton_budget} tokens"
            + (f" ({scope_label})" if scope_label else "")
            + f"; keyword channel {kw.used}/{cfg.keyword_budget} tokens")
    return RetrievedContext(items=items, node_ids=[i.id for i in items], notes={cfg.variant: note})
