"""Lessons and the player's classroom data: timeline markers, decision steps, the algorithm box in
the page data, presentation settings, two runs on one page and one shared layout."""
from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa
import pytest

from kgviz.errors import ConfigError, KgvizError
from kgviz.graph.triple_graph import TRIPLE_COLUMNS, TripleGraph
from kgviz.methods.base import NodeRef, TraceStep
from kgviz.run import Run
from kgviz.types import Usage
from kgviz.methods.base import RetrievedContext
from kgviz.viz import trace as vt
from kgviz.viz import trace_player as tp
from kgviz.viz.graph_html import EXTERNAL_REF
from kgviz.viz.lesson import lesson_html

HOSTILE = '</script><img src=x onerror=alert(1)>'


def _kg_rag_trace() -> list[TraceStep]:
    return [
        TraceStep(0, "llm", "Plan the exploration"),
        TraceStep(1, "seed", "Start nodes by vector search", nodes=[NodeRef("e1", "Entity", "chosen", "Tidewell")]),
        TraceStep(2, "expand", "Hop 1: fetch the neighbourhood", nodes=[NodeRef("t1", "Triple", "candidate", "a"),
                                                                        NodeRef("t2", "Triple", "candidate", "b")]),
        TraceStep(3, "select", "Hop 1: choose the next fact", nodes=[NodeRef("t1", "Triple", "chosen", "a", 0.9),
                                                                     NodeRef("t2", "Triple", "rejected", "b", 0.4)]),
        TraceStep(4, "prune", "Dead end: step back from hop 1", nodes=[NodeRef("t1", "Triple", "rejected", "a")]),
        TraceStep(5, "select", "Hop 2: choose the next fact", nodes=[NodeRef("t2", "Triple", "chosen", "b", 0.4),
                                                                     NodeRef("t3", "Triple", "rejected", "c", 0.3,
                                                                             reason="over budget")]),
        TraceStep(6, "answer", "Answer"),
    ]


def _run(method: str, trace: list[TraceStep], question: str = "When was the Tidewell Line founded?") -> Run:
    return Run(method=method, question=question, params={}, context=RetrievedContext(), answer="", trace=trace,
               usage=Usage(), mode="offline", error="", seconds=0.0, retrieval_seconds=0.0)


class _NoStore:
    """A store with nothing to add: every label comes from the trace (no statement returns a row,
    and the graph held in memory, which the facts' links are read from, is empty)."""

    def query(self, *_a: Any, **_k: Any) -> list[Any]:
        return []

    def derived(self, _key: str, _load: Any) -> Any:
        def empty(*names: str) -> pa.Table:
            return pa.table({n: pa.array([], type=pa.string()) for n in names})
        return TripleGraph(empty(*TRIPLE_COLUMNS), empty("id", "name", "origin", "description"),
                           empty("t", "side", "x"), empty("t", "side", "x"),
                           empty("src", "dst", "relation", "triple_id", "origin"))


def test_timeline_markers_name_seed_hops_backtracks_budget_cuts_and_the_answer() -> None:
    marks = tp.timeline_markers(_kg_rag_trace())
    assert [m and m["label"] for m in marks] == [None, "seed", "hop 1", None, "backtrack", "hop 2", "answer"]
    budget = TraceStep(0, "context", "5 chunks", nodes=[NodeRef("c", "Chunk", "rejected", reason="over budget: 900")])
    assert tp.timeline_markers([budget]) == [{"kind": "budget", "label": "budget cut"}]


def test_decision_steps_are_the_choices_among_candidates() -> None:
    trace = _kg_rag_trace()
    assert [tp.is_decision(s) for s in trace] == [False, False, False, True, False, True, False]


def test_the_page_data_carries_the_algorithm_box_and_the_presentation_settings() -> None:
    trace = _kg_rag_trace()
    from kgviz.methods import algorithm_lines

    algorithm_lines.annotate("kg-rag", trace)
    data = tp.player_data(vt.build_frames(trace), trace, {}, tp.PlayerParams(present=True), run="kg-rag")
    assert data["present"] is True and data["presentMinLabelPx"] >= 16 and data["presentFont"] >= 16
    assert data["algo"]["reconstruction"] is True
    assert data["algo"]["steps"] == [1, 2, 4, 6, 7, 6, 10]
    assert [s["decision"] for s in data["steps"]] == [False, False, False, True, False, True, False]


def test_a_lesson_is_one_offline_page_with_two_runs_on_one_layout() -> None:
    a = _run("kg-rag", _kg_rag_trace(), question="When? " + HOSTILE)
    b = _run("text-rag", [TraceStep(0, "seed", "BM25 search over chunks",
                                    nodes=[NodeRef("t2", "Triple", "chosen", "b"), NodeRef("c9", "Chunk", "candidate")]),
                          TraceStep(1, "answer", "Answer")], question=a.question)
    page = lesson_html([a, b], _NoStore())
    assert not EXTERNAL_REF.search(page) and "<img" not in page
    blocks = re.findall(r'<script type="application/json" id="(kp-data(?:-2)?)">(.*?)</script>', page, re.S)
    assert [k for k, _ in blocks] == ["kp-data", "kp-data-2"]
    one, two = (json.loads(body) for _, body in blocks)
    assert one["present"] and one["question"] == a.question and one["run"] == "kg-rag" and two["run"] == "text-rag"
    assert one["algo"]["steps"][-1] == 10 and two["algo"]["steps"] == [2, 5]  # saved runs get their lines too
    at = {n["tip"]: (n["x"], n["y"]) for n in one["nodes"]}
    shared = [n for n in two["nodes"] if n["tip"] in at]
    assert shared and all(at[n["tip"]] == (n["x"], n["y"]) for n in shared)  # one layout for both
    assert page.count('class="kp-pane"') == 2 and 'id="kp-panel-2"' in page and "100vh" in page


def test_a_lesson_takes_one_or_two_runs_of_one_question() -> None:
    r = _run("kg-rag", _kg_rag_trace())
    with pytest.raises(ConfigError):
        lesson_html([r, r, r], _NoStore())
    with pytest.raises(ConfigError):
        lesson_html([r, _run("text-rag", [], question="another question")], _NoStore())
    with pytest.raises(KgvizError):
        tp.player_html([], tp.PlayerParams())


def test_choices_are_laid_out_together() -> None:
    trace = _kg_rag_trace()
    pairs = vt.choice_pairs(vt.build_frames(trace, stable_layout=False))
    assert ("t1", "t2") in pairs and ("t2", "t3") in pairs


def test_a_lesson_of_one_run_from_the_frames_the_player_drew_is_the_same_page() -> None:
    """The Trace page hands the lesson the frames its player drew (``built``): a lesson of one run
    lays them out alone, as the player does, so the page is byte for byte the one made afresh."""
    run = _run("kg-rag", _kg_rag_trace(), question="When? " + HOSTILE)
    fresh = lesson_html([run], _NoStore())
    built = tp.run_frames(run.trace, _NoStore())
    assert built[0] and all(f.positions for f in built[0])  # laid out: the comparison covers the layout
    assert lesson_html([run], _NoStore(), built=built) == fresh
    with pytest.raises(ConfigError):  # two runs share one layout: their own frames do not do
        lesson_html([run, run], _NoStore(), built=built)
