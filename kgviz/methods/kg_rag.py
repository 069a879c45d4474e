"""`kg-rag`: Chain of Explorations (CoE) over the triple graph — a reconstruction of paper 001.

The paper (KG-RAG, arXiv 2405.12035; we only have a structured summary, and no public code
exists) says: start nodes are found by vector similarity search, then CoE walks the KG hop by hop
with Cypher queries and LLM ranking, over a homogeneous KG whose triples may be *hypernodes*
(a triple whose subject or object is another triple, §4.1); CoE takes 4–5 steps on average.
Everything below beyond those sentences is **ours**:

1. Plan (task ``kgrag_plan``): the LLM names start entities, relations to follow and an expected
   hop count. The plan text (entities + relations) is a second query vector for ranking, each
   planned entity is its own seed query, and the planned hop count is shown to the evaluator.
2. Seeds: ``store.vector_search`` on Entity.emb with the question vector and with one vector per
   planned entity (the first four), and on Triple.emb with the question vector (``seed_pool``
   each). The best hit of every planned entity is taken first when its cosine reaches
   ``entity_match_min``, then the best remaining hits of either table, up to ``start_nodes``. A
   seed triple is a fact on the path from the start.
3. Expand: the walk keeps a frontier (the nodes the last hop reached; the seeds at first). The
   *anchors* of a hop are the frontier nodes, the subject/object of any frontier triple (so a
   walk that lands on a triple hypernode continues from what it is made of), the triples the last
   hop followed (so a hypernode *about* a followed fact becomes reachable), and the start nodes of
   planned entities that no path fact touches yet (so a comparison question can reach its second
   entity from a chain). Fixed reads (the ``Q_*`` statements of ``kgviz.graph.neighbourhood``,
   answered from the triple graph held in memory, ``kgviz.graph.triple_graph``) fetch per anchor: the triples that
   have it as SUBJ/OBJ (for a triple anchor, the hypernodes over it); for an entity anchor also
   the hypernodes one level up (a triple about a triple that has the entity as an end: "(X
   founded Y) in year 1921" is one sentence, so it is one hop from Y) and its RELATED edges. At most ``fetch_limit`` rows per anchor and kind,
   ordered by id so runs repeat (read for all anchors of a hop at once, each anchor once per run:
   see ``kgviz.graph.neighbourhood``). A candidate is one triple; following it moves the walk to
   the triple's other end (an entity, or a triple, which is then *opened*: its own fact joins the
   path). RELATED edges whose triple_id is not a Triple node become candidates with id
   ``rel:<src>|<relation>|<dst>``. Triples already on the path or rejected by a backtrack are not
   offered again.
4. Score: cosine of Triple.emb with the question (weight 1 − ``plan_weight``) and with the plan
   text (weight ``plan_weight``); candidates without a stored embedding are embedded on the fly.
5. Select (task ``kgrag_choose``): the ``top_k`` best are shown, numbered, with the facts
   collected so far; the LLM answers with numbers (ids are accepted too). Anything that is not a
   shown candidate is ignored and recorded; at most ``width`` are followed. LLM text is never run
   as a query and never adds nodes. (Offline heuristics of plan/choose/evaluate: see
   ``kgviz.tasks.kg_rag``.)
6. Evaluate (task ``kgrag_evaluate``) after every hop: STOP, CONTINUE or BACKTRACK. Backtrack pops
   the last hop, marks its followed triples rejected, and re-runs that hop without them (the
   chooser then picks the next best among the rest). A hop with no candidates, or where the LLM
   chose none, is a dead end: the previous hop is popped the same way when allowed, else the walk
   ends; the facts of a hop popped at a dead end stay in the context (a leaf is often the
   answer), those of a hop the evaluator rejected do not. The evaluator also gets the seed
   triples' facts (``seed_facts``): an answer can arrive as a seed. BACKTRACK when it is not
   allowed (or ``max_backtracks`` is spent) is recorded and treated as CONTINUE. An evaluate
   reply naming no decision is recorded as not understood and treated as CONTINUE.
7. Limits: at most ``max_hops`` hops on the path (5: the upper end of the paper's 4–5 step
   average, so an average walk fits) and ``max_backtracks`` backtracks; together they bound the
   LLM calls (1 plan + 2 per hop tried; at most 1 + 3·max_backtracks + 2·max_hops + 1).
8. Context: the path facts in walk order (seed triples, then each hop's followed and opened
   triples) as items of kind ``"triple"``, optionally each followed by its provenance sentence
   (``include_sentences``; kind ``"sentence"``, id ``<triple id>#sentence``; always for a fact of
   kind 'sentence', whose relation says no more than "in the same sentence as"), cut at
   ``max_context_tokens``. ``node_ids`` lists the facts' Triple nodes and their two ends.

9. Curated facts (``use_curated``; ours). A graph may also hold an imported curated KG
   (``kgviz import-kg``: entities and triples with origin 'curated'). KG-RAG builds its KG from the
   documents (paper 001), and a curated KG such as shared/data/kg_2wiki_evidence holds exactly the
   facts behind the evaluation questions: walking it is an oracle advantage over kg-retriever and
   KET, which read the corpus KG only. So by default (False) the walk never seeds on, fetches or
   follows a curated node, and the seed / expand steps count what they left out. With True the
   curated facts are walked like the others and labelled wherever they appear: every step's
   ``data["curated"]`` lists the curated nodes it touched (their labels start "[curated]"), a
   curated context item's ``source`` is "curated KG", and ``notes["curated"]`` counts them, so the
   Trace and Compare views show which facts were not extracted from the corpus.

Trace: llm (plan) → seed → per hop: expand → score → select → llm (evaluate) [→ prune] … →
context. Node/edge refs use real graph ids: a fact is its Triple node plus an edge subject_id →
object_id labelled with the relation (a ``rel:`` fact has no Triple node, so only the edge).
``data["path"]`` of the context step is the walk: seeds, then per hop (fact, node reached).
The walk is algorithm plus narrator: each step returns the typed record of the box line it carries
out (kgviz.methods.kg_rag_records; the box: kgviz.methods.algorithm_lines.KG_RAG) and
kgviz.methods.kg_rag_narrator turns it into the step the player shows, the record in
``TraceStep.record``. What the walk has read of the graph, and the only reads it makes, are
``_Graph``'s.

Presets: only "reconstruction" (the defaults; "paper" is accepted as its old name). There is no
"paper" or "code" preset, because there is no public code to match. Every trace step carries an
"ours" mark saying which part of it the paper names.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, cast

import numpy as np

from kgviz.errors import MethodError
from kgviz.facts.triples import SENTENCE_KIND
from kgviz.graph import neighbourhood as nb
from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import NeighbourRow
from kgviz.methods.base import (
    ContextItem, MethodContext, RetrievedContext, Tracer, check_params, param, register,
)
from kgviz.methods.budget import SkipAndContinue
from kgviz.methods.kg_rag_narrator import (
    PLAN_TITLE, choose_title, context_notes, evaluate_title, label_curated, mark_reconstruction, narrate_choice,
    narrate_context, narrate_neighbourhood, narrate_plan, narrate_ranking, narrate_start, narrate_step_back,
    narrate_verdict,
)
from kgviz.methods.kg_rag_records import (
    EVALUATOR_BACKTRACK, EVALUATOR_STOP, NO_CANDIDATE, NO_START, NONE_FOLLOWED, Candidate, Choice, ExplorationPlan,
    Neighbourhood, PathContext, Ranking, StartNodes, StepBack, Verdict, hop_limit,
)
from kgviz.task_results import KgRagChoice, KgRagDecision, KgRagPlan
from kgviz.text import count_tokens
from kgviz.vectors import cosine_rows

CURATED = "curated"  # Entity/Triple/RELATED origin of an imported KG (kgviz.index.import_kg)
CURATED_SOURCE = "curated KG"  # ContextItem.source of a curated fact (it has no chunk)


@dataclass(frozen=True)
class KGRagParams:
    max_hops: int = param(5, label="Maximum hops", min=1,
                          doc="hop limit; paper 001 (summary, Open Question 4) says CoE takes 4-5 steps on "
                              "average: we cap at the upper end (the cap itself is ours)")
    top_k: int = param(5, label="Candidates shown per hop", min=1, doc="candidates shown to the LLM per hop (ours)")
    start_nodes: int = param(5, label="Start nodes", min=1,
                             doc="start nodes taken from the vector search (paper: vector similarity finds "
                                 "start nodes; the number is ours: 5 rather than 3 since issue 12, measured offline at a "
                                 "3k budget: gold-in-context 35.5 -> 37.5 % on HotpotQA, 13 -> 17 % on MuSiQue, 35.6 -> "
                                 "37.3 % on 2Wiki)")
    seed_pool: int = param(10, label="Search hits per start-node lookup", min=1,
                           doc="hits fetched per vector search when looking for start nodes (ours)")
    entity_match_min: float = param(0.5, label="Entity match threshold (cosine)", min=-1.0, max=1.0,
                                    doc="a planned entity's best Entity hit is taken as a start node first only "
                                        "at this cosine or above (ours)")
    width: int = param(1, label="Paths followed per hop", min=1,
                       doc="candidates followed per hop; 1 = a single chain, as the name CoE suggests (ours)")
    allow_backtrack: bool = param(True, label="Allow backtracking",
                                  doc="let the evaluator pop a wrong hop and try the next-best candidate (ours)")
    max_backtracks: int = param(2, label="Maximum backtracks", min=0, doc="most backtracks per question (ours)")
    include_sentences: bool = param(False, label="Add source sentences",
                                    doc="add each path fact's provenance sentence to the context (ours; "
                                        "off by default: the paper grounds answers in the retrieved facts). A "
                                        "sentence fact (kind 'sentence', the offline extractor's fallback) always "
                                        "brings its sentence: its relation only says the two were named together")
    max_context_tokens: int = param(2000, label="Context budget (tokens)", min=1,
                                    doc="token budget of the context; facts past it are dropped (ours)")
    fetch_limit: int = param(100, label="Neighbours fetched per node",
                             doc="rows per neighbourhood query per anchor, bounds hub nodes (ours)")
    plan_weight: float = param(0.5, label="Weight of the plan vs the question", min=0.0, max=1.0,
                               doc="weight of similarity to the plan text vs the question when ranking (ours)")
    use_curated: bool = param(False, label="Walk the curated KG too (labelled)",
                              doc="also walk the imported curated KG (kgviz import-kg), its facts labelled "
                                  "'[curated]' in the trace (ours). Off by default: paper 001 walks the KG built "
                                  "from the documents, and a curated KG built for the evaluation questions is an "
                                  "oracle the other methods do not read")

    def __post_init__(self) -> None:
        check_params(self, "kg-rag")


@dataclass(frozen=True)
class Hop:
    """A hop on the path: the facts it followed (with their similarity) and the triple hypernodes
    it landed on."""

    number: int
    chosen: tuple[Candidate, ...]
    score: dict[str, float]
    opened: tuple[str, ...] = ()


def _fact_text(row: NeighbourRow) -> str:
    text = str(row.get("text") or "").strip()
    return text or " ".join(str(row.get(k) or "") for k in ("subject", "relation", "object")).strip()


def _candidate(row: NeighbourRow, anchor: str, other: str) -> Candidate:
    return Candidate(row["id"], _fact_text(row), str(row.get("relation") or ""),
                     str(row.get("subject_id") or ""), str(row.get("object_id") or ""), anchor, other)


class _Graph:
    """What one walk has read of the graph, and the only reads it makes: the fixed queries of
    kgviz.graph.neighbourhood, each node, neighbourhood and stored vector at most once per run."""

    def __init__(self, store: GraphStore, fetch_limit: int) -> None:
        self.store, self.fetch_limit = store, fetch_limit
        self.tables: dict[str, str] = {}  # node id -> "Entity" | "Triple"
        self.labels: dict[str, str] = {}
        self.rows: dict[str, NeighbourRow] = {}  # triple id -> row
        self.synthetic: dict[str, NeighbourRow] = {}  # rel:... id -> row-like dict (no Triple node)
        self.curated: set[str] = set()  # ids of curated nodes / rel: facts seen (see use_curated)
        self.embs: dict[str, np.ndarray | None] = {}  # triple id -> stored Triple.emb (None: has none)
        self.fetched: dict[tuple[str, str], list[NeighbourRow]] = {}  # (query, anchor) -> its rows
        self.at_entity: dict[str, list[NeighbourRow]] = {}  # entity -> all triples at it
        self.at_triple: dict[str, list[NeighbourRow]] = {}  # triple -> all triples at it

    def row(self, fact: str) -> NeighbourRow:
        return self.rows.get(fact) or self.synthetic[fact]

    def resolve(self, ids: list[str]) -> None:
        """Learn table + label of node ids (an id may be an Entity or a Triple; Triple wins)."""
        todo = sorted({i for i in ids if i and i not in self.tables})
        if not todo:
            return
        rows = nb.nodes_by_id(self.store, todo)
        for row in rows:
            if row.get("origin") == CURATED:
                self.curated.add(row["id"])
            if row.pop("tbl") == "Triple":
                row.pop("name", None)
                self.remember_triple(row)
        for row in rows:
            if "name" in row and row["id"] not in self.tables:
                self.tables[row["id"]] = "Entity"
                self.labels[row["id"]] = str(row.get("name") or row["id"])

    def remember_triple(self, row: NeighbourRow) -> None:
        if row.get("origin") == CURATED:  # its ends are learnt with their own rows (resolve)
            self.curated.add(row["id"])
        self.rows[row["id"]] = row
        self.tables[row["id"]] = "Triple"
        self.labels[row["id"]] = _fact_text(row)

    def remember_related(self, r: NeighbourRow) -> str:
        """Learn a RELATED edge's two entities; returns the fact it stands for: its Triple node
        when the graph has one, else a ``rel:<src>|<relation>|<dst>`` fact made from the edge."""
        self.curated.update(r[k] for k in ("src", "dst") if r.get(f"{k}_origin") == CURATED)
        self.tables.setdefault(r["src"], "Entity")
        self.tables.setdefault(r["dst"], "Entity")
        self.labels.setdefault(r["src"], str(r.get("src_name") or r["src"]))
        self.labels.setdefault(r["dst"], str(r.get("dst_name") or r["dst"]))
        tid = str(r.get("triple_id") or "")
        if tid in self.rows:
            return tid
        cid = f"rel:{r['src']}|{r['relation']}|{r['dst']}"
        if r.get("origin") == CURATED:
            self.curated.add(cid)
        fact = f"{self.labels[r['src']]} {r['relation']} {self.labels[r['dst']]}"
        self.synthetic[cid] = {"id": cid, "subject_id": r["src"], "object_id": r["dst"],
                               "relation": str(r["relation"]), "text": fact}
        self.labels[cid] = fact
        return cid

    def hits(self, anchors: list[str]) -> tuple[list[tuple[str, str, NeighbourRow]], list[NeighbourRow]]:
        """The anchors' triples (anchor, the anchor's side, row) and RELATED edges, anchor by anchor."""
        ents = [a for a in anchors if self.tables[a] == "Entity"]
        tris = [a for a in anchors if self.tables[a] != "Entity"]
        got = self.neighbourhood(ents, tris)
        at_ent, hyper, at_tri = got["Q_TRIPLES_AT_ENTITY"], got["Q_HYPER_AT_ENTITY"], got["Q_TRIPLES_AT_TRIPLE"]
        triple_hits: list[tuple[str, str, NeighbourRow]] = []
        related: list[NeighbourRow] = []
        for a in anchors:  # the per-anchor order of the hits decides which anchor a candidate keeps
            if self.tables[a] == "Entity":
                triple_hits += [(a, r["side"], r) for r in at_ent.get(a, [])]
                # the inner triple is what the walk passes through to reach the hypernode
                triple_hits += [(r["inner"], r["side"], r) for r in hyper.get(a, [])]
                related += got["Q_RELATED_OUT"].get(a, [])
                related += [{**r, "_in": True} for r in got["Q_RELATED_IN"].get(a, [])]
            else:
                triple_hits += [(a, r["side"], r) for r in at_tri.get(a, [])]
        return triple_hits, related

    def candidates(self, triple_hits: list[tuple[str, str, NeighbourRow]],
                   related: list[NeighbourRow]) -> dict[str, Candidate]:
        """One candidate per fact (the first anchor that reached it keeps it), its ends resolved."""
        for _, _, row in triple_hits:
            self.remember_triple(row)
        known = {row["id"] for _, _, row in triple_hits}
        self.resolve([str(r.get("triple_id") or "") for r in related if r.get("triple_id") not in known])
        cands: dict[str, Candidate] = {}
        for a, side, row in triple_hits:
            other = row.get("object_id") if side == "SUBJ" else row.get("subject_id")
            cands.setdefault(row["id"], _candidate(row, a, str(other or "")))
        for r in related:
            anchor, other = (r["dst"], r["src"]) if r.get("_in") else (r["src"], r["dst"])
            fact = self.remember_related(r)
            if fact in self.rows:
                cands.setdefault(fact, _candidate(self.rows[fact], anchor, other))
            else:
                cands.setdefault(fact, Candidate(fact, self.labels[fact], str(r["relation"]), r["src"], r["dst"],
                                                 anchor, other, has_node=False))
        self.resolve([c.target for c in cands.values()])
        return cands

    def neighbourhood(self, ents: list[str], tris: list[str]) -> dict[str, dict[str, list[NeighbourRow]]]:
        """{query name: {anchor: its first ``fetch_limit`` rows, in the query's order}}, each
        anchor fetched once per run. The hypernodes one level up from an entity (the rows of
        ``Q_HYPER_AT_ENTITY``) are the triples *at* the triples at the entity, so they are put
        together from the complete rows of the two other queries: one statement fewer per hop."""
        new_ents = [a for a in ents if a not in self.at_entity]
        self.at_entity.update(nb.neighbourhood(self.store, "Q_TRIPLES_AT_ENTITY", new_ents))
        inner = [r["id"] for a in new_ents for r in self.at_entity[a]]
        self.at_triple.update(nb.neighbourhood(
            self.store, "Q_TRIPLES_AT_TRIPLE", [t for t in dict.fromkeys(tris + inner) if t not in self.at_triple]))
        for a in new_ents:
            hyper: dict[tuple[str, str, str], NeighbourRow] = {}  # DISTINCT, as the query was
            for i in self.at_entity[a]:
                for t in self.at_triple[i["id"]]:
                    row = cast(NeighbourRow, {"side": t["side"], "inner": i["id"],
                                              **{k: v for k, v in t.items() if k != "side"}})
                    hyper.setdefault((row["side"], row["inner"], row["id"]), row)
            self._keep("Q_HYPER_AT_ENTITY", a, list(hyper.values()))
            self._keep("Q_TRIPLES_AT_ENTITY", a, self.at_entity[a])
        for tid in tris:
            if ("Q_TRIPLES_AT_TRIPLE", tid) not in self.fetched:
                self._keep("Q_TRIPLES_AT_TRIPLE", tid, self.at_triple[tid])
        for name in ("Q_RELATED_OUT", "Q_RELATED_IN"):
            got = nb.neighbourhood(self.store, name, new_ents)
            for a in new_ents:
                self._keep(name, a, got[a])
        return {name: {a: self.fetched[(name, a)] for a in (tris if name == "Q_TRIPLES_AT_TRIPLE" else ents)}
                for name in nb.ORDER}

    def _keep(self, name: str, anchor: str, rows: list[NeighbourRow]) -> None:
        """What the per-anchor ``ORDER BY ... LIMIT fetch_limit`` query returned."""
        order = nb.ORDER[name]
        # the first fetch_limit in sorted order (heapq.nsmallest is sorted(...)[:n], ties included)
        self.fetched[(name, anchor)] = heapq.nsmallest(max(self.fetch_limit, 0), rows,
                                                       key=lambda r: nb.sort_key(r, order))

    def stored_embeddings(self, ids: list[str]) -> dict[str, np.ndarray]:
        """Triple.emb of ``ids`` that have one; each triple is read at most once per run."""
        todo = sorted({i for i in ids if i not in self.embs})
        if todo:
            for row in nb.triple_vectors(self.store, todo):
                self.embs[row["id"]] = np.asarray(row["emb"], dtype=np.float32)
            for i in todo:
                self.embs.setdefault(i, None)
        return {i: v for i in ids if (v := self.embs[i]) is not None}


class _Walk:
    """One CoE run; the state lives here so ``run`` reads as the algorithm. Each step computes its
    record and hands it to the narrator (kgviz.methods.kg_rag_narrator)."""

    def __init__(self, question: str, ctx: MethodContext, p: KGRagParams, tracer: Tracer) -> None:
        self.q, self.ctx, self.p, self.tr = question, ctx, p, tracer
        self.g = _Graph(ctx.store, p.fetch_limit)
        self.seed_nodes: list[str] = []
        self.planned_seeds: list[str] = []  # seeds that are the best hit of a planned entity
        self.seed_scores: dict[str, float] = {}
        self.hops: list[Hop] = []
        self.rejected: set[str] = set()
        self.leaf_facts: list[str] = []  # facts of hops popped at a dead end: kept, see ``backtrack``
        self.backtracks = 0
        self.plan = KgRagPlan((), (), 1)  # replaced by plan_step before any other step reads it
        self.qv = self.pv = np.zeros(0, dtype=np.float32)  # question / plan vectors, set by seed_step

    # -- state derived from the hop stack -------------------------------------------------------
    def path_facts(self) -> list[str]:
        out = [n for n in self.seed_nodes if self.g.tables.get(n) == "Triple"]
        out += [t for t in self.leaf_facts if t not in out]
        for h in self.hops:
            for tid in [c.id for c in h.chosen] + list(h.opened):
                if tid not in out:
                    out.append(tid)
        return out

    def visited(self) -> set[str]:
        v = set(self.seed_nodes)
        for h in self.hops:
            v.update(c.target for c in h.chosen)
            v.update(h.opened)
        return v

    def frontier(self) -> tuple[list[str], list[str]]:
        """(frontier nodes, triples followed by the last hop)."""
        if not self.hops:
            return list(self.seed_nodes), []
        last = self.hops[-1]
        followed = [c.id for c in last.chosen if c.has_node]
        return list(dict.fromkeys(c.target for c in last.chosen)), followed

    def waiting_seeds(self) -> list[str]:
        """Start nodes of planned entities that no path fact touches yet."""
        touched: set[str] = set()
        for t in self.path_facts():
            row = self.g.rows.get(t) or self.g.synthetic.get(t) or {}
            touched.update({t, str(row.get("subject_id") or ""), str(row.get("object_id") or "")})
        return [n for n in self.planned_seeds if n not in touched]

    def anchors(self) -> list[str]:
        nodes, followed = self.frontier()
        if self.hops:
            nodes += [n for n in self.waiting_seeds() if n not in nodes]
        out: list[str] = []
        for n in nodes:
            out.append(n)
            row = self.g.rows.get(n)
            if row is not None:
                out.extend(x for x in (row.get("subject_id"), row.get("object_id")) if x)
        out.extend(followed)
        self.g.resolve(out)
        return [a for a in dict.fromkeys(out) if a in self.g.tables]

    # -- the box's lines ---------------------------------------------------------------------------
    def plan_step(self) -> None:
        """Line 1: plan ← LLM(q)."""
        plan, s = self.tr.reason("kgrag_plan", title=PLAN_TITLE, question=self.q, max_hops=self.p.max_hops)
        assert isinstance(plan, KgRagPlan)
        self.plan = plan
        narrate_plan(s, ExplorationPlan(plan, self.p.max_hops))

    def seed_step(self) -> None:
        """Line 2: start nodes by vector search (the question, each planned entity, the triples)."""
        ents = [str(e) for e in self.plan.entities][:4]
        plan_text = " ".join(ents + [str(r) for r in self.plan.relations]) or self.q
        vecs = np.asarray(self.ctx.embedder.embed([self.q, plan_text] + ents), dtype=np.float32)
        self.qv, self.pv = vecs[0], vecs[1]
        store, k = self.ctx.store, self.p.seed_pool
        curated_in_graph = nb.has_entities_of_origin(store, CURATED)
        # only a graph that holds a curated KG needs the filter (and the filtered search path)
        where = {"origin": "corpus"} if curated_in_graph and not self.p.use_curated else None
        hits: dict[str, float] = {}
        table: dict[str, str] = {}
        first: list[str] = []  # best hit of each planned entity, in plan order
        for i, v in enumerate([vecs[0]] + list(vecs[2:])):
            res = store.vector_search("Entity", v, k, where=where)
            for nid, sc in res:
                hits[nid], table[nid] = max(hits.get(nid, -1.0), float(sc)), "Entity"
            if i > 0 and res and res[0][1] >= self.p.entity_match_min and res[0][0] not in first:
                first.append(res[0][0])
        for nid, sc in store.vector_search("Triple", vecs[0], k, where=where):
            hits[nid], table[nid] = max(hits.get(nid, -1.0), float(sc)), "Triple"
        self.g.resolve(list(hits))
        ranked = sorted(hits, key=lambda n: (-hits[n], n))
        chosen = list(first[: self.p.start_nodes])
        chosen += [n for n in ranked if n not in chosen][: self.p.start_nodes - len(chosen)]
        self.seed_nodes = [n for n in chosen if n in self.g.tables]
        self.seed_scores = {n: hits[n] for n in self.seed_nodes}
        self.planned_seeds = [n for n in first if n in self.seed_nodes]
        narrate_start(self.tr, StartNodes(
            cosine=hits, table={n: self.g.tables.get(n, table[n]) for n in ranked}, ranked=tuple(ranked),
            planned_hits=tuple(first), taken=tuple(chosen), seeds=tuple(self.seed_nodes), seed_pool=k,
            start_nodes=self.p.start_nodes, curated_in_graph=curated_in_graph, use_curated=self.p.use_curated),
            self.g.labels)

    def expand(self, hop_no: int) -> Neighbourhood:
        """Line 4: the new facts next to the anchors (fixed Cypher queries)."""
        anchors = self.anchors()
        triple_hits, related = self.g.hits(anchors)
        n_curated = 0
        if not self.p.use_curated:  # the curated KG stays out of the walk (use_curated)
            before = len(triple_hits) + len(related)
            triple_hits = [h for h in triple_hits if h[2].get("origin") != CURATED]
            related = [r for r in related if r.get("origin") != CURATED]
            n_curated = before - len(triple_hits) - len(related)
        cands = self.g.candidates(triple_hits, related)
        tables = self.g.tables
        if not self.p.use_curated:  # a corpus fact never leads into the curated KG either
            into = [cid for cid, c in cands.items() if c.target in self.g.curated]
            n_curated += len(into)
            for cid in into:
                del cands[cid]
        dangling = [c for c in cands.values() if c.target not in tables]
        on_path = set(self.path_facts())
        out = tuple(replace(c, target_table=tables[c.target]) for c in cands.values()
                    if c.target in tables and c.id not in on_path and c.id not in self.rejected)
        hood = Neighbourhood(hop_no, tuple(anchors), out, fetched=len(cands),
                             excluded=len(cands) - len(out) - len(dangling), dangling=len(dangling),
                             curated_left_out=n_curated)
        narrate_neighbourhood(self.tr, hood, self.g.labels)
        return hood

    def score(self, hood: Neighbourhood) -> Ranking:
        """Line 5: similarity = (1 − w)·cos(fact, question) + w·cos(fact, plan)."""
        cands = hood.candidates
        stored = self.g.stored_embeddings([c.id for c in cands if c.has_node])
        need = [c for c in cands if stored.get(c.id) is None or not np.any(stored[c.id])]
        fresh = self.ctx.embedder.embed([c.fact for c in need]) if need else np.zeros((0, len(self.qv)))
        need_ids = {c.id for c in need}
        emb = {c.id: np.asarray(stored[c.id], dtype=np.float32) for c in cands if c.id not in need_ids}
        emb.update({c.id: np.asarray(v, dtype=np.float32) for c, v in zip(need, fresh)})
        m = np.stack([emb[c.id] for c in cands])
        w = self.p.plan_weight
        q_cos, p_cos = cosine_rows(m, self.qv), cosine_rows(m, self.pv)
        score: dict[str, float] = {}
        parts: dict[str, dict[str, float]] = {}
        for c, v, a, b in zip(cands, (1 - w) * q_cos + w * p_cos, q_cos, p_cos):
            score[c.id] = round(float(v), 4)
            parts[c.id] = {"question": round((1 - w) * float(a), 4), "plan": round(w * float(b), 4)}
        ranking = Ranking(hood.hop, tuple(sorted(score, key=lambda i: (-score[i], i))), score, parts,
                          {"question": 1 - w, "plan": w}, tuple(c.id for c in need), self.p.top_k)
        narrate_ranking(self.tr, ranking, hood)
        return ranking

    def select(self, hood: Neighbourhood, ranking: Ranking) -> Hop:
        """Line 6: the chooser follows at most ``width`` of the top-k; the hop it makes (its
        followed facts may be none)."""
        by_id = {c.id: c for c in hood.candidates}
        shown = [by_id[i] for i in ranking.ranked[: self.p.top_k]]
        visited = self.visited()
        facts = [self.g.labels[t] for t in self.path_facts()]
        view = [{"n": i, "id": c.id, "fact": c.fact, "score": ranking.score[c.id],
                 "target_visited": c.target in visited} for i, c in enumerate(shown, 1)]
        res, s = self.tr.reason("kgrag_choose", title=choose_title(hood.hop), kind="select",
                                question=self.q, plan=self.plan, path_facts=facts, candidates=view,
                                width=self.p.width)
        assert isinstance(res, KgRagChoice)
        ids = [c.id for c in shown]
        chosen = [by_id[i] for i in res.chosen if i in ids]
        # the deciding number: offline, the heuristic's own score (its formula is the LLM task line);
        # a model gives none, so the similarity it was shown stands, with the pick said in words
        offline = bool(res.offline_scores)
        path = set(self.path_facts())
        opened = [c.target for c in chosen if c.target_table == "Triple" and c.target not in path]
        choice = Choice(
            hood.hop, tuple(ids), tuple(c.id for c in chosen), tuple(res.ignored), res.said_none,
            "offline heuristic" if offline else "model",
            score={i: float(res.offline_scores.get(i, ranking.score[i])) for i in ids},
            parts={i: dict(res.offline_parts.get(i) or ranking.parts[i]) for i in ids},
            order=tuple(res.offline_scores) if offline else tuple(ids),
            opened=tuple(dict.fromkeys(opened)))  # landing on a hypernode: its own fact is collected too
        narrate_choice(s, choice, hood, self.g.labels)
        return Hop(hood.hop, tuple(chosen), {c.id: ranking.score[c.id] for c in chosen}, choice.opened)

    def evaluate(self, hop: Hop) -> str:
        """Line 8: STOP, CONTINUE or BACKTRACK (a BACKTRACK not allowed is carried out as CONTINUE)."""
        labels = self.g.labels
        new = [c.id for c in hop.chosen] + list(hop.opened)
        res, s = self.tr.reason("kgrag_evaluate", title=evaluate_title(hop.number),
                                question=self.q, plan=self.plan, facts=[labels[t] for t in self.path_facts()],
                                new_facts=[labels[t] for t in new],
                                hops_done=len(self.hops), max_hops=self.p.max_hops,
                                allow_backtrack=self.p.allow_backtrack,
                                seed_facts=[labels[t] for t in self.seed_nodes if self.g.tables.get(t) == "Triple"])
        assert isinstance(res, KgRagDecision)
        decision: str = res.decision
        refused: Literal["", "backtracking off", "backtracks spent"] = ""
        if decision == "backtrack" and not self._can_backtrack():
            refused = "backtracking off" if not self.p.allow_backtrack else "backtracks spent"
            decision = "continue"
        narrate_verdict(s, Verdict(hop.number, res.decision, decision, res.reason, res.parsed, tuple(new), refused,
                                   self.p.max_backtracks))
        return decision

    def _can_backtrack(self) -> bool:
        return self.p.allow_backtrack and self.backtracks < self.p.max_backtracks and bool(self.hops)

    def backtrack(self, reason: str, *, dead_end: bool = False) -> None:
        """Line 7: pop the last hop and retry it without its choice. At a dead end the popped hop is
        the one that reached a leaf, and a leaf is often the answer ("... born in 1954"): its facts
        are not wrong, only a branch that goes nowhere, so they stay in the context (``leaf_facts``)
        while the walk tries another branch. A backtrack the evaluator asked for drops them."""
        hop = self.hops.pop()
        self.backtracks += 1
        self.rejected.update(c.id for c in hop.chosen)
        facts = [c.id for c in hop.chosen] + list(hop.opened)
        kept = [t for t in facts if t not in self.leaf_facts] if dead_end else []
        self.leaf_facts += kept
        narrate_step_back(self.tr, StepBack(hop.number, reason, dead_end, hop.chosen, hop.score, hop.opened,
                                            tuple(kept), self.backtracks), self.g.labels)

    def context(self, stop_reason: str) -> RetrievedContext:
        """Line 9: the path's facts in walk order, cut at ``max_context_tokens``."""
        items: list[ContextItem] = []
        dropped: list[str] = []
        budget = SkipAndContinue(self.p.max_context_tokens)  # a fact that does not fit is dropped; later ones may fit
        scores = {t: sc for h in self.hops for t, sc in h.score.items()} | self.seed_scores
        rows = {t: self.g.row(t) for t in self.path_facts()}
        for tid, row in rows.items():
            for it in self._items(tid, row, scores.get(tid), items):
                if not budget.take(it.n_tokens):
                    dropped.append(it.id)
                    continue
                items.append(it)
        kept = [i.id for i in items if i.kind == "triple"]
        ends = {t: (str(rows[t].get("subject_id") or ""), str(rows[t].get("object_id") or ""),
                    str(rows[t].get("relation") or "")) for t in kept}
        rec = PathContext(stop_reason, len(self.hops), self.backtracks, tuple(kept), ends,
                          with_node=tuple(t for t in kept if t in self.g.rows),
                          score={t: scores[t] for t in kept if t in scores}, dropped=tuple(dropped),
                          tokens=budget.used, budget=self.p.max_context_tokens, path=tuple(self.path_node_sequence()),
                          curated=tuple(t for t in kept if t in self.g.curated))
        narrate_context(self.tr, rec, self.g.labels)
        # graph nodes only: a rel:... fact contributes its two entities
        node_ids = list(dict.fromkeys([*rec.with_node, *(x for t in kept for x in ends[t][:2] if x)]))
        return RetrievedContext(items=items, node_ids=node_ids, notes=context_notes(rec, self.plan))

    def _items(self, tid: str, row: NeighbourRow, score: float | None, items: list[ContextItem]) -> list[ContextItem]:
        """A path fact as context items: the fact, and its provenance sentence when asked for (or
        when it is a sentence fact) and not already in ``items``."""
        label = self.g.labels[tid]
        source = CURATED_SOURCE if tid in self.g.curated else str(row.get("chunk_id") or "")
        out = [ContextItem(tid, "triple", label, score, count_tokens(label), source)]
        sent = str(row.get("sentence") or "").strip()
        # a sentence fact says only "in the same sentence as": its sentence is what it states
        with_sentence = self.p.include_sentences or row.get("kind") == SENTENCE_KIND
        if with_sentence and sent and all(i.text != sent for i in items):
            out.append(ContextItem(f"{tid}#sentence", "sentence", sent, None, count_tokens(sent), source))
        return out

    def path_node_sequence(self) -> list[str]:
        """Seeds, then per hop the followed triples and the nodes they reached (for highlighting)."""
        seq = list(self.seed_nodes)
        for h in self.hops:
            for c in h.chosen:
                seq += [c.id, c.target]
        return seq

    # -- the algorithm -------------------------------------------------------------------------
    def run(self) -> RetrievedContext:
        self.plan_step()
        self.seed_step()
        if not self.seed_nodes:
            return self.context(NO_START)
        stop_reason = hop_limit(self.p.max_hops)
        while len(self.hops) < self.p.max_hops:
            hood = self.expand(len(self.hops) + 1)
            hop = self.select(hood, self.score(hood)) if hood.candidates else None
            if hop is None or not hop.chosen:
                why = NO_CANDIDATE if hop is None else NONE_FOLLOWED
                if self._can_backtrack():
                    self.backtrack(why, dead_end=True)
                    continue
                stop_reason = why
                break
            self.hops.append(hop)
            decision = self.evaluate(hop)
            if decision == "stop":
                stop_reason = EVALUATOR_STOP
                break
            if decision == "backtrack":
                self.backtrack(EVALUATOR_BACKTRACK)
        return self.context(stop_reason)


@register
class KGRag:
    name: ClassVar[str] = "kg-rag"
    title: ClassVar[str] = "KG-RAG (Chain of Explorations, reconstruction)"
    paper: ClassVar[str] = "001"
    Params: ClassVar[type] = KGRagParams
    # the reconstruction's defaults, named for what they are: with no paper code there is no
    # "paper" setting to match; "paper" (the name until issue 27) is still accepted for it
    presets: ClassVar[dict[str, Any]] = {"reconstruction": KGRagParams()}
    preset_aliases: ClassVar[dict[str, str]] = {"paper": "reconstruction"}
    budget_param: ClassVar[str | None] = "max_context_tokens"
    no_context: ClassVar[bool] = False

    def retrieve(self, question: str, ctx: MethodContext, params: KGRagParams,
                 tracer: Tracer) -> RetrievedContext:
        if not question.strip():
            raise MethodError("kg-rag needs a non-empty question")
        if tracer.reasoner is None:
            tracer.reasoner = ctx.reasoner
        first = len(tracer.steps)
        walk = _Walk(question, ctx, params, tracer)
        try:
            return walk.run()
        finally:  # a walk that fails part-way still shows which of its facts were curated
            label_curated(tracer.steps[first:], walk.g.curated)
            mark_reconstruction(tracer.steps[first:])
