"""Issue 22, point 1: every step that chooses shows the number that decided, ranked the way the
choice was made; a node left out although it shows a higher score than a taken one says why
(``reason``); where a chooser went against the ranking it was given, the step says so and quotes
the model. Checked on every method offline over the sample questions, on the KG-RAG hop-2 example
("the chosen fact shows 0.119 while rejected show 0.313 and 0.133"), with a scripted model that
picks #3, and on the recorded real-model replies (sample_recorded)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import pytest

from kgviz.methods.base import MethodContext, TraceStep
from kgviz.methods.deciding import budget_reasons, outranked
from kgviz.providers.base import LLMBase
from kgviz.reasoning import Reasoner
from kgviz.run import Run, run_method
from kgviz.types import Completion, Message, Usage
from kgviz.viz.step_panel import candidate_rows, step_panel
from tests.support import deciding as check
from tests.support.golden import questions

ROOT = Path(__file__).resolve().parents[2]
HOP2_QUESTION = "In which town was the founder of the Ossel Marine Institute born?"
HOP2_FACT = "Thomas Aldrick was born in Ventholm"


@pytest.fixture(scope="module")
def sample_runs(sample_graph: MethodContext) -> list[Run]:
    from kgviz.methods.registry import list_methods

    qs = questions(ROOT / "sample_data" / "questions.jsonl")
    return [run_method(m, q, sample_graph) for q in qs for m in list_methods()]


def _select(run: Run, title: str) -> TraceStep:
    (step,) = [s for s in run.trace if s.kind == "select" and s.title == title]
    return step


def test_no_step_shows_a_better_scored_node_left_out_without_a_reason(sample_runs: list[Run]) -> None:
    counted = check.count(sample_runs)
    assert counted.deciding_steps > 200  # every method's select / score steps on 14 questions
    assert counted.deciding_unexplained == 0, counted.where[:3]
    assert counted.all_unexplained == 0, counted.where[:3]
    # one number per node: the JSON's node score is the one the table and the node size use
    assert counted.disagreeing == 0, counted.where[:3]
    # not vacuous: the sample has nodes that outrank a taken one and say why
    explained = [n for r in sample_runs for s in r.trace for n in outranked(s.nodes)]
    assert len(explained) > 20 and all(n.reason for n in explained)


def test_the_checker_finds_an_unexplained_node() -> None:
    from kgviz.methods.base import NodeRef

    step = TraceStep(0, "select", "pick", nodes=[NodeRef("a", "Triple", "chosen", "A", 0.1),
                                                 NodeRef("b", "Triple", "rejected", "B", 0.3)])
    assert check.unexplained(step) == ["b"]
    step.nodes[1].reason = "over budget: 90 tokens, 10 of 100 left"
    assert check.unexplained(step) == []
    step.scores = {"b": 0.2}
    assert check.disagreeing(step) == ["b"]


def test_kg_rag_hop_2_the_chosen_fact_ranks_first_on_the_shown_score(sample_graph: MethodContext) -> None:
    run = run_method("kg-rag", HOP2_QUESTION, sample_graph)
    step = _select(run, "Hop 2: choose the next fact")
    facts = [n for n in step.nodes if n.table == "Triple"]
    (chosen,) = [n for n in facts if n.role == "chosen"]
    assert chosen.label == HOP2_FACT
    # the deciding number is the offline chooser's, first on it; the similarity it was shown is a part
    assert chosen.rank == 1 and chosen.score == max(n.score for n in facts if n.score is not None)
    assert chosen.score_parts["similarity"] == pytest.approx(0.119, abs=5e-4)
    assert sum(chosen.score_parts.values()) == pytest.approx(chosen.score, abs=1e-3)
    assert sorted(n.rank for n in facts) == list(range(1, len(facts) + 1))
    assert step.scores == {n.id: n.score for n in facts}  # the table, the node sizes and the JSON agree
    # the similarity ranking it was given put it third: the step says so
    assert step.data["picked"]["ranks"] == [3] and step.data["picked"]["by"] == "offline heuristic"
    assert "picked #3 of 5" in step.detail
    # the panel: the chosen fact first, its rank and parts beside it, the score formula named
    columns, rows = candidate_rows(step, {n.id: n.label for n in step.nodes})
    assert rows[0][0] == "✓ chosen" and rows[0][1] == f"{HOP2_FACT} (fact)"
    assert rows[0][2] == f"{chosen.score:.3f}" and rows[0][columns.index("#")] == "1"
    assert "similarity 0.119" in rows[0][columns.index("parts")]
    facts_panel = dict(map(tuple, step_panel(run.trace, step.index, {})["facts"]))
    assert facts_panel["score"].startswith("the offline chooser's score")
    assert facts_panel["choice"].startswith("the offline chooser picked #3 of 5 (numbered by similarity)")


class ScriptedLLM(LLMBase):
    """Replies with canned texts, in order (kg-rag: plan, choose, evaluate; then the answer)."""

    provider = "fake"
    model = "scripted"

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        return Completion(self.replies.pop(0), Usage(input_tokens=20, output_tokens=4, calls=1), self.model,
                          self.provider)


def test_a_model_picking_against_the_ranking_is_named_and_quoted(sample_graph: MethodContext) -> None:
    llm = ScriptedLLM(["ENTITIES: Ossel Marine Institute\nRELATIONS: founder, born\nHOPS: 1",
                       "The third fact names the founder.\nCHOICE: 3", "DECISION: STOP\nREASON: enough",
                       "ANSWER: Ventholm"])
    ctx = MethodContext(sample_graph.store, Reasoner(llm, sample_graph.embedder))
    run = run_method("kg-rag", HOP2_QUESTION, ctx)
    assert run.ok, run.error
    step = _select(run, "Hop 1: choose the next fact")
    facts = [n for n in step.nodes if n.table == "Triple"]
    (chosen,) = [n for n in facts if n.role == "chosen"]
    # a model gives no score: the similarity it was shown stays the number, in the order it was numbered
    assert chosen.rank == 3 and [n.rank for n in facts] == [1, 2, 3, 4, 5]
    assert step.data["picked"] == {"ranks": [3], "of": 5, "by": "model", "ranking": "numbered by similarity",
                                   "words": "The third fact names the founder. CHOICE: 3"}
    assert "the chooser picked #3 of 5" in step.detail
    above = outranked(step.nodes)
    assert [n.rank for n in above] == [1, 2]
    assert all("picked #3 of 5" in n.reason for n in above)
    assert check.unexplained(step) == []
    panel = step_panel(run.trace, step.index, {})
    facts_panel = dict(map(tuple, panel["facts"]))
    assert facts_panel["the model's words"] == "The third fact names the founder. CHOICE: 3"
    assert "a node it passed over says so" in facts_panel["choice"]
    reasons = [r[panel["columns"].index("reason")] for r in panel["rows"] if r[0] == "✗ rejected"]
    assert sum("picked #3 of 5" in r for r in reasons) == 2


def test_the_deciding_fields_travel_with_the_trace(sample_runs: list[Run]) -> None:
    run = next(r for r in sample_runs if r.method == "kg-rag" and r.question == HOP2_QUESTION)
    again = Run.from_dict(json.loads(json.dumps(run.to_dict())))  # what an export or a saved trace holds
    assert [s.nodes for s in again.trace] == [s.nodes for s in run.trace]
    assert [s.data.get("picked") for s in again.trace] == [s.data.get("picked") for s in run.trace]
    plain = next(n for s in run.trace for n in s.nodes if not (n.score_parts or n.rank or n.reason))
    assert set(plain.to_dict()) == {"id", "table", "role", "label", "score"}  # unset fields are not written


def test_budget_reasons_replay_the_fill() -> None:
    sized = [("a", 50), ("b", 80), ("c", 30), ("d", 40)]
    assert budget_reasons(sized, 100, ["a", "c"]) == {
        "b": "over budget: 80 tokens, 50 of 100 left", "d": "over budget: 40 tokens, 20 of 100 left"}
    stop = budget_reasons(sized, 100, ["a"], stop_at_first=True)
    assert stop["b"] == "over budget: 80 tokens, 50 of 100 left"
    assert stop["c"].startswith("after the first overflow") and stop["d"].startswith("after the first overflow")


# --- the recorded real-model replies --------------------------------------------------------------
@pytest.fixture(scope="module")
def recorded_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Run]:
    """kg-rag and kg-infused on every recorded sample question, replayed (no model, no network)."""
    from kgviz.replay import RUNS_FILE, SAMPLE_RECORDING
    from tests.support.recorded_sample import replayed_sample

    rows = [json.loads(ln) for ln in (SAMPLE_RECORDING / RUNS_FILE).read_text(encoding="utf-8").splitlines()
            if ln.strip()]
    with replayed_sample(tmp_path_factory.mktemp("replay") / "db") as replay:
        ctx = replay.session.method_context()
        runs = [run_method(r["method"], r["question"], ctx) for r in rows if r["method"] in ("kg-rag", "kg-infused")]
    assert replay.llm.misses == 0
    return runs


def test_recorded_replies_choices_rank_first_or_say_so(recorded_runs: list[Run]) -> None:
    assert check.count(recorded_runs).all_unexplained == 0
    kg_rag = [s for r in recorded_runs if r.method == "kg-rag" for s in r.trace
              if s.kind == "select" and any(n.role == "chosen" and n.table == "Triple" for n in s.nodes)]
    assert kg_rag, "the recording holds kg-rag hops that followed a fact"
    for step in kg_rag:
        facts = [n for n in step.nodes if n.table == "Triple"]
        chosen = [n for n in facts if n.role == "chosen"]
        assert step.data["picked"]["by"] == "model" and step.data["picked"]["words"]
        # the recorded model took the first fact it was shown each time: it ranks first on the shown score
        assert step.data["picked"]["ranks"] == [1] and chosen[0].rank == 1
        assert chosen[0].score == max(n.score for n in facts if n.score is not None)
        assert "picked #1 of" in step.detail
    # KG-Infused (Tables 12/13): where the model kept a triple with a lower cosine than ones it left,
    # those say so, quoting the pick, and the step carries the model's words
    against = [(s, n) for r in recorded_runs if r.method == "kg-infused" for s in r.trace if s.kind == "select"
               for n in outranked(s.nodes)]
    assert against, "the recording has a selection against the cosine ranking (s05, s06, s13)"
    for step, node in against:
        assert "the model's selection, not the cosine, decided" in node.reason
        picked = step.data["picked"]
        assert picked["by"] == "model" and picked["words"] and len(picked["listed_as"]) == len(picked["ranks"])
        listed = dict(map(tuple, step_panel([step], 0, {})["facts"]))["as the model saw them"]
        assert listed.startswith("listed as [") and "without scores" in listed
