"""The words of KG-RAG's Chain of Explorations: each step record of ``kgviz.methods.kg_rag_records``
becomes the ``TraceStep`` the player shows (title, detail, nodes with their deciding scores, edges,
the figures the viewer reads), with the record itself in ``TraceStep.record``.

The walk (``kgviz.methods.kg_rag``) decides; nothing here changes what was retrieved. The three
LLM steps (plan, choose, evaluate) are recorded by ``Tracer.reason`` when the walk asks its task,
under the titles named here, and filled in here from their records. ``label_curated`` and
``mark_reconstruction`` then mark a finished run's steps.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from kgviz.methods import deciding
from kgviz.methods.base import EdgeRef, NodeRef, Role, Tracer, TraceStep, mark_ours, record_data
from kgviz.methods.kg_rag_records import (
    Candidate, Choice, ExplorationPlan, Neighbourhood, PathContext, Ranking, StartNodes, StepBack, Verdict,
)
# one serialisation for every method's records (type, algorithm line, fields)
from kgviz.task_results import KgRagPlan

CURATED_TAG = "[curated] "  # ours: the trace label prefix of a curated node
PLAN_TITLE = "Plan the exploration"
Labels = Mapping[str, str]  # node id -> what the trace calls it (an entity's name, a fact's text)


def choose_title(hop: int) -> str:
    return f"Hop {hop}: choose the next fact"


def evaluate_title(hop: int) -> str:
    return f"Hop {hop}: enough to answer?"


def plan_line(plan: KgRagPlan) -> str:
    """The plan in one line (the plan step's detail and the context's ``notes["plan"]``)."""
    return (f"entities: {', '.join(plan.entities) or '-'}; "
            f"relations: {', '.join(plan.relations) or '-'}; expected hops: {plan.hops}")


def narrate_plan(step: TraceStep, rec: ExplorationPlan) -> None:
    step.detail = plan_line(rec.plan) + "".join(f" ({n})" for n in rec.plan.notes)
    step.data = {"plan": rec.plan.to_dict()}
    step.record = record_data(rec)


def narrate_start(tracer: Tracer, rec: StartNodes, labels: Labels) -> TraceStep:
    cosine = {n: round(rec.cosine[n], 4) for n in rec.ranked}
    seeds = set(rec.seeds)
    nodes = [NodeRef(n, rec.table[n], "chosen" if n in seeds else "candidate", labels.get(n, n), cosine[n])
             for n in rec.ranked]
    # the order the start nodes were taken in: planned entities' best hits first, then by cosine
    deciding.set_ranks(nodes, list(rec.taken) + [n for n in rec.ranked if n not in rec.taken])
    planned = set(rec.planned_hits[: rec.start_nodes])
    deciding.set_reasons(nodes, {n: "a planned entity's best hit" for n in planned}, roles=("chosen",))
    filled = f"start_nodes={rec.start_nodes} filled" + (": the planned entities' best hits go first" if planned else "")
    deciding.set_reasons(deciding.outranked(nodes), {n: filled for n in rec.ranked})
    start = "; ".join(labels.get(n, n) for n in rec.seeds)
    curated = ("" if not rec.curated_in_graph else
               "; the graph's curated KG is walked too (use_curated), its facts labelled [curated]"
               if rec.use_curated else "; the graph's curated KG is left out (use_curated=False)")
    return tracer.step(
        "seed", "Start nodes by vector search", f"{len(rec.ranked)} hits; start from: {start}{curated}",
        nodes=nodes, scores=cosine,
        data={"chosen": list(rec.seeds), "planned_entity_hits": list(rec.planned_hits), "seed_pool": rec.seed_pool,
              "score_name": "cosine to the question (entities: the best over the question and each planned entity)"},
        record=record_data(rec))


def narrate_neighbourhood(tracer: Tracer, rec: Neighbourhood, labels: Labels) -> TraceStep:
    out = rec.candidates
    targets = {c.target: c.target_table for c in out}
    nodes = [NodeRef(c.id, "Triple", "candidate", c.fact) for c in out if c.has_node]
    nodes += [NodeRef(t, table, "candidate", labels.get(t, t)) for t, table in targets.items()]
    return tracer.step(
        "expand", f"Hop {rec.hop}: fetch the neighbourhood",
        f"{len(rec.anchors)} anchor(s), {len(out)} candidate fact(s)"
        + (f", {rec.excluded} already on the path or rejected" if rec.excluded else "")
        + (f", {rec.dangling} with a missing end skipped" if rec.dangling else "")
        + (f", {rec.curated_left_out} curated fact(s) left out (use_curated=False)" if rec.curated_left_out else ""),
        nodes=nodes, edges=[EdgeRef(*c.edge, role="candidate") for c in out],
        data={"hop": rec.hop, "anchors": list(rec.anchors), "n_fetched": rec.fetched,
              **({"curated_left_out": rec.curated_left_out} if rec.curated_left_out else {}),
              "queries": list(rec.queries)},
        record=record_data(rec))


def _by_id(hood: Neighbourhood, ids: Sequence[str]) -> list[Candidate]:
    cands = {c.id: c for c in hood.candidates}
    return [cands[i] for i in ids]


def narrate_ranking(tracer: Tracer, rec: Ranking, hood: Neighbourhood) -> TraceStep:
    ranked = _by_id(hood, rec.ranked)
    shown = min(rec.top_k, len(ranked))
    score = rec.score
    nodes = [NodeRef(c.id, "Triple", "candidate", c.fact, score[c.id], dict(rec.parts[c.id]), rank,
                     "" if rank <= shown else f"not shown to the chooser: only the top {shown} are (top_k)")
             for rank, c in enumerate(ranked, 1) if c.has_node]
    wq, wp = rec.weights["question"], rec.weights["plan"]
    return tracer.step(
        "score", f"Hop {rec.hop}: rank candidates by similarity",
        f"best: {ranked[0].fact} ({score[ranked[0].id]:.2f}); top {shown} shown to the chooser",
        nodes=nodes,
        edges=[EdgeRef(*c.edge, role="candidate", score=score[c.id]) for c in ranked],
        scores={c.id: score[c.id] for c in ranked},
        data={"hop": rec.hop, "ranked": list(rec.ranked), "embedded_on_the_fly": list(rec.embedded_on_the_fly),
              "weights": dict(rec.weights),
              "score_name": f"similarity = {wq:g} × cosine to the question + {wp:g} × cosine to "
                            "the plan (parts: question, plan)"},
        record=record_data(rec))


def narrate_choice(step: TraceStep, rec: Choice, hood: Neighbourhood, labels: Labels) -> None:
    """The chooser's step: the shown facts with the score that decided, the pick in places of the
    numbered list, the model's words where a model chose, and the hypernodes the pick opened."""
    shown = _by_id(hood, rec.shown)
    chosen = _by_id(hood, rec.chosen)
    ids = set(rec.chosen)
    offline = rec.by == "offline heuristic"
    picked = deciding.chooser_pick(list(rec.shown), list(rec.chosen), by=rec.by, ranking="numbered by similarity",
                                   words="" if offline or step.llm is None else step.llm.raw_output)
    line = deciding.pick_line(picked)
    step.nodes = [NodeRef(c.id, "Triple", "chosen" if c.id in ids else "rejected", c.fact, rec.score[c.id],
                          dict(rec.parts[c.id])) for c in shown if c.has_node]
    deciding.set_ranks(step.nodes, list(rec.order))
    if not offline:  # a node the model passed over although it ranks above its pick says so
        deciding.set_reasons(deciding.outranked(step.nodes), {n.id: f"{line}: the model's choice, not the "
                                                                   "similarity, decided" for n in step.nodes})
    step.nodes += [NodeRef(c.target, c.target_table, "chosen", labels.get(c.target, c.target)) for c in chosen]
    step.edges = [EdgeRef(*c.edge, role="chosen" if c.id in ids else "rejected", score=rec.score[c.id]) for c in shown]
    step.scores = {c.id: rec.score[c.id] for c in shown}
    step.detail = "followed: " + "; ".join(c.fact for c in chosen) if chosen else "no shown candidate was chosen"
    if rec.ignored:
        step.detail += f" (ignored from the reply: {', '.join(rec.ignored)})"
    step.detail += f"; {line}" + ("; the offline chooser's score ranks it first" if offline and chosen else "")
    step.data = {"hop": rec.hop, "shown": list(rec.shown), "chosen": list(rec.chosen),
                 "ignored": list(rec.ignored), "said_none": rec.said_none, "picked": picked,
                 "score_name": ("the offline chooser's score: similarity + bonuses (parts; formula in the LLM "
                                "task line)" if offline else
                                "similarity shown to the model (its pick, not a score, decided)")}
    if rec.opened:  # landing on a hypernode: its own fact is collected too
        step.data["opened"] = list(rec.opened)
        seen = {n.id for n in step.nodes}
        step.nodes += [NodeRef(t, "Triple", "chosen", labels.get(t, t)) for t in rec.opened if t not in seen]
    step.record = record_data(rec)


def narrate_verdict(step: TraceStep, rec: Verdict) -> None:
    note = "" if rec.parsed else " (reply not understood)"
    if rec.refused:
        why = ("backtracking is off" if rec.refused == "backtracking off"
               else f"{rec.max_backtracks} backtrack(s) spent")
        note += f" (BACKTRACK requested but {why}: continuing)"
    step.detail = f"{rec.decision.upper()}{note}: {rec.reason}"
    step.data = {"hop": rec.hop, "decision": rec.decision, "requested": rec.requested, "reason": rec.reason}
    step.record = record_data(rec)


def narrate_step_back(tracer: Tracer, rec: StepBack, labels: Labels) -> TraceStep:
    role: Role = "context" if rec.dead_end else "rejected"
    nodes = [NodeRef(c.id, "Triple", role, c.fact, rec.score[c.id]) for c in rec.dropped if c.has_node]
    nodes += [NodeRef(t, "Triple", role, labels.get(t, t)) for t in rec.opened]
    facts = "; ".join(c.fact for c in rec.dropped)
    detail = (f"{rec.reason}; step back from hop {rec.hop} (it reached a leaf): its facts stay in the context "
              f"({facts}) and hop {rec.hop} is retried without them" if rec.dead_end
              else f"{rec.reason}; rejected: {facts}; hop {rec.hop} is retried without it")
    return tracer.step(
        "prune", f"{'Dead end: step back from' if rec.dead_end else 'Backtrack: drop'} hop {rec.hop}", detail,
        nodes=nodes, edges=[EdgeRef(*c.edge, role=role, score=rec.score[c.id]) for c in rec.dropped],
        data={"hop": rec.hop, "reason": rec.reason, "rejected": [c.id for c in rec.dropped], "kept": list(rec.kept),
              "dead_end": rec.dead_end, "backtracks": rec.backtracks},
        record=record_data(rec))


def narrate_context(tracer: Tracer, rec: PathContext, labels: Labels) -> TraceStep:
    detail = f"{len(rec.facts)} fact(s), {rec.tokens} tokens; walk ended: {rec.stop_reason}"
    if rec.dropped:
        detail += f"; {len(rec.dropped)} item(s) over the {rec.budget}-token budget dropped"
    if rec.curated:
        detail += f"; {len(rec.curated)} from the curated KG (labelled [curated])"
    return tracer.step(
        "context", "Path facts", detail,
        nodes=[NodeRef(t, "Triple", "context", labels[t], rec.score.get(t)) for t in rec.with_node],
        edges=[EdgeRef(*rec.ends[t], role="context") for t in rec.facts],
        data={"stop_reason": rec.stop_reason, "hops": rec.hops, "backtracks": rec.backtracks,
              "dropped": list(rec.dropped), "tokens": rec.tokens, "path": list(rec.path)},
        record=record_data(rec))


def context_notes(rec: PathContext, plan: KgRagPlan) -> dict[str, str]:
    """``RetrievedContext.notes``: the plan, why the walk ended, and how many facts are curated."""
    notes = {"plan": plan_line(plan), "stop_reason": rec.stop_reason}
    if rec.curated:
        notes["curated"] = (f"{len(rec.curated)} of {len(rec.facts)} fact(s) come from the imported curated KG, "
                            "not the corpus (use_curated=True): facts the other methods do not read")
    return notes


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


def mark_reconstruction(steps: Sequence[TraceStep]) -> None:
    for s in steps:
        what = _OURS_BY_TASK.get(s.llm.task if s.llm else "", "") or _OURS_BY_KIND.get(s.kind, "")
        mark_ours(s, f"{RECONSTRUCTION}: {what}" if what else RECONSTRUCTION)


def label_curated(steps: Sequence[TraceStep], curated: set[str]) -> None:
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
