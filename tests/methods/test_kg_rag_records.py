"""kg-rag as algorithm plus narrator: every step of the walk carries the typed record of the box
line it carries out (kgviz.methods.kg_rag_records), the record's deciding scores order the
choice it made, and the step's figures are the record's."""
from __future__ import annotations

import json
from typing import Any

from tests.methods.test_kg_rag import PLAN_TITANIC, ScriptedLLM, graph, run, steps  # noqa: F401 - module fixture

from kgviz.methods.algorithm_lines import KG_RAG
from kgviz.methods.base import TraceStep
from kgviz.methods.kg_rag_records import Candidate, Choice
from kgviz.providers.offline import OfflineLLM

TYPES = {"llm": {"ExplorationPlan", "Verdict"}, "seed": {"StartNodes"}, "expand": {"Neighbourhood"},
         "score": {"Ranking"}, "select": {"Choice"}, "prune": {"StepBack"}, "context": {"PathContext"}}
QUESTION = "When was the director of Titanic born?"


def test_every_step_names_the_box_line_the_player_lights(graph: Any) -> None:  # noqa: F811
    llm = ScriptedLLM([PLAN_TITANIC, "CHOICE: tri:rel", "DECISION: BACKTRACK\nREASON: not the release",
                       "CHOICE: tri:dir", "DECISION: CONTINUE", "CHOICE: tri:born", "DECISION: STOP"])
    _, tracer, _ = run(graph, llm, QUESTION, start_nodes=1, top_k=10)
    assert {s.kind for s in tracer.steps} == set(TYPES)
    for s in tracer.steps:
        assert s.record["type"] in TYPES[s.kind], s.title
        # the record's line is the one algorithm_lines lights for the step (by kind and title)
        line = KG_RAG.line_of(s)
        assert line is not None and s.record["line"] == f"CoE line {line}", s.title


def test_the_ranking_orders_by_its_scores_and_their_parts_add_up(graph: Any) -> None:  # noqa: F811
    _, tracer, _ = run(graph, OfflineLLM(), QUESTION)
    ranked = steps(tracer, "score")
    assert max(len(s.record["ranked"]) for s in ranked) > 1
    for step in ranked:
        rec = step.record
        scores = [rec["score"][c] for c in rec["ranked"]]
        assert scores == sorted(scores, reverse=True)
        for c in rec["ranked"]:
            assert abs(sum(rec["parts"][c].values()) - rec["score"][c]) <= 2e-4
        assert step.scores == rec["score"]
        assert [n.id for n in step.nodes] == [c for c in rec["ranked"] if not c.startswith("rel:")]


def test_the_offline_chooser_takes_its_best_score_and_the_trace_says_so(graph: Any) -> None:  # noqa: F811
    _, tracer, _ = run(graph, OfflineLLM(), QUESTION)
    picks = [s for s in steps(tracer, "select") if s.record["chosen"]]
    assert picks
    for step in picks:
        rec = step.record
        assert rec["by"] == "offline heuristic"
        assert rec["chosen"][0] == rec["order"][0]
        assert rec["score"][rec["chosen"][0]] == max(rec["score"].values())
        ordered = [rec["score"][c] for c in rec["order"]]
        assert ordered == sorted(ordered, reverse=True)
        assert step.data["picked"]["ranks"] == [rec["shown"].index(c) + 1 for c in rec["chosen"]]
        assert step.scores == rec["score"]


def test_a_model_pick_below_the_top_is_recorded_as_the_pick(graph: Any) -> None:  # noqa: F811
    llm = ScriptedLLM([PLAN_TITANIC, "CHOICE: 2", "DECISION: STOP"])
    _, tracer, _ = run(graph, llm, QUESTION, start_nodes=1)
    ranking = steps(tracer, "score")[0].record
    step = steps(tracer, "select")[0]
    rec = step.record
    assert rec["by"] == "model" and list(rec["chosen"]) == [ranking["ranked"][1]]
    # a model gives no score: the similarity it was shown is the deciding number
    assert rec["score"] == {c: ranking["score"][c] for c in rec["shown"]}
    top = next(n for n in step.nodes if n.id == ranking["ranked"][0])
    assert top.role == "rejected" and "the model's choice, not the similarity, decided" in top.reason


def test_step_back_and_refused_backtrack_records(graph: Any) -> None:  # noqa: F811
    llm = ScriptedLLM([PLAN_TITANIC, "CHOICE: tri:rel", "DECISION: CONTINUE", "CHOICE: tri:dir", "DECISION: STOP"])
    _, tracer, _ = run(graph, llm, "When was Titanic released and who directed it?", start_nodes=1, top_k=10)
    back = steps(tracer, "prune")[0].record
    assert back["dead_end"] and [c["id"] for c in back["dropped"]] == ["tri:rel"] and list(back["kept"]) == ["tri:rel"]
    assert back["reason"] == "dead end: no new candidate" and back["backtracks"] == 1
    llm = ScriptedLLM([PLAN_TITANIC, "CHOICE: tri:dir", "DECISION: BACKTRACK", "CHOICE: tri:born", "DECISION: STOP"])
    _, tracer, _ = run(graph, llm, QUESTION, start_nodes=1, top_k=10, allow_backtrack=False)
    verdict = next(s.record for s in tracer.steps if s.record["type"] == "Verdict")
    assert (verdict["requested"], verdict["decision"], verdict["refused"]) == ("backtrack", "continue",
                                                                                "backtracking off")


def test_the_context_record_is_what_the_answer_step_gets(graph: Any) -> None:  # noqa: F811
    ctx, tracer, _ = run(graph, OfflineLLM(), QUESTION, include_sentences=True, max_context_tokens=30)
    rec = tracer.steps[-1].record
    assert list(rec["facts"]) == [i.id for i in ctx.items if i.kind == "triple"]
    assert rec["tokens"] == ctx.n_tokens <= rec["budget"] == 30
    assert rec["dropped"] and not set(rec["dropped"]) & {i.id for i in ctx.items}


def test_a_record_survives_the_trace_round_trip(graph: Any) -> None:  # noqa: F811
    _, tracer, _ = run(graph, OfflineLLM(), QUESTION)
    for step in tracer.steps:
        back = TraceStep.from_dict(json.loads(json.dumps(step.to_dict())))
        assert back.record == json.loads(json.dumps(step.record))


def test_choice_ranks_are_places_in_the_shown_list() -> None:
    choice = Choice(1, ("a", "b", "c"), ("c", "a"), (), False, "model", {"a": 0.9, "b": 0.5, "c": 0.1},
                    {}, ("a", "b", "c"))
    assert choice.ranks == (3, 1)
    assert Candidate("rel:x|r|y", "x r y", "r", "x", "y", "x", "y", has_node=False).edge == ("x", "y", "r")
