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
llm (passage note) → llm (KG note) → context.

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
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Mapping

import numpy as np

from kgviz.embedding import is_hashing
from kgviz.errors import MethodError
from kgviz.graph import reads
from kgviz.graph.protocol import GraphStore
from kgviz.methods import deciding
from kgviz.methods.budget import skip_and_continue
from kgviz.methods.base import (
    ContextItem, EdgeRef, MethodContext, NodeRef, RetrievedContext, Tracer, check_params, mark_ours, param, register,
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
class Fact:
    """One candidate triple, seen from the active entity it was reached from."""

    id: str  # Triple id, or "rel:<src>|<relation>|<dst>" for a RELATED edge without a Triple node
    subject_id: str
    subject: str
    relation: str
    object_id: str
    object: str
    via: str  # the active entity
    to: str  # the entity activation moves to (the tail; the head for an incoming edge)
    to_name: str
    text: str = ""
    chunk_id: str = ""
    in_store: bool = False  # a Triple node exists
    score: float = 0.0  # cosine with the question
    round: int = 0
    vec: Any = field(default=None, repr=False)  # embedding (stored, or computed on the fly)

    def as_input(self, n: int = 0) -> dict[str, Any]:
        return {"n": n, "id": self.id, "subject": self.subject, "relation": self.relation,
                "object": self.object, "text": self.text, "round": self.round}

    @property
    def display(self) -> str:
        return f"<{self.subject} | {self.relation} | {self.object}>"

    @property
    def sentence(self) -> str:
        text = self.text.strip() or f"{self.subject} {self.relation} {self.object}"
        return text if text.endswith((".", "!", "?")) else text + "."

    def node(self, role: str) -> list[NodeRef]:
        return [NodeRef(self.id, "Triple", role, self.display, self.score)] if self.in_store else []  # type: ignore[arg-type]

    def edge(self, role: str) -> EdgeRef:
        return EdgeRef(self.subject_id, self.object_id, self.relation, role, self.score)  # type: ignore[arg-type]


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


def choose_source(store: GraphStore, wanted: str) -> tuple[str, str]:
    """(origin, reason). Raises MethodError when the wanted KG holds no entities."""
    n_cur = reads.count_entities(store, "curated")
    if wanted == "auto":
        if n_cur:
            return "curated", f"auto: a curated KG is imported ({n_cur} curated entities), as in the paper"
        n_cor = reads.count_entities(store, "corpus")
        if not n_cor:
            raise MethodError("kg-infused needs a knowledge graph: the database has no entities",
                              hint="build the graph from documents, or import a curated KG (kgviz import-kg)")
        return "corpus", f"auto: no curated KG imported, so the graph built from the corpus ({n_cor} entities)"
    n = n_cur if wanted == "curated" else reads.count_entities(store, "corpus")
    if not n:
        hint = ("import one with `kgviz import-kg`, or set kg_source to 'corpus' or 'auto'" if wanted == "curated"
                else "build the graph from documents, or set kg_source to 'curated' or 'auto'")
        raise MethodError(f"kg_source={wanted!r} but the database has no {wanted} entities", hint=hint)
    return wanted, f"kg_source={wanted!r} was requested ({n} {wanted} entities)"


def spreads_both_ways(p: KGInfusedParams, origin: str) -> bool:
    """Whether activation also follows incoming edges: ``direction`` 'both', or 'auto' over the corpus graph."""
    return p.direction == "both" or (p.direction == "auto" and origin == "corpus")


def _direction_ours(p: KGInfusedParams) -> str:
    return (f"direction='{p.direction}' also follows incoming edges, moving to their head; "
            "the paper spreads head -> tail, Eq. 6 / App. B")


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


def dual_retrieve(q_hits: list[tuple[str, float]], q2_hits: list[tuple[str, float]], k_p: int) -> dict[str, Any]:
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
        self._seed(store, qv, origin, why, p, memory, tracer)
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

    # -- 1-2: source and seeds ------------------------------------------------------------------
    def _seed(self, store: GraphStore, qv: np.ndarray, origin: str, why: str, p: KGInfusedParams, memory: Memory,
              tracer: Tracer) -> None:
        hits = store.vector_search("Entity", qv, p.k_e, where={"origin": origin})
        if not hits:
            raise MethodError(f"no {origin} entity has an embedding to match the question against",
                              hint="rebuild the index (entities need embeddings)")
        info: dict[str, Mapping[str, Any]] = {r["id"]: r for r in reads.entities(store, [e for e, _ in hits])}
        for eid, _ in hits:
            memory.activated[eid] = 0
            memory.names[eid] = str((info.get(eid) or {}).get("name") or eid)
        tracer.step("seed", f"Seed entities from the {origin} KG",
                    f"KG source: {origin} ({why}). Top {p.k_e} entities by similarity of the question to "
                    f"entity descriptions (§3.4 Eq. 3-4): " + ", ".join(memory.names[e] for e, _ in hits),
                    nodes=[NodeRef(e, "Entity", "seed", memory.names[e], float(s)) for e, s in hits],
                    scores={e: float(s) for e, s in hits},
                    data={"kg_source": origin, "reason": why, "k_e": p.k_e,
                          "descriptions": {e: str((info.get(e) or {}).get("description") or "") for e, _ in hits}},
                    ours="" if origin == "curated" else
                    ("the corpus graph, not a curated KG (" + ("none is imported" if p.kg_source == "auto"
                                                               else "kg_source='corpus'")
                     + "; the paper spreads over Wikidata5M-KG, §3.3)"))

    # -- 3: spreading activation ----------------------------------------------------------------
    def _spread(self, question: str, qv: np.ndarray, store: GraphStore, embedder: Any, origin: str, p: KGInfusedParams,
                memory: Memory, tracer: Tracer) -> None:
        active = list(memory.activated)
        for rnd in range(1, p.max_rounds + 1):
            facts, per_entity, in_memory = self._candidates(active, rnd, qv, store, embedder, origin, p, memory)
            capped = {e: v for e, v in per_entity.items() if v["kept"] < v["total"]}
            both = spreads_both_ways(p, origin)
            step = tracer.step("expand", f"Round {rnd}: one-hop triples of {len(active)} active entities",
                               f"{len(facts)} candidate triples (at most {p.max_triples_per_entity} per entity"
                               f"{', ' + str(len(capped)) + ' entities capped' if capped else ''})",
                               nodes=[NodeRef(e, "Entity", "seed", memory.names.get(e, e)) for e in active]
                               + [n for f in facts for n in f.node("candidate")]
                               + [NodeRef(e, "Entity", "candidate", n) for e, n in _targets(facts).items()
                                  if e not in active],
                               edges=[f.edge("candidate") for f in facts],
                               scores={f.id: f.score for f in facts},
                               data={"round": rnd, "active": active, "per_entity": per_entity, "capped": sorted(capped),
                                     "already_in_memory": in_memory, "direction": "both" if both else "out"})
            mark_ours(step, _direction_ours(p) if both else "",
                      "the per-entity cap keeps the triples closest to the question (triple_cap='similarity'; "
                      "the paper names the cap only)" if capped and p.triple_cap == "similarity" else "")
            chosen = self._select(question, facts, rnd, p, memory, tracer)
            memory.rounds_run = rnd
            for f in chosen:
                f.round = rnd
            memory.triples.extend(chosen)  # Eq. 5
            tails: list[str] = []
            for f in chosen:  # Eq. 6: new tails, in selection order
                if f.to not in tails:
                    tails.append(f.to)
                    memory.names.setdefault(f.to, f.to_name)
            already = [e for e in tails if e in memory.activated]
            fresh = [e for e in tails if e not in memory.activated]
            frontier, over_cap = fresh[: p.max_entities_per_round], fresh[p.max_entities_per_round :]
            if not frontier:
                stop = "no new entities: every selected tail is already activated" if chosen else "no triple selected"
            elif rnd == p.max_rounds:
                stop = f"max_rounds={p.max_rounds} reached"
            else:
                stop = ""
            detail = (f"next entities: {', '.join(memory.names.get(e, e) for e in frontier) or 'none'}; "
                      f"memory holds {len(memory.triples)} triples and {len(memory.activated)} activated entities")
            if over_cap:
                detail += f"; {len(over_cap)} dropped by max_entities_per_round={p.max_entities_per_round}"
            title = f"Round {rnd}: activation frontier" + (f" — stop ({stop})" if stop else "")
            frontier_step = tracer.step(
                "expand", title, detail + (f". Stop: {stop}" if stop else ""),
                nodes=[NodeRef(e, "Entity", "chosen", memory.names.get(e, e)) for e in frontier]
                + [NodeRef(e, "Entity", "rejected", memory.names.get(e, e)) for e in over_cap],
                data={"round": rnd, "frontier": frontier, "memory_size": len(memory.triples),
                      "activated": len(memory.activated), "already_active": already,
                      "over_cap": over_cap, "stop": stop, "expanded_next": not stop})
            heads = {f.to for f in chosen if f.to != f.object_id}  # reached along an incoming edge
            if heads:
                mark_ours(frontier_step, f"{len(heads)} of the selected triples' next entities are heads reached along "
                                         f"incoming edges ({_direction_ours(p)})")
            if stop:
                return
            for e in frontier:
                memory.activated[e] = rnd
            active = frontier

    def _candidates(self, active: list[str], rnd: int, qv: np.ndarray, store: GraphStore, embedder: Any, origin: str,
                    p: KGInfusedParams, memory: Memory) -> tuple[list[Fact], dict[str, dict[str, int]], int]:
        rows = [(r, False) for r in reads.related_edges(store, active, origin, incoming=False)]
        if spreads_both_ways(p, origin):
            rows += [(r, True) for r in reads.related_edges(store, active, origin, incoming=True)]
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
        facts = [f for fs in by_entity.values() for f in fs]
        self._describe(facts, qv, store, embedder)
        per_entity: dict[str, dict[str, int]] = {}
        kept: list[Fact] = []
        for e, fs in by_entity.items():
            if len(fs) > p.max_triples_per_entity:
                if p.triple_cap == "random":
                    fs = random.Random(f"{p.seed}:{e}").sample(fs, p.max_triples_per_entity)
                else:
                    fs = sorted(fs, key=lambda f: (-f.score, f.id))[: p.max_triples_per_entity]
            per_entity[e] = {"total": len(by_entity[e]), "kept": len(fs)}
            kept.extend(fs)
        return kept, per_entity, skipped_known

    def _describe(self, facts: list[Fact], qv: np.ndarray, store: GraphStore, embedder: Any) -> None:
        """Fill each fact's stored text, provenance and cosine with the question."""
        ids = [f.id for f in facts if not f.id.startswith("rel:")]
        rows = {r["id"]: r for r in reads.triple_sources(store, ids)} if ids else {}
        embs = store.get_embeddings("Triple", list(rows)) if rows else {}
        missing: list[Fact] = []
        for f in facts:
            row = rows.get(f.id)
            if row is not None:
                f.in_store = True
                f.text = str(row.get("text") or "")
                f.chunk_id = str(row.get("chunk_id") or "")
            vec = embs.get(f.id)
            if vec is not None and np.any(vec):
                f.vec = np.asarray(vec, dtype=np.float32)
            else:
                missing.append(f)
        if missing:
            vecs = np.asarray(embedder.embed([f.sentence for f in missing]), dtype=np.float32)
            for f, v in zip(missing, vecs):
                f.vec = v
        for f in facts:
            f.score = float(f.vec @ qv)

    def _select(self, question: str, facts: list[Fact], rnd: int, p: KGInfusedParams, memory: Memory,
                tracer: Tracer) -> list[Fact]:
        prompt = "kg_infused.SELECT_TRIPLES" if rnd == 1 else "kg_infused.UPDATE_TRIPLES"
        if not facts:
            tracer.step("select", f"Round {rnd}: triple selection skipped",
                        "no candidate triples: the active entities have no one-hop triples left",
                        data={"round": rnd, "selected": [], "ignored": [], "prompt": prompt})
            return []
        cands = [f.as_input(n) for n, f in enumerate(facts, 1)]
        value, step = tracer.reason(
            "kginf_select_triples", kind="select",
            title=f"Round {rnd}: triple selection ({'Table 12' if rnd == 1 else 'Table 13'})",
            question=question, candidates=cands, previous=[f.display for f in memory.triples],
            vectors=np.stack([f.vec for f in facts]), top_m=p.offline_top_m, min_score=p.offline_min_score)
        if step.llm is not None:
            step.llm.prompt_name = prompt  # later rounds render Table 13's update prompt
        assert isinstance(value, KgInfusedSelection)
        by_id = {f.id: f for f in facts}
        chosen = [by_id[i] for i in value.selected if i in by_id]
        chosen_ids = {f.id for f in chosen}
        rejected = [f for f in facts if f.id not in chosen_ids]
        step.detail = (f"{len(chosen)} of {len(facts)} triples selected"
                       + (f"; ignored (not among the candidates): {', '.join(value.ignored)}" if value.ignored else "")
                       + ("; the model answered NONE" if value.said_none and step.llm and step.llm.mode != "offline" else ""))
        step.nodes = [n for f in chosen for n in f.node("chosen")] + [n for f in rejected for n in f.node("rejected")]
        step.edges = [f.edge("chosen") for f in chosen] + [f.edge("rejected") for f in rejected]
        step.scores = {str(k): float(v) for k, v in (value.offline_scores or {f.id: f.score for f in facts}).items()}
        self._decide(step, facts, chosen, value, p)
        step.nodes += [NodeRef(e, "Entity", "chosen", n) for e, n in _targets(chosen).items()]
        step.data = {"round": rnd, "selected": [f.id for f in chosen], "ignored": list(value.ignored),
                     "said_none": value.said_none, "prompt": prompt, "n_candidates": len(facts),
                     **step.data}
        return chosen

    @staticmethod
    def _decide(step: Any, facts: list[Fact], chosen: list[Fact], value: KgInfusedSelection,
                p: KGInfusedParams) -> None:
        """The selection's deciding number on every triple node (kgviz.methods.deciding). Offline:
        the heuristic's score and its terms, ranked by it, each triple it left out with its rule.
        A model scores nothing: the triples keep their cosine to the question (what the method
        knows of them; the model saw them unscored, in graph order), ranked by it, and the step
        says which places the model picked and quotes its reply."""
        offline = bool(value.offline_scores)
        score = {f.id: float(value.offline_scores.get(f.id, f.score)) for f in facts}
        by_cos = [f.id for f in sorted(facts, key=lambda f: (-f.score, f.id))]
        order = list(value.offline_scores) if offline else by_cos
        parts = ({k: dict(v) for k, v in value.offline_parts.items()} if offline
                 else {f.id: {"question": round(f.score, 4)} for f in facts})
        for n in step.nodes:
            n.score, n.score_parts = score.get(n.id, n.score), parts.get(n.id, {})
        deciding.set_ranks(step.nodes, order)
        picked = deciding.chooser_pick(by_cos, [f.id for f in chosen], by="offline heuristic" if offline else "model",
                                       ranking="ranked by cosine to the question",
                                       words="" if offline or step.llm is None else step.llm.raw_output)
        # the model saw the triples numbered [n] in graph order, unscored: where its picks stood there
        picked["listed_as"] = [facts.index(f) + 1 for f in chosen]
        line = deciding.pick_line(picked)
        if offline:
            kept = set(value.selected)
            reasons = {i: (f"below offline_min_score {p.offline_min_score:g}" if score[i] < p.offline_min_score
                           else f"past the top offline_top_m={p.offline_top_m}") for i in order if i not in kept}
            deciding.set_reasons(step.nodes, reasons)
        else:
            deciding.set_reasons(deciding.outranked(step.nodes), {
                n.id: f"{line}: the model's selection, not the cosine, decided" for n in step.nodes})
        step.detail += f"; {line}" if chosen or not offline else ""
        step.data = {"picked": picked,
                     "score_name": ("the offline selector's score: cosine to the question + memory + question "
                                    "words + relation cue (parts; formula in the LLM task line)" if offline else
                                    "cosine to the question (the model saw the triples unscored; its selection "
                                    "decided)")}

    # -- 4-5: summary and query expansion -------------------------------------------------------
    def _summarize(self, question: str, memory: Memory, tracer: Tracer) -> str:
        if not memory.triples:
            tracer.step("llm", "Subgraph summary skipped",
                        "spreading activation selected no triple, so there is nothing to summarise",
                        data={"prompt": "kg_infused.SUMMARIZE", "skipped": True})
            return ""
        value, step = tracer.reason("kginf_summarize", title="Subgraph summary (Table 14)",
                                    detail=f"summary of the {len(memory.triples)} triples in the activation memory",
                                    question=question, triples=[f.as_input() for f in memory.triples])
        step.nodes = [n for f in memory.triples for n in f.node("context")]
        step.edges = [f.edge("context") for f in memory.triples]
        step.data = {"summary": value, "n_triples": len(memory.triples)}
        return str(value)

    def _expand(self, question: str, summary: str, memory: Memory, tracer: Tracer) -> str:
        if not summary:
            tracer.step("llm", "Query expansion skipped",
                        "no KG summary to expand with: the expanded query is the question itself, so the "
                        "second half of the passages are the question's next-ranked ones",
                        data={"prompt": "kg_infused.EXPAND_QUERY", "skipped": True, "expanded_query": question})
            return question
        names = [memory.names[e] for e in memory.activated if e in memory.names]
        names += [f.to_name for f in memory.triples if f.to_name not in names]
        value, step = tracer.reason("kginf_expand_query", title="KG-based query expansion (Table 15)",
                                    question=question, summary=summary, entities=names)
        step.detail = f"expanded query: {value}"
        step.data = {"expanded_query": value}
        return str(value)

    # -- 6: dual retrieval ----------------------------------------------------------------------
    def _dual_retrieval(self, question: str, qv: np.ndarray, expanded: str, store: GraphStore, embedder: Any,
                        p: KGInfusedParams, tracer: Tracer) -> tuple[list[dict[str, Any]], tuple[Hits, Hits]]:
        """The k_p passages (App. C.2), and the two rankings (question, expanded query) they came from:
        k_p deep, or deep enough to fill ``budget_tokens`` when it is set."""
        half = p.k_p // 2
        if not reads.count_nodes(store, "Chunk"):
            tracer.step("seed", "Dual retrieval skipped", "the database holds no passages (only a KG was imported): "
                        "the notes are built from the KG facts alone", data={"skipped": True, "k_p": p.k_p})
            return [], ([], [])
        mode = passage_search_mode(p, str(getattr(embedder, "id", "")))
        q_hits = search_chunks(store, qv, question, half, p, mode)
        ev = np.asarray(embedder.embed([expanded]), dtype=np.float32)[0]
        q2_hits = search_chunks(store, ev, expanded, p.k_p, p, mode)
        rankings = (q_hits, q2_hits)
        if p.budget_tokens:  # read deeper for the budget; the k_p split above stays the paper's (RRF depends on depth)
            depth = max(p.k_p, p.budget_tokens // BUDGET_TOKENS_PER_HIT)
            rankings = (search_chunks(store, qv, question, depth, p, mode),
                        search_chunks(store, ev, expanded, depth, p, mode))
        split = dual_retrieve(q_hits, q2_hits, p.k_p)
        merged = split["question"] + split["expanded"]
        info: dict[str, Mapping[str, Any]] = {r["id"]: r for r in reads.chunks(store, merged + split["duplicates"] + split["unused"])} if merged else {}
        scores = {c: float(s) for c, s in q2_hits}
        scores.update({c: float(s) for c, s in q_hits})

        def ref(c: str, role: str) -> NodeRef:
            r = info.get(c)
            return NodeRef(c, "Chunk", role, f"{r['title']} · c{r['ord']}" if r else c, scores.get(c))  # type: ignore[arg-type]

        short = p.k_p - len(merged)
        nodes = ([ref(c, "chosen") for c in merged] + [ref(c, "rejected") for c in split["duplicates"]]
                 + [ref(c, "candidate") for c in split["unused"]])
        q2_place = {c: i for i, (c, _) in enumerate(q2_hits, 1)}
        deciding.set_reasons(nodes, {
            **{c: f"already retrieved for the question (App. C.2 de-duplication); shown with the question's score"
               for c in split["duplicates"]},
            **{c: f"the expanded query's #{q2_place.get(c)}: its {p.k_p - half} new passages were already taken"
               for c in split["unused"]}})
        step = tracer.step("seed", "Dual retrieval (question + expanded query)",
                           f"{len(split['question'])} passages for the question, {len(split['expanded'])} new "
                           f"ones for the expanded query; {len(split['duplicates'])} of the expanded query's top "
                           f"{p.k_p} were already retrieved (App. C.2); search: {mode}"
                           + (f" (passage_search 'auto' with the {getattr(embedder, 'id', '')} embedder, ours)"
                              if p.passage_search == "auto" else "")
                           + (f"; {short} short of k_p={p.k_p}: the expanded query found no "
                                                      f"more new passages" if short > 0 else ""),
                           nodes=nodes,
                           scores=scores,
                           data={"question_passages": split["question"], "expanded_passages": split["expanded"],
                                 "duplicates": split["duplicates"], "unused": split["unused"], "k_p": p.k_p,
                                 "search": mode, "passage_search": p.passage_search, "expanded_query": expanded,
                                 "score_name": f"{mode} score for the question (its top {half}), else for the expanded "
                                               "query (the first new ones); two rankings, so scores compare only "
                                               "within one"})
        if mode != "dense":
            auto = " (passage_search='auto')" if p.passage_search == "auto" else ""
            mark_ours(step, f"passage search '{mode}'{auto}: the paper ranks passages by dense inner product (§4.3)")
        passages = [{"id": c, "title": str((info.get(c) or {}).get("title") or ""), "text": str(info[c]["text"]),
                     "score": scores.get(c)} for c in merged if c in info]
        return passages, rankings

    # -- 9: equal budget (ours) -----------------------------------------------------------------
    def _fill_budget(self, kg_note: str, passages: list[dict[str, Any]], rankings: tuple[Hits, Hits],
                     store: GraphStore, p: KGInfusedParams, tracer: Tracer) -> list[dict[str, Any]]:
        """Passages past k_p: the question's ranking, then the expanded query's, each filling half of
        the room ``budget_tokens`` leaves after the note and the k_p passages (skip-and-continue)."""
        taken = {x["id"] for x in passages}
        room = max(0, p.budget_tokens - count_tokens(kg_note) - sum(count_tokens(x["text"]) for x in passages))
        q_rank, q2_rank = ([c for c, _ in r if c not in taken] for r in rankings)
        scores = {c: float(x) for c, x in rankings[1]}
        scores.update({c: float(x) for c, x in rankings[0]})  # as in the dual retrieval step
        info = {r["id"]: r for r in reads.chunks(store, list(dict.fromkeys(q_rank + q2_rank)))}

        def sized(ids: list[str]) -> list[tuple[str, int]]:
            return [(c, count_tokens(str(info[c]["text"]))) for c in ids if c in info]
        q_fit = skip_and_continue(sized(q_rank), room // 2)
        kept = set(q_fit.kept)
        q2_fit = skip_and_continue(sized([c for c in q2_rank if c not in kept]), room - q_fit.used)
        extra = q_fit.kept + q2_fit.kept
        tracer.step("seed", f"Equal budget: passages past k_p (budget_tokens={p.budget_tokens}, ours)",
                    f"{room} tokens left after the note and the {len(passages)} passages: "
                    f"{len(q_fit.kept)} more for the question ({q_fit.used} tokens), {len(q2_fit.kept)} more for the "
                    f"expanded query ({q2_fit.used} tokens); the paper stops at k_p={p.k_p} and the note",
                    nodes=[NodeRef(c, "Chunk", "chosen", f"{info[c]['title']} · c{info[c]['ord']}", scores.get(c))
                           for c in extra],
                    scores={c: scores[c] for c in extra if c in scores},
                    data={"budget_tokens": p.budget_tokens, "room": room, "question_extra": q_fit.kept,
                          "expanded_extra": q2_fit.kept, "question_tokens": q_fit.used,
                          "expanded_tokens": q2_fit.used},
                    ours=f"budget_tokens={p.budget_tokens}: the paper stops at k_p={p.k_p} passages and the note")
        return [{"id": c, "title": str(info[c].get("title") or ""), "text": str(info[c]["text"]),
                 "score": scores.get(c)} for c in extra]

    # -- 7: notes -------------------------------------------------------------------------------
    def _passage_note(self, question: str, expanded: str, passages: list[dict[str, Any]], p: KGInfusedParams,
                      tracer: Tracer) -> str:
        nodes = [NodeRef(x["id"], "Chunk", "context", x["title"]) for x in passages]
        if not passages:
            tracer.step("llm", "Passage note skipped", "no passages were retrieved (the database has no chunks)",
                        data={"prompt": "kg_infused.PASSAGE_NOTE", "skipped": True})
            return ""
        value, step = tracer.reason("kginf_passage_note", title="Passage note (Table 11)",
                                    detail=f"note over {len(passages)} passages", nodes=nodes, question=question,
                                    passages=passages, expanded_query=expanded, max_sentences=p.offline_note_sentences)
        step.data = {"note": value}
        return str(value)

    def _kg_note(self, question: str, note: str, summary: str, memory: Memory, tracer: Tracer) -> str:
        if not summary:
            tracer.step("llm", "KG-augmented note skipped", "no KG summary: the note stays the passage note",
                        data={"prompt": "kg_infused.KG_NOTE", "skipped": True})
            return note
        value, step = tracer.reason("kginf_kg_note", title="KG-augmented note (Table 16)",
                                    detail="the passage note enhanced with the KG summary",
                                    question=question, note=note, summary=summary,
                                    facts=[f.sentence for f in memory.triples])
        step.nodes = [n for f in memory.triples for n in f.node("context")]
        step.data = {"kg_note": value}
        return str(value)

    # -- 8: context -----------------------------------------------------------------------------
    def _context(self, kg_note: str, passages: list[dict[str, Any]], memory: Memory, origin: str,
                 p: KGInfusedParams, tracer: Tracer, notes: dict[str, str]) -> RetrievedContext:
        items: list[ContextItem] = []
        if kg_note.strip():
            items.append(ContextItem(NOTE_ID, "note", kg_note, None, count_tokens(kg_note), "KG-augmented note"))
        if p.context_passages or p.budget_tokens:
            items += [ContextItem(x["id"], "chunk", x["text"], x["score"], count_tokens(x["text"]), x["title"])
                      for x in passages]
        if p.context_passages:
            items += [ContextItem(f.id, "triple", f.sentence, f.score, count_tokens(f.sentence), f.chunk_id or origin)
                      for f in memory.triples if f.in_store]
        entity_ids = list(dict.fromkeys([e for e in memory.activated]
                                        + [x for f in memory.triples for x in (f.subject_id, f.object_id)]))
        node_ids = [x["id"] for x in passages] + [f.id for f in memory.triples if f.in_store] + entity_ids
        tracer.step("context", "Context: the KG-augmented note" + (" + passages + triples" if p.context_passages else
                                                                  " + passages (equal budget)" if p.budget_tokens else ""),
                    f"{len(items)} items, {sum(i.n_tokens for i in items)} tokens; built from {len(passages)} passages "
                    f"and {len(memory.triples)} KG triples ({origin} KG)",
                    nodes=[NodeRef(x["id"], "Chunk", "context", x["title"]) for x in passages]
                    + [n for f in memory.triples for n in f.node("context")],
                    data={"kg_source": origin, "n_passages": len(passages), "n_triples": len(memory.triples),
                          "rounds": memory.rounds_run},
                    ours="" if not (p.context_passages or p.budget_tokens) else
                    ("passages" + (" and triples" if p.context_passages else "") + " after the note ("
                     + ("context_passages" if p.context_passages else f"budget_tokens={p.budget_tokens}")
                     + "); the paper's generator sees only the KG-augmented note, Eq. 11"))
        return RetrievedContext(items=items, node_ids=node_ids, notes=notes,
                                sources=_note_sources(items, passages, memory, origin))


def _note_sources(items: list[ContextItem], passages: list[dict[str, Any]], memory: Memory,
                  origin: str) -> list[ContextItem]:
    """What the notes were written from (the k_p passages, then the KG triples) that the context
    does not already hold: a claim drawn from a note is judged against these, never the note."""
    if not any(i.kind == "note" for i in items):
        return []
    held = {i.id for i in items}
    out = [ContextItem(x["id"], "chunk", x["text"], x["score"], count_tokens(x["text"]), x["title"])
           for x in passages if x["id"] not in held]
    out += [ContextItem(f.id, "triple", f.sentence, f.score, count_tokens(f.sentence), f.chunk_id or origin)
            for f in memory.triples if f.in_store and f.id not in held]
    return out


def _targets(facts: list[Fact]) -> dict[str, str]:
    """Entities the facts lead to (id -> name), in order."""
    out: dict[str, str] = {}
    for f in facts:
        out.setdefault(f.to, f.to_name)
    return out
