"""The words of KG-Infused RAG: each step record of ``kgviz.methods.kg_infused_records`` becomes
the ``TraceStep`` the player shows (title, detail, nodes with their deciding scores, edges, the
figures the viewer reads), with the record itself in ``TraceStep.record``.

The method (``kgviz.methods.kg_infused``) decides; nothing here changes what was retrieved. A
stage that asks the reasoner gets its step from ``Tracer.reason`` (so a failed call is recorded
under the same title); the narrator then dresses that step from the stage's record.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from kgviz.methods import deciding
from kgviz.methods.base import EdgeRef, NodeRef, Role, Tracer, TraceStep, mark_ours, record_data
from kgviz.methods.kg_infused_records import (
    BudgetFill, AnswerInput, DualRetrieval, Fact, Frontier, KgNote, Passage, PassageNote, QueryExpansion,
    RoundCandidates, SeedEntities, SubgraphSummary, TripleSelection, 
)

SUMMARY_TITLE = "Subgraph summary (Table 14)"
EXPANSION_TITLE = "KG-based query expansion (Table 15)"
PASSAGE_NOTE_TITLE = "Passage note (Table 11)"
KG_NOTE_TITLE = "KG-augmented note (Table 16)"
_STOP_WORDS = {"no_new_entity": "no new entities: every selected tail is already activated",
               "no_triple": "no triple selected"}


def selection_title(rnd: int) -> str:
    return f"Round {rnd}: triple selection ({'Table 12' if rnd == 1 else 'Table 13'})"


def triple_nodes(facts: Iterable[Fact], role: Role) -> list[NodeRef]:
    """The facts that are Triple nodes (a RELATED edge without one is drawn as its edge only)."""
    return [NodeRef(f.id, "Triple", role, f.display, f.score) for f in facts if f.in_store]


def triple_edges(facts: Iterable[Fact], role: Role) -> list[EdgeRef]:
    return [EdgeRef(f.subject_id, f.object_id, f.relation, role, f.score) for f in facts]


def targets(facts: Iterable[Fact]) -> dict[str, str]:
    """Entities the facts lead to (id -> name), in order."""
    out: dict[str, str] = {}
    for f in facts:
        out.setdefault(f.to, f.to_name)
    return out


def direction_ours(setting: str) -> str:
    return (f"direction='{setting}' also follows incoming edges, moving to their head; "
            "the paper spreads head -> tail, Eq. 6 / App. B")


# -- Eq. 3-4 --------------------------------------------------------------------------------------
def narrate_seeds(tracer: Tracer, rec: SeedEntities) -> TraceStep:
    return tracer.step(
        "seed", f"Seed entities from the {rec.origin} KG",
        f"KG source: {rec.origin} ({rec.why}). Top {rec.k_e} entities by similarity of the question to "
        f"entity descriptions (§3.4 Eq. 3-4): " + ", ".join(s.name for s in rec.seeds),
        nodes=[NodeRef(s.id, "Entity", "seed", s.name, s.cosine) for s in rec.seeds],
        scores={s.id: s.cosine for s in rec.seeds},
        data={"kg_source": rec.origin, "reason": rec.why, "k_e": rec.k_e,
              "descriptions": {s.id: s.description for s in rec.seeds}},
        ours="" if rec.origin == "curated" else
        ("the corpus graph, not a curated KG (" + ("none is imported" if rec.requested == "auto"
                                                   else "kg_source='corpus'")
         + "; the paper spreads over Wikidata5M-KG, §3.3)"),
        record=record_data(rec))


# -- §3.4 round i ---------------------------------------------------------------------------------
def narrate_candidates(tracer: Tracer, rec: RoundCandidates) -> TraceStep:
    active = [a.id for a in rec.active]
    capped = rec.capped
    step = tracer.step(
        "expand", f"Round {rec.round}: one-hop triples of {len(active)} active entities",
        f"{len(rec.candidates)} candidate triples (at most {rec.max_triples_per_entity} per entity"
        f"{', ' + str(len(capped)) + ' entities capped' if capped else ''})",
        nodes=[NodeRef(a.id, "Entity", "seed", a.name) for a in rec.active]
        + triple_nodes(rec.candidates, "candidate")
        + [NodeRef(e, "Entity", "candidate", n) for e, n in targets(rec.candidates).items() if e not in active],
        edges=triple_edges(rec.candidates, "candidate"),
        scores={f.id: f.score for f in rec.candidates},
        data={"round": rec.round, "active": active,
              "per_entity": {e: {"total": c.total, "kept": c.kept} for e, c in rec.per_entity.items()},
              "capped": capped, "already_in_memory": rec.already_in_memory, "direction": rec.direction},
        record=record_data(rec))
    mark_ours(step, direction_ours(rec.direction_setting) if rec.direction == "both" else "",
              "the per-entity cap keeps the triples closest to the question (triple_cap='similarity'; "
              "the paper names the cap only)" if capped and rec.triple_cap == "similarity" else "")
    return step


def narrate_no_selection(tracer: Tracer, rec: TripleSelection) -> TraceStep:
    return tracer.step("select", f"Round {rec.round}: triple selection skipped",
                       "no candidate triples: the active entities have no one-hop triples left",
                       data={"round": rec.round, "selected": [], "ignored": [], "prompt": rec.prompt},
                       record=record_data(rec))


def narrate_selection(step: TraceStep, rec: TripleSelection, cands: RoundCandidates) -> None:
    """Dress the chooser's step: chosen and rejected triples with the deciding score, its parts and
    rank, why a triple was left out, and which places of the cosine ranking the chooser took."""
    facts = {f.id: f for f in cands.candidates}
    chosen = [facts[i] for i in rec.selected]
    taken = set(rec.selected)
    rejected = [f for f in cands.candidates if f.id not in taken]
    if step.llm is not None:
        step.llm.prompt_name = rec.prompt  # later rounds render Table 13's update prompt
    step.detail = (f"{len(chosen)} of {len(facts)} triples selected"
                   + (f"; ignored (not among the candidates): {', '.join(rec.ignored)}" if rec.ignored else "")
                   + ("; the model answered NONE" if rec.said_none and step.llm and step.llm.mode != "offline" else ""))
    step.nodes = triple_nodes(chosen, "chosen") + triple_nodes(rejected, "rejected")
    step.edges = triple_edges(chosen, "chosen") + triple_edges(rejected, "rejected")
    step.scores = dict(rec.score)
    for n in step.nodes:
        n.score, n.score_parts = rec.score.get(n.id, n.score), dict(rec.parts.get(n.id, {}))
    deciding.set_ranks(step.nodes, rec.order)
    picked = deciding.chooser_pick(rec.by_cosine, rec.selected, by=rec.by, ranking="ranked by cosine to the question",
                                   words="" if rec.offline or step.llm is None else step.llm.raw_output)
    # the model saw the triples numbered [n] in graph order, unscored: where its picks stood there
    listed = {c: n for n, c in enumerate(rec.candidates, 1)}
    picked["listed_as"] = [listed[c] for c in rec.selected]
    line = deciding.pick_line(picked)
    if rec.offline:
        deciding.set_reasons(step.nodes, rec.rule)
    else:
        deciding.set_reasons(deciding.outranked(step.nodes), {
            n.id: f"{line}: the model's selection, not the cosine, decided" for n in step.nodes})
    step.detail += f"; {line}" if chosen or not rec.offline else ""
    step.nodes += [NodeRef(e, "Entity", "chosen", n) for e, n in targets(chosen).items()]
    step.data = {"round": rec.round, "selected": list(rec.selected), "ignored": list(rec.ignored),
                 "said_none": rec.said_none, "prompt": rec.prompt, "n_candidates": len(facts), "picked": picked,
                 "score_name": ("the offline selector's score: cosine to the question + memory + question "
                                "words + relation cue (parts; formula in the LLM task line)" if rec.offline else
                                "cosine to the question (the model saw the triples unscored; its selection "
                                "decided)")}
    step.record = record_data(rec)


# -- Eq. 5-6 --------------------------------------------------------------------------------------
def stop_words(rec: Frontier) -> str:
    if rec.stop == "max_rounds":
        return f"max_rounds={rec.max_rounds} reached"
    return _STOP_WORDS.get(rec.stop, "")


def narrate_frontier(tracer: Tracer, rec: Frontier) -> TraceStep:
    stop = stop_words(rec)
    detail = (f"next entities: {', '.join(e.name for e in rec.frontier) or 'none'}; "
              f"memory holds {rec.memory_size} triples and {rec.activated} activated entities")
    if rec.over_cap:
        detail += f"; {len(rec.over_cap)} dropped by max_entities_per_round={rec.max_entities_per_round}"
    step = tracer.step(
        "expand", f"Round {rec.round}: activation frontier" + (f" — stop ({stop})" if stop else ""),
        detail + (f". Stop: {stop}" if stop else ""),
        nodes=[NodeRef(e.id, "Entity", "chosen", e.name) for e in rec.frontier]
        + [NodeRef(e.id, "Entity", "rejected", e.name) for e in rec.over_cap],
        data={"round": rec.round, "frontier": [e.id for e in rec.frontier], "memory_size": rec.memory_size,
              "activated": rec.activated, "already_active": list(rec.already_active),
              "over_cap": [e.id for e in rec.over_cap], "stop": stop, "expanded_next": not stop},
        record=record_data(rec))
    if rec.heads:
        mark_ours(step, f"{rec.heads} of the selected triples' next entities are heads reached along "
                        f"incoming edges ({direction_ours(rec.direction_setting)})")
    return step


# -- §3.4 summary, Eq. 7 --------------------------------------------------------------------------
def narrate_summary(tracer: Tracer, step: TraceStep | None, rec: SubgraphSummary, memory: Sequence[Fact]) -> None:
    """``step`` is the summary task's step; None when there was nothing to summarise."""
    if step is None:
        tracer.step("llm", "Subgraph summary skipped",
                    "spreading activation selected no triple, so there is nothing to summarise",
                    data={"prompt": "kg_infused.SUMMARIZE", "skipped": True}, record=record_data(rec))
        return
    step.detail = f"summary of the {len(memory)} triples in the activation memory"
    step.nodes = triple_nodes(memory, "context")
    step.edges = triple_edges(memory, "context")
    step.data = {"summary": rec.text, "n_triples": len(memory)}
    step.record = record_data(rec)


def narrate_expansion(tracer: Tracer, step: TraceStep | None, rec: QueryExpansion) -> None:
    if step is None:
        tracer.step("llm", "Query expansion skipped",
                    "no KG summary to expand with: the expanded query is the question itself, so the "
                    "second half of the passages are the question's next-ranked ones",
                    data={"prompt": "kg_infused.EXPAND_QUERY", "skipped": True, "expanded_query": rec.text},
                    record=record_data(rec))
        return
    step.detail = f"expanded query: {rec.text}"
    step.data = {"expanded_query": rec.text}
    step.record = record_data(rec)


# -- Eq. 8 ----------------------------------------------------------------------------------------
def narrate_dual_retrieval(tracer: Tracer, rec: DualRetrieval, label: dict[str, str]) -> TraceStep:
    """``label``: chunk id -> "title · c<ord>" for the chunks the store returned."""
    if rec.skipped:
        return tracer.step("seed", "Dual retrieval skipped", "the database holds no passages (only a KG was "
                           "imported): the notes are built from the KG facts alone",
                           data={"skipped": True, "k_p": rec.k_p}, record=record_data(rec))
    half = rec.k_p // 2
    scores = rec.score
    merged = rec.question_passages + rec.expanded_passages

    def ref(c: str, role: Role) -> NodeRef:
        return NodeRef(c, "Chunk", role, label.get(c, c), scores.get(c))

    nodes = ([ref(c, "chosen") for c in merged] + [ref(c, "rejected") for c in rec.duplicates]
             + [ref(c, "candidate") for c in rec.unused])
    q2_place = {c: i for i, (c, _) in enumerate(rec.expanded_ranking, 1)}
    deciding.set_reasons(nodes, {
        **{c: "already retrieved for the question (App. C.2 de-duplication); shown with the question's score"
           for c in rec.duplicates},
        **{c: f"the expanded query's #{q2_place.get(c)}: its {rec.k_p - half} new passages were already taken"
           for c in rec.unused}})
    short = rec.k_p - len(merged)
    step = tracer.step(
        "seed", "Dual retrieval (question + expanded query)",
        f"{len(rec.question_passages)} passages for the question, {len(rec.expanded_passages)} new "
        f"ones for the expanded query; {len(rec.duplicates)} of the expanded query's top "
        f"{rec.k_p} were already retrieved (App. C.2); search: {rec.search}"
        + (f" (passage_search 'auto' with the {rec.embedder_id} embedder, ours)"
           if rec.passage_search == "auto" else "")
        + (f"; {short} short of k_p={rec.k_p}: the expanded query found no more new passages" if short > 0 else ""),
        nodes=nodes, scores=scores,
        data={"question_passages": list(rec.question_passages), "expanded_passages": list(rec.expanded_passages),
              "duplicates": list(rec.duplicates), "unused": list(rec.unused), "k_p": rec.k_p,
              "search": rec.search, "passage_search": rec.passage_search, "expanded_query": rec.expanded_query,
              "score_name": f"{rec.search} score for the question (its top {half}), else for the expanded "
                            "query (the first new ones); two rankings, so scores compare only within one"},
        record=record_data(rec))
    if rec.search != "dense":
        auto = " (passage_search='auto')" if rec.passage_search == "auto" else ""
        mark_ours(step, f"passage search '{rec.search}'{auto}: the paper ranks passages by dense inner product (§4.3)")
    return step


def narrate_budget_fill(tracer: Tracer, rec: BudgetFill, label: dict[str, str]) -> TraceStep:
    extra = rec.question_extra + rec.expanded_extra
    return tracer.step(
        "seed", f"Equal budget: passages past k_p (budget_tokens={rec.budget_tokens}, ours)",
        f"{rec.room} tokens left after the note and the {rec.n_passages} passages: "
        f"{len(rec.question_extra)} more for the question ({rec.question_tokens} tokens), "
        f"{len(rec.expanded_extra)} more for the expanded query ({rec.expanded_tokens} tokens); "
        f"the paper stops at k_p={rec.k_p} and the note",
        nodes=[NodeRef(c, "Chunk", "chosen", label[c], rec.score.get(c)) for c in extra],
        scores={c: rec.score[c] for c in extra if c in rec.score},
        data={"budget_tokens": rec.budget_tokens, "room": rec.room, "question_extra": list(rec.question_extra),
              "expanded_extra": list(rec.expanded_extra), "question_tokens": rec.question_tokens,
              "expanded_tokens": rec.expanded_tokens},
        ours=f"budget_tokens={rec.budget_tokens}: the paper stops at k_p={rec.k_p} passages and the note",
        record=record_data(rec))


# -- Eq. 9-11 -------------------------------------------------------------------------------------
def narrate_passage_note(tracer: Tracer, step: TraceStep | None, rec: PassageNote,
                         passages: Sequence[Passage]) -> None:
    if step is None:
        tracer.step("llm", "Passage note skipped", "no passages were retrieved (the database has no chunks)",
                    data={"prompt": "kg_infused.PASSAGE_NOTE", "skipped": True}, record=record_data(rec))
        return
    step.detail = f"note over {len(passages)} passages"
    step.nodes = [NodeRef(x.id, "Chunk", "context", x.title) for x in passages]
    step.data = {"note": rec.text}
    step.record = record_data(rec)


def narrate_kg_note(tracer: Tracer, step: TraceStep | None, rec: KgNote, memory: Sequence[Fact]) -> None:
    if step is None:
        tracer.step("llm", "KG-augmented note skipped", "no KG summary: the note stays the passage note",
                    data={"prompt": "kg_infused.KG_NOTE", "skipped": True}, record=record_data(rec))
        return
    step.detail = "the passage note enhanced with the KG summary"
    step.nodes = triple_nodes(memory, "context")
    step.data = {"kg_note": rec.text}
    step.record = record_data(rec)


def narrate_context(tracer: Tracer, rec: AnswerInput, passages: Sequence[Passage], memory: Sequence[Fact]) -> TraceStep:
    return tracer.step(
        "context", "Context: the KG-augmented note" + (" + passages + triples" if rec.context_passages else
                                                       " + passages (equal budget)" if rec.budget_tokens else ""),
        f"{len(rec.items)} items, {rec.tokens} tokens; built from {len(passages)} passages "
        f"and {len(memory)} KG triples ({rec.origin} KG)",
        nodes=[NodeRef(x.id, "Chunk", "context", x.title) for x in passages] + triple_nodes(memory, "context"),
        data={"kg_source": rec.origin, "n_passages": len(passages), "n_triples": len(memory), "rounds": rec.rounds},
        ours="" if not (rec.context_passages or rec.budget_tokens) else
        ("passages" + (" and triples" if rec.context_passages else "") + " after the note ("
         + ("context_passages" if rec.context_passages else f"budget_tokens={rec.budget_tokens}")
         + "); the paper's generator sees only the KG-augmented note, Eq. 11"),
        record=record_data(rec))
