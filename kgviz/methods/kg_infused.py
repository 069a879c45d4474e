"""`kg-infused`: KG-Infused RAG (paper 003) — spreading activation over a KG, KG-based query
expansion, KG-augmented notes.

Pipeline (paper section → what kgviz does):

1. KG source (ours). The paper uses a curated KG (Wikidata5M-KG, §3.3). kgviz uses an imported
   curated KG (entities with origin 'curated') when there is one, else the graph built from the
   corpus (origin 'corpus'); ``kg_source`` forces either. Every graph query stays inside that
   origin.
2. Seed entities (§3.4, Eq. 3–4): top ``k_e`` entities by similarity of the question to the
   entity embeddings (Entity.emb: name + description as embedded at build/import time).
3. Spreading activation (§3.4), at most ``max_rounds`` rounds. Each round: the active entities'
   one-hop triples (RELATED edges; outgoing, since the paper spreads from head entities, App. B;
   over the corpus graph also incoming by default, see ``direction``), at most
   ``max_triples_per_entity`` each, minus triples already in the memory → triple
   selection (task ``kginf_select_triples``; Table 12 in round 1, Table 13 afterwards) → the
   activation memory takes the selected triples (Eq. 5) → the next entities are the selected
   triples' tail entities not activated yet (Eq. 6), at most ``max_entities_per_round``. It stops
   when no new entity remains or after ``max_rounds`` rounds.
4. Subgraph summary (Table 14, task ``kginf_summarize``) of all selected triples.
5. KG-based query expansion (§3.5, Table 15, task ``kginf_expand_query``): q' from q + summary.
6. Dual retrieval (§3.5 Eq. 8 with App. C.2's de-duplication): the top ⌊k_p/2⌋ chunks for q; the
   top k_p for q', of which the first k_p − ⌊k_p/2⌋ not already retrieved for q are kept. If q'
   finds fewer new chunks the set is smaller (as in the authors' code), and the trace says so.
7. Passage note (Table 11, task ``kginf_passage_note``) over the merged passages, then the
   KG-augmented note (Table 16, task ``kginf_kg_note``) from the passage note + summary.
8. Context: the KG-augmented note only — the paper's generator sees q and the enhanced note
   (Eq. 11). ``context_passages`` also hands over the passages and triples (ours).
9. Equal budget (ours): with ``budget_tokens`` B > 0 the method fills B like every other method
   in an equal-budget evaluation instead of stopping at its note. The note is unchanged (built from
   the k_p passages); the question's and the expanded query's rankings are read further, each
   filling half of the room B leaves (new passages only, skip-and-continue), and the context is
   the note followed by the passages. So the second half of the context is what the KG-based
   expansion found, which is the paper's point, at the same size as the baselines.

"Ours" marks (TraceStep.ours): the seed step over the corpus graph, an expand step that follows
incoming edges or caps by similarity, a frontier with heads reached along incoming edges, passage
search other than dense, the equal-budget step and a context with passages.

Trace: seed (KG source + seed entities) → per round: expand (candidate triples) → select →
expand (activation frontier) … → llm (summary) → llm (expanded query) → seed (dual retrieval) →
llm (passage note) → llm (KG note) → context. Each stage here decides and returns a typed step
record naming the paper line it implements (``kgviz.methods.kg_infused_records``);
``kgviz.methods.kg_infused_narrator`` holds the words that turn the records into those steps.

Presets: "paper" (2 rounds as in the main results, dense passage retrieval, activation head -> tail
only: nothing of ours the paper defines; over a graph without a curated KG the seed step's "ours"
mark says it spreads over the corpus graph) and "code" (the
authors' run script: 3 rounds, per-entity cap by random sampling). The two caps are named but not
valued in the paper (§4.3.1); their values come from the authors' code (10 entities/round, 50
triples/entity). The defaults equal "paper" except passage_search='auto' (ours: BM25 with the
offline hashing embedder, whose dense-only retrieval loses to BM25, hybrid dense + BM25 with a
neural one; on 2Wiki the merged six passages hold the gold answer for 58% of questions dense-only
and 70% hybrid with the hashing embedder).
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar, Iterable, Literal, Mapping

import numpy as np

from kgviz.embedding import Embedder, is_hashing
from kgviz.errors import MethodError
from kgviz.graph import memory_reads, reads
from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import ChunkRow
from kgviz.methods import kg_infused_narrator as N
from kgviz.methods.budget import skip_and_continue
from kgviz.methods.base import ContextItem, MethodContext, RetrievedContext, Tracer, check_params, param, register
from kgviz.methods.kg_infused_records import (
    BudgetFill, AnswerInput, DualRetrieval, EntityCap, Fact, Frontier, KgNote, Named, Passage, PassageNote,
    QueryExpansion, RoundCandidates, Seed, SeedEntities, StopRule, SubgraphSummary, TripleSelection,
)
from kgviz.task_results import KgInfusedSelection
from kgviz.vectors import rrf
from kgviz.text import count_tokens


NOTE_ID = "note:kg-infused"
Hits = list[tuple[str, float]]  # (chunk id, score), best first
BUDGET_TOKENS_PER_HIT = 25  # ours: with budget_tokens B, rankings are read B/25 passages deep (short passages)
KgSource = Literal["curated", "corpus", "auto"]
PassageSearch = Literal["auto", "hybrid", "dense", "bm25"]
TripleCap = Literal["similarity", "random"]
Direction = Literal["out", "both", "auto"]


@dataclass(frozen=True)
class KGInfusedParams:
    kg_source: KgSource = param("auto", label="Knowledge graph used",
                                doc="'curated' | 'corpus' | 'auto' (curated when a KG is imported). The paper "
                                    "uses the curated Wikidata5M-KG (§3.3); spreading over the corpus graph is ours")
    k_e: int = param(3, label="Seed entities (kₑ)", min=1,
                     doc="seed entities: top-k_e by similarity to entity descriptions (§3.4 Eq. 4; "
                         "k_e = 3, §4.3.1)")
    max_rounds: int = param(2, label="Activation rounds", min=1,
                            doc="most spreading-activation rounds (§3.4). 2 = the main results (Table 1, "
                                "'w/ 2-Round'; §5.4: one or two rounds are efficient and effective); the "
                                "paper sweeps up to 6 (§4.3.1); the authors' run script uses 3")
    max_triples_per_entity: int = param(50, label="Facts per entity", min=1,
                                        doc="MAX_TRIPLES_PER_ENTITY (§4.3.1, no value given); 50 as in "
                                            "the authors' code (N_MAX_TRIPLES_EACH_ENTITY)")
    max_entities_per_round: int = param(10, label="Entities per round", min=1,
                                        doc="MAX_ENTITIES_PER_ROUND (§4.3.1, no value given); 10 as in "
                                            "the authors' code (N_MAX_ENTITY_SINGLE_ROUND)")
    triple_cap: TripleCap = param("similarity", label="Which facts survive the cap",
                                  doc="which triples survive the per-entity cap: 'similarity' keeps "
                                      "those closest to the question (ours; the paper is silent), "
                                      "'random' samples (authors' code)")
    direction: Direction = param("auto", label="Activation direction",
                                 doc="edges activation spreads along: 'out' (the paper: head entity to tail, "
                                     "Eq. 6 / App. B), 'both' (ours: also edges that end at an active entity, "
                                     "moving to their head), 'auto' (ours: 'out' over a curated KG, 'both' over "
                                     "the corpus graph, whose edge direction follows sentence voice: 'X founded "
                                     "Y' vs 'Y was founded by X'); preset 'paper': 'out'")
    k_p: int = param(6, label="Passages (kₚ)", min=2,
                     doc="passages: k_p/2 for the question + k_p/2 new ones for the expanded query "
                         "(§4.3.1 k_p = 6; de-duplication as in App. C.2)")
    passage_search: PassageSearch = param("auto", label="Passage search",
                                          doc="'auto' (ours, default): 'bm25' with the offline hashing embedder, "
                                              "whose cosines rank passages well below BM25, 'hybrid' with a "
                                              "neural one | 'hybrid' (ours: dense + BM25 by reciprocal rank "
                                              "fusion, as the text-rag baseline) | 'dense' (the paper: Contriever "
                                              "inner product, §4.3; presets 'paper' and 'code') | 'bm25' (ours)")
    rrf_k: int = param(60, label="Rank-fusion constant (RRF k)", min=0,
                       doc="RRF constant for passage_search='hybrid' (ours)")
    context_passages: bool = param(False, label="Also pass passages and facts to the answer",
                                   doc="also give the answer step the merged passages and selected "
                                       "triples after the note (ours; the paper's generator sees only "
                                       "the KG-augmented note, Eq. 11)")
    budget_tokens: int = param(0, label="Context budget (tokens)", min=0,
                               doc="context budget B in tokens (ours; `--budget-tokens B` of an "
                                   "equal-budget evaluation sets it). 0 = the paper: k_p passages, and the answer "
                                   "step sees the KG-augmented note only. B > 0: the note is built as in the paper, "
                                   "then the dual retrieval goes on past k_p — the question's and the expanded "
                                   "query's rankings each fill half of what B leaves after the note and the k_p "
                                   "passages (App. C.2's even split, counted in tokens; new passages only) — and "
                                   "the answer step sees the note followed by every passage")
    offline_top_m: int = param(5, label="Offline: facts kept per round", min=1,
                               doc="offline triple selection: at most this many triples per round (ours)")
    offline_min_score: float = param(0.1, label="Offline: minimum fact score",
                                     doc="offline triple selection: minimum score to select a triple (ours; "
                                         "on 2Wiki with its curated KG 0.1 keeps 70% of the evidence triples)")
    offline_note_sentences: int = param(6, label="Offline: sentences per note", min=1,
                                        doc="offline passage note: sentences kept (ours)")
    seed: int = param(42, label="Random seed",
                      doc="random seed for triple_cap='random' (the authors' code seeds with 42)")

    def __post_init__(self) -> None:
        check_params(self, "kg-infused")  # k_p >= 2: half for the question, half for the expanded query


@dataclass
class Memory:
    """The activation memory M = {G_act, E_act} (§3.4 Eq. 5)."""

    triples: list[Fact] = field(default_factory=list)
    activated: dict[str, int] = field(default_factory=dict)  # entity id -> round it was activated in
    names: dict[str, str] = field(default_factory=dict)
    rounds_run: int = 0

    @property
    def triple_ids(self) -> set[str]:
        return {f.id for f in self.triples}

    def named(self, ids: Iterable[str]) -> tuple[Named, ...]:
        return tuple(Named(e, self.names.get(e, e)) for e in ids)


def choose_source(store: GraphStore, wanted: str) -> tuple[str, str]:
    """(origin, reason). Raises MethodError when the wanted KG holds no entities."""
    counts = _graph_counts(store)
    n_cur = counts.get("curated", 0)
    if wanted == "auto":
        if n_cur:
            return "curated", f"auto: a curated KG is imported ({n_cur} curated entities), as in the paper"
        n_cor = counts.get("corpus", 0)
        if not n_cor:
            raise MethodError("kg-infused needs a knowledge graph: the database has no entities",
                              hint="build the graph from documents, or import a curated KG (kgviz import-kg)")
        return "corpus", f"auto: no curated KG imported, so the graph built from the corpus ({n_cor} entities)"
    n = n_cur if wanted == "curated" else counts.get("corpus", 0)
    if not n:
        hint = ("import one with `kgviz import-kg`, or set kg_source to 'corpus' or 'auto'" if wanted == "curated"
                else "build the graph from documents, or set kg_source to 'curated' or 'auto'")
        raise MethodError(f"kg_source={wanted!r} but the database has no {wanted} entities", hint=hint)
    return wanted, f"kg_source={wanted!r} was requested ({n} {wanted} entities)"


def _graph_counts(store: GraphStore) -> dict[str, int]:
    """Entities per origin and the chunks ("Chunk"): counted once per database state, not per
    question (each count scans a whole table; issue 29)."""
    def count(s: GraphStore) -> dict[str, int]:
        return {"curated": reads.count_entities(s, "curated"), "corpus": reads.count_entities(s, "corpus"),
                "Chunk": reads.count_nodes(s, "Chunk")}
    counts: dict[str, int] = store.derived("kg_infused.counts", count)
    return counts


def spreads_both_ways(p: KGInfusedParams, origin: str) -> bool:
    """Whether activation also follows incoming edges: ``direction`` 'both', or 'auto' over the corpus graph."""
    return p.direction == "both" or (p.direction == "auto" and origin == "corpus")


def passage_search_mode(p: KGInfusedParams, embedder_id: str) -> str:
    """The passage search a run uses: ``passage_search``, with 'auto' resolved for the embedder."""
    if p.passage_search != "auto":
        return p.passage_search
    return "bm25" if is_hashing(embedder_id) else "hybrid"


def search_chunks(store: GraphStore, vector: np.ndarray, text: str, k: int, p: KGInfusedParams,
                  mode: str) -> list[tuple[str, float]]:
    """Top-k chunk ids for a query, best first, by ``mode`` (``passage_search_mode``)."""
    if mode == "dense":
        return list(store.vector_search("Chunk", vector, k))
    if mode == "bm25":
        return list(store.fts_search(text, k, table="Chunk"))
    pool = max(2 * k, 20)  # fuse deeper lists than we keep, or RRF only reorders the dense top-k
    dense = [c for c, _ in store.vector_search("Chunk", vector, pool)]
    sparse = [c for c, _ in store.fts_search(text, pool, table="Chunk")]
    fused = rrf([dense, sparse], p.rrf_k)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def dual_retrieve(q_hits: list[tuple[str, float]], q2_hits: list[tuple[str, float]], k_p: int) -> dict[str, list[str]]:
    """App. C.2: keep the question's top ⌊k_p/2⌋; from the expanded query's top k_p keep, in rank
    order, the first k_p − ⌊k_p/2⌋ that the question did not retrieve."""
    half = k_p // 2
    first = [c for c, _ in q_hits[:half]]
    new: list[str] = []
    duplicates: list[str] = []
    unused: list[str] = []
    for c, _ in q2_hits[:k_p]:
        if c in first:
            duplicates.append(c)
        elif len(new) < k_p - half and c not in new:
            new.append(c)
        else:
            unused.append(c)
    return {"question": first, "expanded": new, "duplicates": duplicates, "unused": unused}


def selection_record(cands: RoundCandidates, value: KgInfusedSelection, prompt: str,
                     p: KGInfusedParams) -> TripleSelection:
    """The chooser's pick with the number that decided. Offline: the heuristic's score and its
    terms, ranked by it, each triple it left out with its rule (below the floor, past the top m).
    A model scores nothing: the triples keep their cosine to the question (what the method knows
    of them; the model saw them unscored, in graph order), ranked by it."""
    facts = cands.candidates
    offline = bool(value.offline_scores)
    by_cos = tuple(f.id for f in sorted(facts, key=lambda f: (-f.score, f.id)))
    score = ({str(k): float(v) for k, v in value.offline_scores.items()} if offline
             else {f.id: f.score for f in facts})
    order = tuple(score) if offline else by_cos
    kept = set(value.selected)
    rule = ({i: (f"below offline_min_score {p.offline_min_score:g}" if score[i] < p.offline_min_score
                 else f"past the top offline_top_m={p.offline_top_m}") for i in order if i not in kept}
            if offline else {})
    known = {f.id for f in facts}
    return TripleSelection(
        round=cands.round, prompt=prompt, candidates=tuple(f.id for f in facts),
        selected=tuple(i for i in value.selected if i in known), ignored=tuple(value.ignored),
        said_none=value.said_none, by="offline heuristic" if offline else "model", score=score,
        parts=({k: dict(v) for k, v in value.offline_parts.items()} if offline
               else {f.id: {"question": round(f.score, 4)} for f in facts}),
        order=order, by_cosine=by_cos, rule=rule)


def describe_facts(facts: list[Fact], qv: np.ndarray, store: GraphStore,
                   embedder: Embedder) -> tuple[dict[str, Fact], dict[str, np.ndarray]]:
    """Each fact with its stored text, provenance and cosine with the question (by id), and its
    embedding: the stored one, else its sentence embedded now."""
    ids = [f.id for f in facts if not f.id.startswith("rel:")]
    rows = {r["id"]: r for r in memory_reads.triple_sources(store, ids)} if ids else {}
    embs = store.get_embeddings("Triple", list(rows)) if rows else {}
    # the stored text and provenance where the fact has a Triple node (``sentence`` reads them)
    stored: dict[str, dict[str, Any]] = {f.id: {} if (row := rows.get(f.id)) is None else
              {"in_store": True, "text": str(row.get("text") or ""), "chunk_id": str(row.get("chunk_id") or "")}
              for f in facts}
    vecs: dict[str, np.ndarray] = {}
    for f in facts:
        vec = embs.get(f.id)
        if vec is not None and np.any(vec):
            vecs[f.id] = np.asarray(vec, dtype=np.float32)
    missing = [f for f in facts if f.id not in vecs]
    if missing:
        sentences = [(replace(f, **stored[f.id]) if stored[f.id] else f).sentence for f in missing]
        for f, v in zip(missing, np.asarray(embedder.embed(sentences), dtype=np.float32)):
            vecs[f.id] = v
    return {f.id: replace(f, **stored[f.id], score=float(vecs[f.id] @ qv)) for f in facts}, vecs


def _as_passage(row: ChunkRow, score: float | None) -> Passage:
    return Passage(str(row["id"]), str(row.get("title") or ""), str(row["text"]), score)


def _chunk_label(row: ChunkRow) -> str:
    return f"{row['title']} · c{row['ord']}"


@register
class KGInfusedRAG:
    name: ClassVar[str] = "kg-infused"
    title: ClassVar[str] = "KG-Infused RAG"
    paper: ClassVar[str] = "003"
    budget_param: ClassVar[str | None] = "budget_tokens"  # 0 (default) = stops at its note, as in the paper
    no_context: ClassVar[bool] = False
    Params: ClassVar[type] = KGInfusedParams
    presets: ClassVar[dict[str, Any]] = {
        # head -> tail only (Eq. 6, App. B) and dense passages (§4.3): nothing of ours the paper defines
        "paper": KGInfusedParams(passage_search="dense", direction="out"),
        "code": KGInfusedParams(passage_search="dense", max_rounds=3, triple_cap="random"),
    }

    def retrieve(self, question: str, ctx: MethodContext, params: KGInfusedParams, tracer: Tracer) -> RetrievedContext:
        p = params
        store, embedder = ctx.store, ctx.embedder
        origin, why = choose_source(store, p.kg_source)
        qv = np.asarray(embedder.embed([question]), dtype=np.float32)[0]
        memory = Memory()
        N.narrate_seeds(tracer, self._seed(store, qv, origin, why, p, memory))
        self._spread(question, qv, store, embedder, origin, p, memory, tracer)
        summary = self._summarize(question, memory, tracer)
        expanded = self._expand(question, summary, memory, tracer)
        passages, rankings = self._dual_retrieval(question, qv, expanded, store, embedder, p, tracer)
        note = self._passage_note(question, expanded, passages, p, tracer)
        kg_note = self._kg_note(question, note, summary, memory, tracer)
        if p.budget_tokens:
            passages = passages + self._fill_budget(kg_note, passages, rankings, store, p, tracer)
        return self._context(kg_note, passages, memory, origin, p, tracer,
                             notes={"kg_source": origin, "kg_source_reason": why, "subgraph_summary": summary,
                                    "expanded_query": expanded, "passage_note": note, "kg_note": kg_note})

    # -- 1-2: source and seeds (Eq. 3-4) --------------------------------------------------------
    def _seed(self, store: GraphStore, qv: np.ndarray, origin: str, why: str, p: KGInfusedParams,
              memory: Memory) -> SeedEntities:
        hits = store.vector_search("Entity", qv, p.k_e, where={"origin": origin})
        if not hits:
            raise MethodError(f"no {origin} entity has an embedding to match the question against",
                              hint="rebuild the index (entities need embeddings)")
        info: dict[str, Mapping[str, Any]] = {r["id"]: r for r in memory_reads.entities(store, [e for e, _ in hits])}
        for eid, _ in hits:
            memory.activated[eid] = 0
            memory.names[eid] = str((info.get(eid) or {}).get("name") or eid)
        return SeedEntities(
            origin=origin, why=why, requested=p.kg_source, corpus_fallback=origin == "corpus" and p.kg_source == "auto",
            k_e=p.k_e, seeds=tuple(Seed(e, memory.names[e], float(s), str((info.get(e) or {}).get("description") or ""))
                                   for e, s in hits))

    # -- 3: spreading activation (§3.4, Eq. 5-6) ------------------------------------------------
    def _spread(self, question: str, qv: np.ndarray, store: GraphStore, embedder: Embedder, origin: str,
                p: KGInfusedParams, memory: Memory, tracer: Tracer) -> None:
        active = list(memory.activated)
        for rnd in range(1, p.max_rounds + 1):
            cands, vecs = self._candidates(active, rnd, qv, store, embedder, origin, p, memory)
            N.narrate_candidates(tracer, cands)
            chosen = self._select(question, cands, vecs, p, memory, tracer)
            frontier = self._activate(chosen, rnd, p, memory)
            N.narrate_frontier(tracer, frontier)
            if frontier.stop:
                return
            active = [e.id for e in frontier.frontier]

    def _candidates(self, active: list[str], rnd: int, qv: np.ndarray, store: GraphStore, embedder: Embedder,
                    origin: str, p: KGInfusedParams,
                    memory: Memory) -> tuple[RoundCandidates, dict[str, np.ndarray]]:
        """Round ``rnd``'s one-hop triples of ``active`` (capped per entity) and their embeddings."""
        both = spreads_both_ways(p, origin)
        rows = [(r, False) for r in memory_reads.related_edges(store, active, origin, incoming=False)]
        if both:
            rows += [(r, True) for r in memory_reads.related_edges(store, active, origin, incoming=True)]
        known = memory.triple_ids
        by_entity: dict[str, list[Fact]] = {e: [] for e in active}
        seen: set[str] = set()
        skipped_known = 0
        for r, incoming in rows:
            tid = str(r["triple_id"] or "") or f"rel:{r['src']}|{r['relation']}|{r['dst']}"
            if tid in seen:
                continue
            seen.add(tid)
            if tid in known:  # Table 13 rule 1: previously selected triples are not offered again
                skipped_known += 1
                continue
            via, to, to_name = (r["dst"], r["src"], r["src_name"]) if incoming else (r["src"], r["dst"], r["dst_name"])
            by_entity[via].append(Fact(tid, r["src"], str(r["src_name"] or r["src"]), str(r["relation"] or ""),
                                       r["dst"], str(r["dst_name"] or r["dst"]), via, to, str(to_name or to)))
        described, vecs = describe_facts([f for fs in by_entity.values() for f in fs], qv, store, embedder)
        per_entity: dict[str, EntityCap] = {}
        kept: list[Fact] = []
        for e, raw in by_entity.items():
            fs = [described[f.id] for f in raw]
            if len(fs) > p.max_triples_per_entity:
                if p.triple_cap == "random":
                    fs = random.Random(f"{p.seed}:{e}").sample(fs, p.max_triples_per_entity)
                else:
                    fs = sorted(fs, key=lambda f: (-f.score, f.id))[: p.max_triples_per_entity]
            per_entity[e] = EntityCap(total=len(raw), kept=len(fs))
            kept.extend(fs)
        return RoundCandidates(
            round=rnd, active=memory.named(active), candidates=tuple(kept), per_entity=per_entity,
            already_in_memory=skipped_known, direction="both" if both else "out", direction_setting=p.direction,
            max_triples_per_entity=p.max_triples_per_entity, triple_cap=p.triple_cap), vecs

    def _select(self, question: str, cands: RoundCandidates, vecs: dict[str, np.ndarray], p: KGInfusedParams,
                memory: Memory, tracer: Tracer) -> list[Fact]:
        """Gⁱ: the triples the chooser selects (Table 12 in round 1, Table 13's update after)."""
        rnd, facts = cands.round, cands.candidates
        prompt = "kg_infused.SELECT_TRIPLES" if rnd == 1 else "kg_infused.UPDATE_TRIPLES"
        if not facts:
            nothing = TripleSelection(round=rnd, prompt=prompt, candidates=(), selected=(), ignored=(), said_none=False,
                                      by="", score={}, parts={}, order=(), by_cosine=(), rule={})
            N.narrate_no_selection(tracer, nothing)
            return []
        value, step = tracer.reason(
            "kginf_select_triples", kind="select", title=N.selection_title(rnd),
            question=question, candidates=[f.as_input(n) for n, f in enumerate(facts, 1)],
            previous=[f.display for f in memory.triples], vectors=np.stack([vecs[f.id] for f in facts]),
            top_m=p.offline_top_m, min_score=p.offline_min_score)
        assert isinstance(value, KgInfusedSelection)
        rec = selection_record(cands, value, prompt, p)
        N.narrate_selection(step, rec, cands)
        by_id = {f.id: f for f in facts}
        return [by_id[i] for i in rec.selected]

    @staticmethod
    def _activate(chosen: list[Fact], rnd: int, p: KGInfusedParams, memory: Memory) -> Frontier:
        """Eq. 5 (the memory takes Gⁱ) and Eq. 6 (the next entities: new tails, in selection order,
        at most max_entities_per_round); they join E_act unless the spreading stops here."""
        memory.rounds_run = rnd
        memory.triples.extend(replace(f, round=rnd) for f in chosen)
        tails = list(dict.fromkeys(f.to for f in chosen))
        for f in chosen:
            memory.names.setdefault(f.to, f.to_name)
        fresh = [e for e in tails if e not in memory.activated]
        frontier, over_cap = fresh[: p.max_entities_per_round], fresh[p.max_entities_per_round :]
        stop: StopRule = (("no_new_entity" if chosen else "no_triple") if not frontier
                          else "max_rounds" if rnd == p.max_rounds else "")
        rec = Frontier(
            round=rnd, frontier=memory.named(frontier), over_cap=memory.named(over_cap),
            already_active=tuple(e for e in tails if e in memory.activated), memory_size=len(memory.triples),
            activated=len(memory.activated), stop=stop, max_rounds=p.max_rounds,
            max_entities_per_round=p.max_entities_per_round,
            heads=len({f.to for f in chosen if f.to != f.object_id}), direction_setting=p.direction)
        if not stop:
            memory.activated.update((e, rnd) for e in frontier)
        return rec

    # -- 4-5: summary and query expansion (Table 14, Eq. 7) -------------------------------------
    def _summarize(self, question: str, memory: Memory, tracer: Tracer) -> str:
        step, summary = None, ""
        if memory.triples:
            value, step = tracer.reason("kginf_summarize", title=N.SUMMARY_TITLE, question=question,
                                        triples=[f.as_input() for f in memory.triples])
            summary = str(value)
        N.narrate_summary(tracer, step, SubgraphSummary(tuple(f.id for f in memory.triples), summary, step is None),
                          memory.triples)
        return summary

    def _expand(self, question: str, summary: str, memory: Memory, tracer: Tracer) -> str:
        step, expanded, names = None, question, []
        if summary:  # else q' = q: the second half of the passages are the question's next-ranked ones
            names = [memory.names[e] for e in memory.activated if e in memory.names]
            names += [f.to_name for f in memory.triples if f.to_name not in names]
            value, step = tracer.reason("kginf_expand_query", title=N.EXPANSION_TITLE,
                                        question=question, summary=summary, entities=names)
            expanded = str(value)
        N.narrate_expansion(tracer, step, QueryExpansion(tuple(names), expanded, step is None))
        return expanded

    # -- 6: dual retrieval (Eq. 8) --------------------------------------------------------------
    def _dual_retrieval(self, question: str, qv: np.ndarray, expanded: str, store: GraphStore, embedder: Embedder,
                        p: KGInfusedParams, tracer: Tracer) -> tuple[list[Passage], tuple[Hits, Hits]]:
        """The k_p passages (App. C.2), and the two rankings (question, expanded query) they came from:
        k_p deep, or deep enough to fill ``budget_tokens`` when it is set."""
        embedder_id = str(getattr(embedder, "id", ""))
        mode = passage_search_mode(p, embedder_id)
        if not _graph_counts(store)["Chunk"]:
            N.narrate_dual_retrieval(tracer, DualRetrieval(p.k_p, mode, p.passage_search, embedder_id, expanded,
                                                           (), (), (), (), (), (), skipped=True), {})
            return [], ([], [])
        q_hits = search_chunks(store, qv, question, p.k_p // 2, p, mode)
        ev = np.asarray(embedder.embed([expanded]), dtype=np.float32)[0]
        q2_hits = search_chunks(store, ev, expanded, p.k_p, p, mode)
        rankings = (q_hits, q2_hits)
        if p.budget_tokens:  # read deeper for the budget; the k_p split above stays the paper's (RRF depends on depth)
            depth = max(p.k_p, p.budget_tokens // BUDGET_TOKENS_PER_HIT)
            rankings = (search_chunks(store, qv, question, depth, p, mode),
                        search_chunks(store, ev, expanded, depth, p, mode))
        split = dual_retrieve(q_hits, q2_hits, p.k_p)
        merged = split["question"] + split["expanded"]
        shown = merged + split["duplicates"] + split["unused"]
        info: dict[str, ChunkRow] = {r["id"]: r for r in memory_reads.chunks(store, shown)} if merged else {}
        rec = DualRetrieval(
            k_p=p.k_p, search=mode, passage_search=p.passage_search, embedder_id=embedder_id, expanded_query=expanded,
            question_ranking=tuple((c, float(s)) for c, s in q_hits),
            expanded_ranking=tuple((c, float(s)) for c, s in q2_hits),
            question_passages=tuple(split["question"]), expanded_passages=tuple(split["expanded"]),
            duplicates=tuple(split["duplicates"]), unused=tuple(split["unused"]), skipped=False)
        N.narrate_dual_retrieval(tracer, rec, {c: _chunk_label(r) for c, r in info.items()})
        scores = rec.score
        return [_as_passage(info[c], scores.get(c)) for c in merged if c in info], rankings

    # -- 9: equal budget (ours) -----------------------------------------------------------------
    def _fill_budget(self, kg_note: str, passages: list[Passage], rankings: tuple[Hits, Hits],
                     store: GraphStore, p: KGInfusedParams, tracer: Tracer) -> list[Passage]:
        """Passages past k_p: the question's ranking, then the expanded query's, each filling half of
        the room ``budget_tokens`` leaves after the note and the k_p passages (skip-and-continue)."""
        taken = {x.id for x in passages}
        room = max(0, p.budget_tokens - count_tokens(kg_note) - sum(count_tokens(x.text) for x in passages))
        q_rank, q2_rank = ([c for c, _ in r if c not in taken] for r in rankings)
        scores = {c: float(x) for c, x in rankings[1]}
        scores.update({c: float(x) for c, x in rankings[0]})  # as in the dual retrieval step
        info = {r["id"]: r for r in memory_reads.chunks(store, list(dict.fromkeys(q_rank + q2_rank)))}

        def sized(ids: list[str]) -> list[tuple[str, int]]:
            return [(c, count_tokens(str(info[c]["text"]))) for c in ids if c in info]
        q_fit = skip_and_continue(sized(q_rank), room // 2)
        kept = set(q_fit.kept)
        q2_fit = skip_and_continue(sized([c for c in q2_rank if c not in kept]), room - q_fit.used)
        extra = q_fit.kept + q2_fit.kept
        rec = BudgetFill(
            budget_tokens=p.budget_tokens, k_p=p.k_p, n_passages=len(passages), room=room,
            question_extra=tuple(q_fit.kept), expanded_extra=tuple(q2_fit.kept), question_tokens=q_fit.used,
            expanded_tokens=q2_fit.used, score={c: scores[c] for c in extra if c in scores})
        N.narrate_budget_fill(tracer, rec, {c: _chunk_label(info[c]) for c in extra})
        return [_as_passage(info[c], scores.get(c)) for c in extra]

    # -- 7: notes (Eq. 9-10) --------------------------------------------------------------------
    def _passage_note(self, question: str, expanded: str, passages: list[Passage], p: KGInfusedParams,
                      tracer: Tracer) -> str:
        step, note = None, ""
        if passages:  # else: no chunks in the database
            value, step = tracer.reason("kginf_passage_note", title=N.PASSAGE_NOTE_TITLE, question=question,
                                        passages=[asdict(x) for x in passages], expanded_query=expanded,
                                        max_sentences=p.offline_note_sentences)
            note = str(value)
        N.narrate_passage_note(tracer, step, PassageNote(tuple(x.id for x in passages), note, step is None), passages)
        return note

    def _kg_note(self, question: str, note: str, summary: str, memory: Memory, tracer: Tracer) -> str:
        step, kg_note = None, note
        if summary:  # else the note stays the passage note
            value, step = tracer.reason("kginf_kg_note", title=N.KG_NOTE_TITLE, question=question, note=note,
                                        summary=summary, facts=[f.sentence for f in memory.triples])
            kg_note = str(value)
        used = tuple(f.id for f in memory.triples) if step else ()
        N.narrate_kg_note(tracer, step, KgNote(used, kg_note, step is None), memory.triples)
        return kg_note

    # -- 8: context (Eq. 11's input) ------------------------------------------------------------
    def _context(self, kg_note: str, passages: list[Passage], memory: Memory, origin: str,
                 p: KGInfusedParams, tracer: Tracer, notes: dict[str, str]) -> RetrievedContext:
        items: list[ContextItem] = []
        if kg_note.strip():
            items.append(ContextItem(NOTE_ID, "note", kg_note, None, count_tokens(kg_note), "KG-augmented note"))
        if p.context_passages or p.budget_tokens:
            items += [_passage_item(x) for x in passages]
        if p.context_passages:
            items += [_triple_item(f, origin) for f in memory.triples if f.in_store]
        entity_ids = list(dict.fromkeys([e for e in memory.activated]
                                        + [x for f in memory.triples for x in (f.subject_id, f.object_id)]))
        node_ids = [x.id for x in passages] + [f.id for f in memory.triples if f.in_store] + entity_ids
        N.narrate_context(tracer, AnswerInput(
            origin=origin, items=tuple(i.id for i in items), tokens=sum(i.n_tokens for i in items),
            passages=tuple(x.id for x in passages), triples=tuple(f.id for f in memory.triples),
            rounds=memory.rounds_run, context_passages=p.context_passages, budget_tokens=p.budget_tokens),
            passages, memory.triples)
        return RetrievedContext(items=items, node_ids=node_ids, notes=notes,
                                sources=_note_sources(items, passages, memory, origin))


def _passage_item(x: Passage) -> ContextItem:
    return ContextItem(x.id, "chunk", x.text, x.score, count_tokens(x.text), x.title)


def _triple_item(f: Fact, origin: str) -> ContextItem:
    return ContextItem(f.id, "triple", f.sentence, f.score, count_tokens(f.sentence), f.chunk_id or origin)


def _note_sources(items: list[ContextItem], passages: list[Passage], memory: Memory,
                  origin: str) -> list[ContextItem]:
    """What the notes were written from (the k_p passages, then the KG triples) that the context
    does not already hold: a claim drawn from a note is judged against these, never the note."""
    if not any(i.kind == "note" for i in items):
        return []
    held = {i.id for i in items}
    return ([_passage_item(x) for x in passages if x.id not in held]
            + [_triple_item(f, origin) for f in memory.triples if f.in_store and f.id not in held])
