"""Each step of a finished run names its line of the paper's algorithm (step.data["algo_line"]):
every step of every golden run has one, the line exists in its method's box, and steps of the
same kind land on the lines the paper gives them."""
from __future__ import annotations

import gzip
import json

import pytest

from kgviz.methods import algorithm_lines as al
from kgviz.methods.base import NodeRef, TraceStep
from kgviz.methods.registry import list_methods
from tests.support.golden import SAMPLE_FILE


def _golden() -> dict[str, dict]:
    with gzip.open(SAMPLE_FILE, "rt", encoding="utf-8") as f:
        return json.load(f)


def test_every_registered_method_has_a_box() -> None:
    assert set(list_methods()) <= set(al.BOXES)


def test_every_golden_step_names_a_line_of_its_methods_box() -> None:
    runs = _golden()
    assert runs
    for key, run in runs.items():
        box = al.box_for(run["method"])
        assert box is not None, key
        numbers = {ln.number for ln in box.lines}
        for s in run["trace"]:
            assert s["data"].get(al.DATA_KEY) in numbers, (key, s["title"])
            step = TraceStep(s["index"], s["kind"], s["title"])
            assert box.line_of(step) == s["data"][al.DATA_KEY]  # the saved line is today's mapping


@pytest.mark.parametrize("method,kind,title,text", [
    ("kg-rag", "select", "Hop 2: choose the next fact", "f ← LLM chooses the next fact"),
    ("kg-rag", "prune", "Dead end: step back from hop 3", "if dead end"),
    ("kg-retriever", "score", "Entity filter w·cos > λ=0.1", "w · CosSim(v_e, v_q) > λ"),
    ("kg-infused", "expand", "Round 2: activation frontier — stop", "(Eq. 5–6)"),
    ("kg-infused", "llm", "KG-based query expansion (Table 15)", "(Eq. 7)"),
    ("ket-rag", "score", "Keyword channel: candidate sub-chunks", "S ← sub-chunks of N(S_k)"),
    ("ket-rag", "select", "Skeleton channel: relationships", "(l.2)"),
])
def test_a_step_lights_the_line_that_does_its_work(method: str, kind: str, title: str, text: str) -> None:
    box = al.box_for(method)
    assert box is not None
    n = box.line_of(TraceStep(0, kind, title))  # type: ignore[arg-type]
    assert n is not None and text in box.line(n).text


def test_annotate_leaves_unknown_steps_without_a_line_and_box_data_marks_ours_lines() -> None:
    trace = [TraceStep(0, "seed", "Start nodes by vector search", ours="start nodes by cosine (ours)",
                       nodes=[NodeRef("e1", "Entity", "chosen")]),
             TraceStep(1, "error", "kg-rag failed")]
    al.annotate("kg-rag", trace)
    assert al.step_line(trace[0]) == 2 and al.step_line(trace[1]) is None
    data = al.box_data("kg-rag", trace)
    assert data is not None and data["reconstruction"] is True and data["steps"] == [2, None]
    ours = {ln["n"]: ln["ours"] for ln in data["lines"]}  # type: ignore[union-attr]
    assert ours[2] == "start nodes by cosine (ours)" and ours[1] == ""
    assert al.box_for("no-such-method") is None and al.box_data("no-such-method", trace) is None
