"""The exported case file: each answer's verdict as right x grounded with two labelled marks (never
green for a wrong answer), and the judge's caution wherever a verdict is shown."""
from __future__ import annotations

import json
import re

from kgviz.compare import case_file_json
from kgviz.methods.base import ContextItem, RetrievedContext, TraceStep
from kgviz.offline.judge import OFFLINE_JUDGE_LABEL
from kgviz.run import Run
from kgviz.types import Usage
from kgviz.verify.comparison import Comparison, MethodResult
from kgviz.verify.judge import ClaimVerdict, Verdict
from kgviz.verify.metrics import score
from kgviz.verify.outcome import GREEN
from kgviz.viz.case_file import render_case_file, summary_rows

QUESTION = "In which town was the founder of the Ossel Marine Institute born?"
GOLD = ["Tarrow"]


def _result(method: str, answer: str, label: str, *, error: str = "") -> MethodResult:
    context = "Anster Wren is the founder of the Ossel Marine Institute. Agnes Vohl was born in Tarrow."
    run = Run(method, QUESTION, {}, RetrievedContext([ContextItem("c1", "chunk", context)]), answer, [],
              Usage(calls=1), "recorded:qwen", error=error)
    verdict = Verdict(method, answer, f"LLM judge (recorded:qwen)", failed=bool(error))
    if not error:
        verdict.claims = [ClaimVerdict(answer, label, ["c1"], start=0, end=len(answer))]
    return MethodResult(run, verdict, score("" if error else answer, context, GOLD))


def comparison() -> Comparison:
    return Comparison(QUESTION, GOLD, [_result("kg-retriever", "Anster Wren", "supported"),
                                       _result("ket-rag", "Tarrow", "supported"),
                                       _result("kg-rag", "Tarrow", "not_found"),
                                       _result("kg-infused", "", "", error="no reply recorded")],
                      "recorded:qwen", "LLM judge (recorded:qwen)")


def _badge(page: str, method: str) -> str:
    section = page.split(f"<h2>{method}</h2>", 1)[1]
    return re.search(r'<span class="badge outcome-[^"]*"[^>]*>[^<]*</span>', section).group(0)


def test_wrong_but_grounded_is_named_and_not_green() -> None:
    page = render_case_file(comparison(), include_graph=False)
    wren = _badge(page, "kg-retriever")
    assert "grounded but wrong" in wren and GREEN not in wren
    right = _badge(page, "ket-rag")
    assert "right and grounded" in right and GREEN in right
    assert "right but unsupported" in _badge(page, "kg-rag")
    assert "method failed" in _badge(page, "kg-infused")
    section = page.split("<h2>kg-retriever</h2>", 1)[1].split("<h2>", 1)[0]
    # two labelled marks: correctness with the number that decided, and groundedness
    assert 'class="kgviz-mark mark-correct" data-ok="False"' in section and "does not match gold (EM 0" in section
    assert 'class="kgviz-mark mark-grounded" data-ok="True"' in section
    verdict = section.split("<div class='verdict'>", 1)[1].split("<div class='muted'>", 1)[0]
    assert "kgviz-mark" in verdict and GREEN not in verdict  # no green anywhere in its verdict
    assert "Right: 2 of 3 methods that ran" in page


def test_summary_table_has_the_verdict_and_both_marks() -> None:
    rows = {r[0]: r for r in summary_rows(comparison())}
    assert rows["kg-retriever"][2:5] == ["grounded but wrong", "✗ does not match gold (EM 0 · F1 0)",
                                         "✓ 1 claim supported by its context"]
    assert rows["kg-infused"][2:5] == ["method failed", "", ""]


def test_the_judge_caution_travels_with_the_verdicts() -> None:
    page = render_case_file(comparison(), include_graph=False)
    assert "How far to trust the verdicts" in page and "judge generously" in page
    offline = comparison()
    offline.judge = OFFLINE_JUDGE_LABEL
    assert "weaker than an LLM judge" in render_case_file(offline, include_graph=False)


def test_json_export_carries_the_outcome() -> None:
    data = json.loads(case_file_json(comparison()))
    outcomes = {r["run"]["method"]: r["outcome"] for r in data["results"]}
    assert outcomes["kg-retriever"]["kind"] == "grounded_wrong"
    assert outcomes["kg-retriever"]["correct"]["ok"] is False and outcomes["kg-retriever"]["grounded"]["ok"] is True
    assert outcomes["kg-infused"] == {"kind": "failed", "label": "method failed", "colour": "#757575",
                                      "correct": None, "grounded": None}
    assert data["summary"]["right"] == 2 and data["summary"]["outcomes"]["grounded_wrong"] == 1


def test_the_step_table_has_an_ours_column_with_the_reason() -> None:
    c = comparison()
    c.results[0].run.trace = [TraceStep(0, "seed", "Top-3 documents"),
                              TraceStep(1, "expand", "Document layer", ours="w = 1 for the top-N <b>documents</b>")]
    section = render_case_file(c, include_graph=False).split("<h2>kg-retriever</h2>", 1)[1].split("<h2>", 1)[0]
    assert "Path: 2 trace steps, 1 marked ours" in section and "<th>ours</th>" in section
    assert "<td>w = 1 for the top-N &lt;b&gt;documents&lt;/b&gt;</td>" in section  # escaped
