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
   entity from a chain). Fixed, parameterised Cypher queries (the ``Q_*`` constants of
   ``kgviz.graph.neighbourhood``, listed in its ``QUERIES``) fetch per anchor: the triples that
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

Presets: only "reconstruction" (the defaults; "paper" is accepted as its old name). There is no
"paper" or "code" preset, because there is no public code to match. Every trace step carries an
"ours" mark saying which part of it the paper names.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import numpy as np

from kgviz.errors import MethodError
from kgviz.facts.triples import SENTENCE_KIND
from kgviz.graph import neighbourhood as nb
from kgviz.graph.rows import NeighbourRow
from kgviz.methods import deciding
from kgviz.methods.base import (
    ContextItem, EdgeRef, MethodContext, NodeRef, RetrievedContext, Role, Tracer, check_params, mark_ours, param, register,
)
from kgviz.methods.budget import SkipAndContinue
from kgviz.task_results import KgRagChoice, KgRagDecision, KgRagPlan
from kgviz.text import count_tokens
from kgviz.vectors import cosine_rows

CURATED = "curated"  # Entity/Triple/RELATED origin of an imported KG (kgviz.index.import_kg)
CURATED_TAG = "[curated] "  # ours: the trace label prefix of a curated node
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


@dataclass
class Candidate:
    id: str  # triple id (or rel:... for a RELATED edge without a Triple node)
    fact: str
    relation: str
    subject_id: str
    object_id: str
    anchor: str  # node it was reached from
    target: str  # node the walk moves to when following it
    target_table: str = "Entity"
    target_label: str = ""
    score: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)  # the similarity's terms (question, plan)

    @property
    def edge(self) -> tuple[str, str, str]:
        return self.subject_id, self.object_id, self.relation


@dataclass
class Hop:
    number: int
    chosen: list[Candidate]
    opened: list[str] = field(default_factory=list)  # triple hypernodes the hop landed on


def _fact_text(row: NeighbourRow) -> str:
    text = str(row.get("text") or "").strip()
    return text or " ".join(str(row.get(k) or "") for k in ("subject", "relation", "object")).strip()


class _Walk:
    """One CoE run; the state lives here so ``retrieve`` reads as the algorithm."""

    def __init__(self, question: str, ctx: MethodContext, p: KGRagParams, tracer: Tracer) -> None:
        self.q, self.ctx, self.p, self.tr = question, ctx, p, tracer
        self.tables: dict[str, str] = {}  # node id -> "Entity" | "Triple"
        self.labels: dict[str, str] = {}
        self.rows: dict[str, NeighbourRow] = {}  # triple id -> row
        self.synthetic: dict[str, NeighbourRow] = {}  # rel:... id -> row-like dict (no Triple node)
        self.seed_nodes: list[str] = []
        self.planned_seeds: list[str] = []  # seeds that are the best hit of a planned entity
        self.seed_scores: dict[str, float] = {}
        self.hops: list[Hop] = []
        self.rejected: set[str] = set()
        self.leaf_facts: list[str] = []  # facts of hops popped at a dead end: kept, see ``backtrack``
        self.backtracks = 0
        self.plan = KgRagPlan((), (), 1)  # replaced by plan_step before any other step reads it
        self.plan_detail = ""
        self.qv = self.pv = np.zeros(0, dtype=np.float32)  # question / plan vectors, set by seed_step
        self.embs: dict[str, np.ndarray | None] = {}  # triple id -> stored Triple.emb (None: has none)
        self.fetched: dict[tuple[str, str], list[NeighbourRow]] = {}  # (query, anchor) -> its rows
        self.at_entity: dict[str, list[NeighbourRow]] = {}  # entity -> all triples at it
        self.at_triple: dict[str, list[NeighbourRow]] = {}  # triple -> all triples at it
        self.curated: set[str] = set()  # ids of curated nodes / rel: facts seen (see use_curated)
        self.curated_in_graph = False  # set by seed_step

    # -- graph access: only the fixed queries of kgviz.graph.neighbourhood ever run -----------

    def _resolve(self, ids: list[str]) -> None:
        """Learn table + label of node ids (an id may be an Entity or a Triple; Triple wins)."""
        todo = sorted({i for i in ids if i and i not in self.tables})
        if not todo:
            return
        rows = nb.nodes_by_id(self.ctx.store, todo)
        for row in rows:
            if row.get("origin") == CURATED:
                self.curated.add(row["id"])
            if row.pop("tbl") == "Triple":
                row.pop("name", None)
                self._remember_triple(row)
        for row in rows:
            if "name" in row and row["id"] not in self.tables:
                self.tables[row["id"]] = "Entity"
                self.labels[row["id"]] = str(row.get("name") or row["id"])

    def _remember_triple(self, row: NeighbourRow) -> None:
        if row.get("origin") == CURATED:  # its ends are learnt with their own rows (_resolve)
            self.curated.add(row["id"])
        self.rows[row["id"]] = row
        self.tables[row["id"]] = "Triple"
        self.labels[row["id"]] = _fact_text(row)

    # -- state derived from the hop stack -------------------------------------------------------
    def path_facts(self) -> list[str]:
        out = [n for n in self.seed_nodes if self.tables.get(n) == "Triple"]
        out += [t for t in self.leaf_facts if t not in out]
        for h in self.hops:
            for tid in [c.id for c in h.chosen] + h.opened:
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
        followed = [c.id for c in last.chosen if c.id in self.rows]
        return list(dict.fromkeys(c.target for c in last.chosen)), followed

    def waiting_seeds(self) -> list[str]:
        """Start nodes of planned entities that no path fact touches yet."""
        touched: set[str] = set()
        for t in self.path_facts():
            row = self.rows.get(t) or self.synthetic.get(t) or {}
            touched.update({t, str(row.get("subject_id") or ""), str(row.get("object_id") or "")})
        return [n for n in self.planned_seeds if n not in touched]

    def anchors(self) -> list[str]:
        nodes, followed = self.frontier()
        if self.hops:
            nodes += [n for n in self.waiting_seeds() if n not in nodes]
        out: list[str] = []
        for n in nodes:
            out.append(n)
            row = self.rows.get(n)
            if row is not None:
                out.extend(x for x in (row.get("subject_id"), row.get("object_id")) if x)
        out.extend(followed)
        self._resolve(out)
        return [a for a in dict.fromkeys(out) if a in self.tables]

    # -- steps ---------------------------------------------------------------------------------
    def plan_step(self) -> None:
        plan, s = self.tr.reason("kgrag_plan", title="Plan the exploration", question=self.q,
                                 max_hops=self.p.max_hops)
        assert isinstance(plan, KgRagPlan)
        self.plan = plan
        self.plan_detail = (f"entities: {', '.join(plan.entities) or '-'}; "
                            f"relations: {', '.join(plan.relations) or '-'}; expected hops: {plan.hops}")
        s.detail = self.plan_detail + "".join(f" ({n})" for n in plan.notes)
        s.data = {"plan": plan.to_dict()}

    def seed_step(self) -> None:
        ents = [str(e) for e in self.plan.entities][:4]
        plan_text = " ".join(ents + [str(r) for r in self.plan.relations]) or self.q
        vecs = np.asarray(self.ctx.embedder.embed([self.q, plan_text] + ents), dtype=np.float32)
        self.qv, self.pv = vecs[0], vecs[1]
        store, k = self.ctx.store, self.p.seed_pool
        self.curated_in_graph = nb.has_entities_of_origin(store, CURATED)
        # only a graph that holds a curated KG needs the filter (and the filtered search path)
        where = {"origin": "corpus"} if self.curated_in_graph and not self.p.use_curated else None
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
        self._resolve(list(hits))
        ranked = sorted(hits, key=lambda n: (-hits[n], n))
        chosen = list(first[: self.p.start_nodes])
        chosen += [n for n in ranked if n not in chosen][: self.p.start_nodes - len(chosen)]
        self.seed_nodes = [n for n in chosen if n in self.tables]
        self.seed_scores = {n: hits[n] for n in self.seed_nodes}
        self.planned_seeds = [n for n in first if n in self.seed_nodes]
        nodes = [NodeRef(n, self.tables.get(n, table[n]), "chosen" if n in self.seed_nodes else "candidate",
                         self.labels.get(n, n), round(hits[n], 4)) for n in ranked]
        # the order the start nodes were taken in: planned entities' best hits first, then by cosine
        deciding.set_ranks(nodes, chosen + [n for n in ranked if n not in chosen])
        planned = set(first[: self.p.start_nodes])
        deciding.set_reasons(nodes, {n: "a planned entity's best hit" for n in planned}, roles=("chosen",))
        deciding.set_reasons(deciding.outranked(nodes), {
            n: (f"start_nodes={self.p.start_nodes} filled: the planned entities' best hits go first" if planned
                else f"start_nodes={self.p.start_nodes} filled") for n in ranked})
        start = "; ".join(self.labels.get(n, n) for n in self.seed_nodes)
        curated = ("" if not self.curated_in_graph else
                   "; the graph's curated KG is walked too (use_curated), its facts labelled [curated]"
                   if self.p.use_curated else "; the graph's curated KG is left out (use_curated=False)")
        self.tr.step("seed", "Start nodes by vector search", f"{len(ranked)} hits; start from: {start}{curated}",
                     nodes=nodes, scores={n: round(hits[n], 4) for n in ranked},
                     data={"chosen": self.seed_nodes, "planned_entity_hits": first, "seed_pool": k,
                           "score_name": "cosine to the question (entities: the best over the question and each "
                                         "planned entity)"})

    def expand(self, hop_no: int) -> list[Candidate]:
        anchors = self.anchors()
        ents = [a for a in anchors if self.tables[a] == "Entity"]
        tris = [a for a in anchors if self.tables[a] != "Entity"]
        got = self._neighbourhood(ents, tris)
        at_ent, hyper, at_tri = got["Q_TRIPLES_AT_ENTITY"], got["Q_HYPER_AT_ENTITY"], got["Q_TRIPLES_AT_TRIPLE"]
        rel_out, rel_in = got["Q_RELATED_OUT"], got["Q_RELATED_IN"]
        triple_hits: list[tuple[str, str, NeighbourRow]] = []  # (anchor, anchor's side, row)
        related: list[NeighbourRow] = []
        for a in anchors:  # the per-anchor order of the hits decides which anchor a candidate keeps
            if self.tables[a] == "Entity":
                triple_hits += [(a, r["side"], r) for r in at_ent.get(a, [])]
                # the inner triple is what the walk passes through to reach the hypernode
                triple_hits += [(r["inner"], r["side"], r) for r in hyper.get(a, [])]
                related += rel_out.get(a, [])
                related += [{**r, "_in": True} for r in rel_in.get(a, [])]
            else:
                triple_hits += [(a, r["side"], r) for r in at_tri.get(a, [])]
        n_curated = 0
        if not self.p.use_curated:  # the curated KG stays out of the walk (use_curated)
            before = len(triple_hits) + len(related)
            triple_hits = [h for h in triple_hits if h[2].get("origin") != CURATED]
            related = [r for r in related if r.get("origin") != CURATED]
            n_curated = before - len(triple_hits) - len(related)
        for _, _, row in triple_hits:
            self._remember_triple(row)
        known = {row["id"] for _, _, row in triple_hits}
        self._resolve([str(r.get("triple_id") or "") for r in related if r.get("triple_id") not in known])
        cands: dict[str, Candidate] = {}
        for a, side, row in triple_hits:
            other = row.get("object_id") if side == "SUBJ" else row.get("subject_id")
            cands.setdefault(row["id"], self._cand_from_row(row, a, str(other or "")))
        for r in related:
            self.curated.update(r[k] for k in ("src", "dst") if r.get(f"{k}_origin") == CURATED)
            tid = str(r.get("triple_id") or "")
            anchor, other = (r["dst"], r["src"]) if r.get("_in") else (r["src"], r["dst"])
            self.tables.setdefault(r["src"], "Entity"), self.tables.setdefault(r["dst"], "Entity")
            self.labels.setdefault(r["src"], str(r.get("src_name") or r["src"]))
            self.labels.setdefault(r["dst"], str(r.get("dst_name") or r["dst"]))
            if tid in self.rows:
                cands.setdefault(tid, self._cand_from_row(self.rows[tid], anchor, other))
            else:
                cid = f"rel:{r['src']}|{r['relation']}|{r['dst']}"
                if r.get("origin") == CURATED:
                    self.curated.add(cid)
                fact = f"{self.labels[r['src']]} {r['relation']} {self.labels[r['dst']]}"
                self.synthetic[cid] = {"id": cid, "subject_id": r["src"], "object_id": r["dst"],
                                       "relation": str(r["relation"]), "text": fact}
                self.labels[cid] = fact
                cands.setdefault(cid, Candidate(cid, fact, str(r["relation"]), r["src"], r["dst"], anchor, other))
        self._resolve([c.target for c in cands.values()])
        if not self.p.use_curated:  # a corpus fact never leads into the curated KG either
            into = [cid for cid, c in cands.items() if c.target in self.curated]
            n_curated += len(into)
            for cid in into:
                del cands[cid]
        dangling = [c for c in cands.values() if c.target not in self.tables]
        on_path = set(self.path_facts())
        out = [c for c in cands.values()
               if c.target in self.tables and c.id not in on_path and c.id not in self.rejected]
        for c in out:
            c.target_table, c.target_label = self.tables[c.target], self.labels.get(c.target, c.target)
        excluded = len(cands) - len(out) - len(dangling)
        nodes = [NodeRef(c.id, "Triple", "candidate", c.fact) for c in out if c.id in self.rows]
        nodes += [NodeRef(t, self.tables[t], "candidate", self.labels.get(t, t))
                  for t in dict.fromkeys(c.target for c in out)]
        self.tr.step("expand", f"Hop {hop_no}: fetch the neighbourhood",
                     f"{len(anchors)} anchor(s), {len(out)} candidate fact(s)"
                     + (f", {excluded} already on the path or rejected" if excluded else "")
                     + (f", {len(dangling)} with a missing end skipped" if dangling else "")
                     + (f", {n_curated} curated fact(s) left out (use_curated=False)" if n_curated else ""),
                     nodes=nodes, edges=[EdgeRef(*c.edge, role="candidate") for c in out],
                     data={"hop": hop_no, "anchors": anchors, "n_fetched": len(cands),
                           **({"curated_left_out": n_curated} if n_curated else {}),
                           "queries": ["Q_TRIPLES_AT_ENTITY", "Q_HYPER_AT_ENTITY", "Q_RELATED_OUT",
                                       "Q_RELATED_IN", "Q_TRIPLES_AT_TRIPLE"]})
        return out

    def _neighbourhood(self, ents: list[str], tris: list[str]) -> dict[str, dict[str, list[NeighbourRow]]]:
        """{query name: {anchor: its first ``fetch_limit`` rows, in the query's order}}, each
        anchor fetched once per run. The hypernodes one level up from an entity (the rows of
        ``Q_HYPER_AT_ENTITY``) are the triples *at* the triples at the entity, so they are put
        together from the complete rows of the two other queries: one statement fewer per hop."""
        new_ents = [a for a in ents if a not in self.at_entity]
        self.at_entity.update(nb.neighbourhood(self.ctx.store, "Q_TRIPLES_AT_ENTITY", new_ents))
        inner = [r["id"] for a in new_ents for r in self.at_entity[a]]
        self.at_triple.update(nb.neighbourhood(
            self.ctx.store, "Q_TRIPLES_AT_TRIPLE", [t for t in dict.fromkeys(tris + inner) if t not in self.at_triple]))
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
            got = nb.neighbourhood(self.ctx.store, name, new_ents)
            for a in new_ents:
                self._keep(name, a, got[a])
        return {name: {a: self.fetched[(name, a)] for a in (tris if name == "Q_TRIPLES_AT_TRIPLE" else ents)}
                for name in nb.ORDER}

    def _keep(self, name: str, anchor: str, rows: list[NeighbourRow]) -> None:
        """What the per-anchor ``ORDER BY ... LIMIT fetch_limit`` query returned."""
        ordered = sorted(rows, key=lambda r: nb.sort_key(r, nb.ORDER[name]))
        self.fetched[(name, anchor)] = ordered[:max(self.p.fetch_limit, 0)]

    def _cand_from_row(self, row: NeighbourRow, anchor: str, other: str) -> Candidate:
        return Candidate(row["id"], _fact_text(row), str(row.get("relation") or ""),
                         str(row.get("subject_id") or ""), str(row.get("object_id") or ""), anchor, other)

    def score(self, hop_no: int, cands: list[Candidate]) -> list[Candidate]:
        real = [c.id for c in cands if c.id in self.rows]
        stored = self._stored_embeddings(real)
        need = [c for c in cands if stored.get(c.id) is None or not np.any(stored[c.id])]
        fresh = self.ctx.embedder.embed([c.fact for c in need]) if need else np.zeros((0, len(self.qv)))
        need_ids = {c.id for c in need}
        emb = {c.id: np.asarray(stored[c.id], dtype=np.float32) for c in cands if c.id not in need_ids}
        emb.update({c.id: np.asarray(v, dtype=np.float32) for c, v in zip(need, fresh)})
        m = np.stack([emb[c.id] for c in cands])
        w = self.p.plan_weight
        q_cos, p_cos = cosine_rows(m, self.qv), cosine_rows(m, self.pv)
        s = (1 - w) * q_cos + w * p_cos
        for c, v, a, b in zip(cands, s, q_cos, p_cos):
            c.score = round(float(v), 4)
            c.parts = {"question": round((1 - w) * float(a), 4), "plan": round(w * float(b), 4)}
        ranked = sorted(cands, key=lambda c: (-c.score, c.id))
        shown = min(self.p.top_k, len(ranked))
        nodes = [NodeRef(c.id, "Triple", "candidate", c.fact, c.score, dict(c.parts), rank,
                         "" if rank <= shown else f"not shown to the chooser: only the top {shown} are (top_k)")
                 for rank, c in enumerate(ranked, 1) if c.id in self.rows]
        self.tr.step("score", f"Hop {hop_no}: rank candidates by similarity",
                     f"best: {ranked[0].fact} ({ranked[0].score:.2f}); top {shown} shown to the chooser",
                     nodes=nodes,
                     edges=[EdgeRef(*c.edge, role="candidate", score=c.score) for c in ranked],
                     scores={c.id: c.score for c in ranked},
                     data={"hop": hop_no, "ranked": [c.id for c in ranked],
                           "embedded_on_the_fly": [c.id for c in need], "weights": {"question": 1 - w, "plan": w},
                           "score_name": f"similarity = {1 - w:g} × cosine to the question + {w:g} × cosine to "
                                         "the plan (parts: question, plan)"})
        return ranked

    def _stored_embeddings(self, ids: list[str]) -> dict[str, np.ndarray]:
        """Triple.emb of ``ids`` that have one; each triple is read at most once per run."""
        todo = sorted({i for i in ids if i not in self.embs})
        if todo:
            for row in nb.triple_vectors(self.ctx.store, todo):
                self.embs[row["id"]] = np.asarray(row["emb"], dtype=np.float32)
            for i in todo:
                self.embs.setdefault(i, None)
        return {i: v for i in ids if (v := self.embs[i]) is not None}

    def select(self, hop_no: int, ranked: list[Candidate]) -> list[Candidate]:
        shown = ranked[: self.p.top_k]
        visited = self.visited()
        facts = [self.labels[t] for t in self.path_facts()]
        view = [{"n": i, "id": c.id, "fact": c.fact, "score": c.score, "target_visited": c.target in visited}
                for i, c in enumerate(shown, 1)]
        res, s = self.tr.reason("kgrag_choose", title=f"Hop {hop_no}: choose the next fact", kind="select",
                                question=self.q, plan=self.plan, path_facts=facts, candidates=view,
                                width=self.p.width)
        assert isinstance(res, KgRagChoice)
        by_id = {c.id: c for c in shown}
        chosen = [by_id[i] for i in res.chosen if i in by_id]
        ids = {c.id for c in chosen}
        # the deciding number: offline, the heuristic's own score (its formula is the LLM task line);
        # a model gives none, so the similarity it was shown stands, with the pick said in words
        score = {c.id: float(res.offline_scores.get(c.id, c.score)) for c in shown}
        parts = {c.id: dict(res.offline_parts.get(c.id) or c.parts) for c in shown}
        order = list(res.offline_scores) if res.offline_scores else [c.id for c in shown]
        offline = bool(res.offline_scores)
        picked = deciding.chooser_pick([c.id for c in shown], [c.id for c in chosen],
                                       by="offline heuristic" if offline else "model", ranking="numbered by similarity",
                                       words="" if offline or s.llm is None else s.llm.raw_output)
        line = deciding.pick_line(picked)
        s.nodes = [NodeRef(c.id, "Triple", "chosen" if c.id in ids else "rejected", c.fact, score[c.id], parts[c.id])
                   for c in shown if c.id in self.rows]
        deciding.set_ranks(s.nodes, order)
        if not offline:  # a node the model passed over although it ranks above its pick says so
            deciding.set_reasons(deciding.outranked(s.nodes), {n.id: f"{line}: the model's choice, not the "
                                                                      "similarity, decided" for n in s.nodes})
        s.nodes += [NodeRef(c.target, c.target_table, "chosen", c.target_label) for c in chosen]
        s.edges = [EdgeRef(*c.edge, role="chosen" if c.id in ids else "rejected", score=score[c.id]) for c in shown]
        s.scores = {c.id: score[c.id] for c in shown}
        ignored = list(res.ignored)
        s.detail = "followed: " + "; ".join(c.fact for c in chosen) if chosen else "no shown candidate was chosen"
        if ignored:
            s.detail += f" (ignored from the reply: {', '.join(ignored)})"
        s.detail += f"; {line}" + ("; the offline chooser's score ranks it first" if offline and chosen else "")
        s.data = {"hop": hop_no, "shown": [c.id for c in shown], "chosen": [c.id for c in chosen],
                  "ignored": ignored, "said_none": res.said_none, "picked": picked,
                  "score_name": ("the offline chooser's score: similarity + bonuses (parts; formula in the LLM "
                                 "task line)" if offline else
                                 "similarity shown to the model (its pick, not a score, decided)")}
        return chosen

    def open_hop(self, hop_no: int, chosen: list[Candidate]) -> Hop:
        hop = Hop(hop_no, chosen)
        path = set(self.path_facts())
        for c in chosen:
            if c.target_table == "Triple" and c.target not in path and c.target not in hop.opened:
                hop.opened.append(c.target)  # landing on a hypernode: its own fact is collected too
        self.hops.append(hop)
        if hop.opened:  # shown on the select step that just ran
            step = self.tr.steps[-1]
            step.data["opened"] = list(hop.opened)
            seen = {n.id for n in step.nodes}
            step.nodes += [NodeRef(t, "Triple", "chosen", self.labels.get(t, t)) for t in hop.opened if t not in seen]
        return hop

    def evaluate(self, hop: Hop) -> str:
        facts = [self.labels[t] for t in self.path_facts()]
        new = [self.labels[t] for t in [c.id for c in hop.chosen] + hop.opened]
        res, s = self.tr.reason("kgrag_evaluate", title=f"Hop {hop.number}: enough to answer?",
                                question=self.q, plan=self.plan, facts=facts, new_facts=new,
                                hops_done=len(self.hops), max_hops=self.p.max_hops,
                                allow_backtrack=self.p.allow_backtrack,
                                seed_facts=[self.labels[t] for t in self.seed_nodes if self.tables.get(t) == "Triple"])
        assert isinstance(res, KgRagDecision)
        decision: str = res.decision
        note = "" if res.parsed else " (reply not understood)"
        if decision == "backtrack" and not self._can_backtrack():
            why = ("backtracking is off" if not self.p.allow_backtrack
                   else f"{self.p.max_backtracks} backtrack(s) spent")
            note += f" (BACKTRACK requested but {why}: continuing)"
            decision = "continue"
        s.detail = f"{decision.upper()}{note}: {res.reason}"
        s.data = {"hop": hop.number, "decision": decision, "requested": res.decision, "reason": res.reason}
        return decision

    def _can_backtrack(self) -> bool:
        return self.p.allow_backtrack and self.backtracks < self.p.max_backtracks and bool(self.hops)

    def backtrack(self, reason: str, *, dead_end: bool = False) -> None:
        """Pop the last hop and retry it without its choice. At a dead end the popped hop is the
        one that reached a leaf, and a leaf is often the answer ("... born in 1954"): its facts are
        not wrong, only a branch that goes nowhere, so they stay in the context (``leaf_facts``)
        while the walk tries another branch. A backtrack the evaluator asked for drops them."""
        hop = self.hops.pop()
        self.backtracks += 1
        self.rejected.update(c.id for c in hop.chosen)
        kept = [t for t in [c.id for c in hop.chosen] + hop.opened if t not in self.leaf_facts] if dead_end else []
        self.leaf_facts += kept
        role: Role = "context" if dead_end else "rejected"
        nodes = [NodeRef(c.id, "Triple", role, c.fact, c.score) for c in hop.chosen if c.id in self.rows]
        nodes += [NodeRef(t, "Triple", role, self.labels.get(t, t)) for t in hop.opened]
        facts = "; ".join(c.fact for c in hop.chosen)
        detail = (f"{reason}; step back from hop {hop.number} (it reached a leaf): its facts stay in the context "
                  f"({facts}) and hop {hop.number} is retried without them" if dead_end
                  else f"{reason}; rejected: {facts}; hop {hop.number} is retried without it")
        self.tr.step("prune", f"{'Dead end: step back from' if dead_end else 'Backtrack: drop'} hop {hop.number}",
                     detail, nodes=nodes,
                     edges=[EdgeRef(*c.edge, role=role, score=c.score) for c in hop.chosen],
                     data={"hop": hop.number, "reason": reason, "rejected": [c.id for c in hop.chosen],
                           "kept": kept, "dead_end": dead_end, "backtracks": self.backtracks})

    def context(self, stop_reason: str) -> RetrievedContext:
        items: list[ContextItem] = []
        dropped: list[str] = []
        budget = SkipAndContinue(self.p.max_context_tokens)  # a fact that does not fit is dropped; later ones may fit
        scores = {c.id: c.score for h in self.hops for c in h.chosen} | self.seed_scores
        rows = {t: self.rows.get(t) or self.synthetic[t] for t in self.path_facts()}
        for tid, row in rows.items():
            source = CURATED_SOURCE if tid in self.curated else str(row.get("chunk_id") or "")
            parts = [ContextItem(tid, "triple", self.labels[tid], scores.get(tid), count_tokens(self.labels[tid]),
                                 source)]
            sent = str(row.get("sentence") or "").strip()
            # a sentence fact says only "in the same sentence as": its sentence is what it states
            with_sentence = self.p.include_sentences or row.get("kind") == SENTENCE_KIND
            if with_sentence and sent and all(i.text != sent for i in items):
                parts.append(ContextItem(f"{tid}#sentence", "sentence", sent, None, count_tokens(sent), source))
            for it in parts:
                if not budget.take(it.n_tokens):
                    dropped.append(it.id)
                    continue
                items.append(it)
        kept = [i.id for i in items if i.kind == "triple"]
        node_ids = list(dict.fromkeys(  # graph nodes only: a rel:... fact contributes its two entities
            [t for t in kept if t in self.rows]
            + [x for t in kept for x in (rows[t].get("subject_id"), rows[t].get("object_id")) if x]))
        used = budget.used
        detail = f"{len(kept)} fact(s), {used} tokens; walk ended: {stop_reason}"
        if dropped:
            detail += f"; {len(dropped)} item(s) over the {self.p.max_context_tokens}-token budget dropped"
        curated = [t for t in kept if t in self.curated]
        if curated:
            detail += f"; {len(curated)} from the curated KG (labelled [curated])"
        self.tr.step("context", "Path facts", detail,
                     nodes=[NodeRef(t, "Triple", "context", self.labels[t], scores.get(t))
                            for t in kept if t in self.rows],
                     edges=[EdgeRef(str(rows[t].get("subject_id") or ""), str(rows[t].get("object_id") or ""),
                                    str(rows[t].get("relation") or ""), role="context") for t in kept],
                     data={"stop_reason": stop_reason, "hops": len(self.hops), "backtracks": self.backtracks,
                           "dropped": dropped, "tokens": used, "path": self.path_node_sequence()})
        notes = {"plan": self.plan_detail, "stop_reason": stop_reason}
        if curated:
            notes["curated"] = (f"{len(curated)} of {len(kept)} fact(s) come from the imported curated KG, not the "
                                "corpus (use_curated=True): facts the other methods do not read")
        return RetrievedContext(items=items, node_ids=node_ids, notes=notes)

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
            return self.context("no start node found (is the graph empty?)")
        stop_reason = f"hop limit ({self.p.max_hops}) reached"
        while len(self.hops) < self.p.max_hops:
            hop_no = len(self.hops) + 1
            cands = self.expand(hop_no)
            chosen = self.select(hop_no, self.score(hop_no, cands)) if cands else []
            if not chosen:
                why = "dead end: no new candidate" if not cands else "the chooser followed no candidate"
                if self._can_backtrack():
                    self.backtrack(why, dead_end=True)
                    continue
                stop_reason = why
                break
            hop = self.open_hop(hop_no, chosen)
            decision = self.evaluate(hop)
            if decision == "stop":
                stop_reason = "the evaluator judged the facts sufficient"
                break
            if decision == "backtrack":
                self.backtrack("the evaluator asked to backtrack")
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
            _label_curated(tracer.steps[first:], walk.curated)
            _mark_reconstruction(tracer.steps[first:])


# Paper 001 gives CoE in a few sentences and no code, so every step of the walk is ours; each
# step says which part of it the paper names (the "ours" mark of the trace).
RECONSTRUCTION = "reconstruction (paper 001 has no algorithm box or code)"
_OURS_BY_TASK = {
    "kgrag_plan": "the planning step and its prompt are ours",
    "kgrag_choose": "'LLM ranking' per the paper; the numbered top-k prompt is ours",
    "kgrag_evaluate": "the stop / continue / backtrack check is ours",
}
_OURS_BY_KIND = {
    "seed": "'vector similarity search' per the paper; the pools and planned-entity seeds are ours",
    "expand": "'Cypher queries' per the paper; the neighbourhood queries and anchors are ours",
    "score": "ranking by cosine to the question and the plan is ours",
    "prune": "backtracking is ours",
    "context": "the path facts in walk order, cut at max_context_tokens, are ours",
}


def _mark_reconstruction(steps: list[Any]) -> None:
    for s in steps:
        what = _OURS_BY_TASK.get(s.llm.task if s.llm else "", "") or _OURS_BY_KIND.get(s.kind, "")
        mark_ours(s, f"{RECONSTRUCTION}: {what}" if what else RECONSTRUCTION)


def _label_curated(steps: list[Any], curated: set[str]) -> None:
    """Mark every curated node a step touched: its label starts CURATED_TAG and the step's
    ``data["curated"]`` lists it (a curated ``rel:`` fact has no node: its id is listed)."""
    if not curated:
        return
    for s in steps:
        ids = [n.id for n in s.nodes if n.id in curated]
        for n in s.nodes:
            if n.id in curated and not n.label.startswith(CURATED_TAG):
                n.label = CURATED_TAG + n.label
        ids += [i for i in s.data.get("chosen", []) + s.data.get("shown", []) if isinstance(i, str)
                and i.startswith("rel:") and i in curated and i not in ids]
        if ids:
            s.data["curated"] = list(dict.fromkeys(ids))
