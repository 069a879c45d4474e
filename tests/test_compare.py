"""kgviz.compare: several methods on one question, verdicts, metrics, funnel, overlap, overlay and
the exported case file (escaped, self-contained)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fixture_graph import FixtureGraph

import kgviz.compare as cmp
from kgviz.errors import ConfigError
from kgviz.methods.base import ContextItem, NodeRef, RetrievedContext, TraceStep
from kgviz.run import Run
from kgviz.types import Usage
from kgviz.viz.graph_html import EXTERNAL_REF
from kgviz.viz.overlay import build_overlay, overlay_html, shared_role

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Who designed the Harbour Library?"
METHODS = ["kg-rag", "kg-retriever", "text-rag", "no-retrieval"]


@pytest.fixture(scope="module")
def comparison(kg: FixtureGraph) -> cmp.Comparison:
    return cmp.compare(QUESTION, METHODS, kg.ctx, ["Marta Ruiz"])


def test_compare_runs_every_method_and_assesses_it(comparison: cmp.Comparison) -> None:
    assert [r.method for r in comparison.results] == METHODS
    assert comparison.judge == "offline check (weaker)" and comparison.mode == "offline"
    by = {r.method: r for r in comparison.results}
    assert by["no-retrieval"].verdict.abstained and by["no-retrieval"].funnel.label == "no retrieval"
    assert by["text-rag"].run.answer == "Marta Ruiz"
    assert by["text-rag"].metrics.em == 1.0 and by["text-rag"].funnel.label == "correct"
    for r in comparison.results:
        assert r.metrics is not None and r.funnel is not None
        if r.run.answer and not r.verdict.abstained:
            assert r.verdict.claims, r.method
    assert comparison.presence is not None and comparison.presence.in_graph
    s = comparison.summary()
    assert s["methods"] == 4 and s["abstained"] == 1


def test_overlap_is_pairwise_jaccard(comparison: cmp.Comparison) -> None:
    pairs = {(o.a, o.b): o for o in comparison.overlap}
    assert len(pairs) == 6
    nr = pairs[("kg-rag", "no-retrieval")]
    assert nr.shared == 0 and nr.jaccard == 0.0
    for o in comparison.overlap:
        assert 0.0 <= o.jaccard <= 1.0 and o.shared <= o.union


def test_overlap_matrix_is_symmetric(comparison: cmp.Comparison) -> None:
    methods, rows = cmp.overlap_matrix(comparison)
    assert methods == METHODS and [r[0] for r in rows] == METHODS
    assert all(rows[i][i + 1] == "-" for i in range(len(METHODS)))
    assert rows[0][3] == rows[2][1]  # kg-rag x text-rag == text-rag x kg-rag
    assert rows[0][4] == "0.00 (0)"  # nothing shared with no-retrieval


def test_cached_runs_are_reused_not_rerun(kg: FixtureGraph, comparison: cmp.Comparison,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    real = cmp.run_method

    def spy(name, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202 - passthrough
        ran.append(name)
        return real(name, *a, **kw)

    monkeypatch.setattr(cmp, "run_method", spy)
    cached = {r.method: r.run for r in comparison.results if r.method != "kg-rag"}
    again = cmp.compare(QUESTION, METHODS, kg.ctx, cached=cached)
    assert ran == ["kg-rag"]
    assert again.results[1].run is cached["kg-retriever"]
    assert again.results[0].metrics is None and again.presence is None  # no gold this time
    with pytest.raises(ConfigError):
        cmp.assess([], kg.ctx)


def _planted_run(method: str, answer: str, items: list[tuple[str, str, str]], nodes: list[str]) -> Run:
    ctx = RetrievedContext(items=[ContextItem(i, k, t) for i, k, t in items], node_ids=nodes)
    trace = [TraceStep(0, "seed", "seed <b>step</b>", nodes=[NodeRef(n, "Entity", "seed") for n in nodes])]
    return Run(method, QUESTION, {}, ctx, answer, trace, Usage(calls=2, input_tokens=40, cost_usd=0.0012),
               "offline")


def test_case_file_is_escaped_and_self_contained(kg: FixtureGraph) -> None:
    evil = '<script>alert("x")</script><img src="https://evil.example/x.png">'
    runs = [
        _planted_run("kg-rag", f"Marta Ruiz {evil}", [("tri:1", "triple", f"Marta Ruiz designed Harbour Library {evil}")],
                     [kg.entities["Marta Ruiz"], kg.entities["Harbour Library"]]),
        _planted_run("text-rag", "Marta Ruiz", [(kg.chunks["Harbour Library"][0], "chunk", "designed by Marta Ruiz")],
                     [kg.entities["Marta Ruiz"]]),
    ]
    c = cmp.assess(runs, kg.ctx, ["Marta Ruiz"])
    page = cmp.case_file_html(c, kg.store)
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert "<img" not in page
    assert EXTERNAL_REF.search(page) is None
    assert not re.search(r"""<(?:link|script|img|iframe)[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", page, re.I)
    assert "Hallucination = an answer that does not abstain" in page
    assert "kg-rag" in page and "text-rag" in page and "0.0012" in page
    assert 'srcdoc="' in page  # the overlay graph travels inside the file
    data = json.loads(cmp.case_file_json(c))
    assert data["question"] == QUESTION and data["golds"] == ["Marta Ruiz"]
    assert [r["run"]["method"] for r in data["results"]] == ["kg-rag", "text-rag"]
    assert "Marta Ruiz <script>" in data["results"][0]["verdict"]["claims"][0]["text"]  # JSON keeps raw text
    assert data["overlap"][0]["shared"] == 1


def test_overlay_colours_by_method_and_marks_shared(kg: FixtureGraph) -> None:
    mr, hl, li = kg.entities["Marta Ruiz"], kg.entities["Harbour Library"], kg.entities["Lisbon"]
    runs = [_planted_run("kg-rag", "x", [], [mr, hl]), _planted_run("text-rag", "y", [], [mr, li])]
    ov = build_overlay(runs, kg.store)
    roles = {n.id: n.role for n in ov.graph.nodes}
    assert roles == {mr: shared_role(2), hl: "kg-rag", li: "text-rag"}
    assert ov.shared == 1 and ov.by_node[mr] == ["kg-rag", "text-rag"]
    labels = {n.id: n.label for n in ov.graph.nodes}
    assert labels[hl] == "Harbour Library"  # names come from the store
    assert ov.graph.nodes[0].id == mr  # shared evidence first (survives the cap)
    page = overlay_html(ov)
    legend = re.search(r'<div class="kgviz-legend".*?</div>', page, re.S).group(0)
    assert "kg-rag" in legend and "text-rag" in legend and "shared by 2 methods" in legend
    assert ov.colours["kg-rag"] in legend
    capped = build_overlay(runs, kg.store, cap=1)
    assert [n.id for n in capped.graph.nodes] == [mr] and capped.graph.total_nodes == 3


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update(KGVIZ_HOME=str(home), KGVIZ_LLM="offline", KGVIZ_EMBEDDER="hashing")
    return subprocess.run([sys.executable, "-m", "kgviz.cli", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=240)


@pytest.mark.slow
def test_cli_ask_reports_verdicts_and_with_gold_metrics_and_funnel(tmp_path: Path) -> None:
    db = tmp_path / "ws"
    built = _cli("build", str(ROOT / "sample_data" / "corpus"), "--db", str(db), "--json", home=tmp_path)
    assert built.returncode == 0, built.stderr
    question = "In what year was the Tidewell Line founded?"
    plain = _cli("ask", question, "--db", str(db), "--method", "text-rag,no-retrieval", "--json", home=tmp_path)
    assert plain.returncode == 0, plain.stderr
    runs = json.loads(plain.stdout)
    assert [r["method"] for r in runs] == ["text-rag", "no-retrieval"]
    v = runs[0]["verdict"]
    assert set(v) >= {"claims", "labels", "evidence_ids", "hallucinated", "abstained"}
    assert v["labels"] and v["evidence_ids"] and v["judge"] == "offline check (weaker)"
    assert runs[1]["verdict"]["abstained"] is True and runs[1]["verdict"]["hallucinated"] is False
    assert "metrics" not in runs[0] and "funnel" not in runs[0]

    gold = _cli("ask", question, "--db", str(db), "--method", "text-rag", "--gold", "1898", "--gold", "in 1898",
                "--json", home=tmp_path)
    assert gold.returncode == 0, gold.stderr
    [run] = json.loads(gold.stdout)
    assert run["metrics"] == {"em": 1.0, "f1": 1.0, "acc": 1.0, "coverage": 1.0}
    assert run["funnel"]["label"] == "correct" and run["funnel"]["in_corpus"] is True

    text = _cli("ask", question, "--db", str(db), "--method", "no-retrieval", "--gold", "1898", home=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "abstained" in text.stdout and "funnel: no retrieval" in text.stdout
