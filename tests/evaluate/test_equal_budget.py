"""Equal-budget evaluation (issue 12 item 5): every method's context budget and the answer step's
are B, the bm25 / dense baselines join the run, the summary shows median context tokens, and the
resume hash follows B."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from eval_paths import SAMPLE_QUESTIONS

from kgviz.answer import Budget
from kgviz.cli import main
from kgviz.errors import ConfigError
from kgviz.evaluate import evaluate, load_questions, run_evaluation
from kgviz.evaluate.budget import BASELINES, budget_param, with_baselines
from kgviz.evaluate.report import format_equal_budget_table, format_table
from kgviz.evaluate.runner import params_hash
from kgviz.evaluate.scoring import Scored
from kgviz.methods.base import MethodContext, params_to_dict
from kgviz.methods.registry import get_method, list_methods
from kgviz.methods.text_rag import TextRagParams
from kgviz.run import Run, resolve_run

B = 300
BUDGETED = {"text-rag": "budget_tokens", "kg-rag": "max_context_tokens", "ket-rag": "context_limit",
            "keyword-rag": "context_limit", "skeleton-rag": "context_limit", "ket-full": "context_limit",
            "bm25": "budget_tokens", "dense": "budget_tokens", "kg-infused": "budget_tokens"}


class Capture:
    """A scorer that keeps every Run (to read its params and answer step) and scores nothing."""

    def __init__(self) -> None:
        self.runs: list[Run] = []

    def __call__(self, run: Run, item: object, ctx: object, budget: int | None = None) -> Scored:
        self.runs.append(run)
        return Scored(metrics={"em": 0.0, "f1": 0.0, "acc": 0.0, "coverage": 0.0}, hallucinated=False,
                      abstained=False, funnel={"in_graph": item.id != "s01"})  # type: ignore[attr-defined]


def _answer_budget(run: Run) -> int:
    return next(s.data["budget_tokens"] for s in run.trace if s.kind == "answer")


def test_every_method_declares_its_budget_param() -> None:
    for name in list_methods():
        assert budget_param(name) == BUDGETED.get(name), name  # the others stop on their own
        field = budget_param(name)
        if field is not None:  # a real int field of the method's Params
            assert isinstance(getattr(get_method(name).Params(), field), int), name


def test_every_method_receives_b_and_the_answer_step_too(sample_ctx: MethodContext) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=2)
    cap = Capture()
    methods = [m for m in list_methods() if m != "no-retrieval"]
    res = evaluate(items, methods, sample_ctx, budget_tokens=B, scorer=cap)
    assert len(cap.runs) == len(items) * len(methods) and all(r.ok for r in cap.runs), [r.error for r in cap.runs]
    for run in cap.runs:
        field = BUDGETED.get(run.method)
        if field is not None:
            assert run.params[field] == B, run.method
        assert _answer_budget(run) == B, run.method
    for rec in res.records:
        assert rec.budget_tokens == B and 0 <= rec.context_tokens <= B
        run = next(r for r in cap.runs if (r.method, r.question) == (rec.method, rec.question))
        used = next(s.data["used_tokens"] for s in run.trace if s.kind == "answer")
        assert rec.context_tokens == used and rec.retrieved_tokens == run.context.n_tokens
    # the budget is used: the passage baselines fill most of B on this corpus
    assert all(r.context_tokens > B // 2 for r in res.records if r.method in ("text-rag", "bm25", "dense"))


def test_without_a_budget_methods_keep_their_own(sample_ctx: MethodContext) -> None:
    cap = Capture()
    evaluate(load_questions(SAMPLE_QUESTIONS, limit=1), ["text-rag", "ket-rag"], sample_ctx, scorer=cap)
    assert cap.runs[0].params["budget_tokens"] == TextRagParams().budget_tokens
    assert cap.runs[1].params["context_limit"] == 4000


def test_an_override_that_contradicts_b_is_an_error(sample_ctx: MethodContext) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=1)
    with pytest.raises(ConfigError, match="text-rag.budget_tokens=500 contradicts the equal context budget 300"):
        evaluate(items, ["text-rag"], sample_ctx, budget_tokens=B, params={"text-rag": {"budget_tokens": 500}})
    # an override of another field is kept, with the budget set beside it; the caller's params are
    # passed on as they are (the run resolves B, kgviz.run.resolve_run)
    given = {"top_k": 3}
    assert resolve_run(get_method("text-rag"), given, None, B, equal_budget=True) == (
        TextRagParams(top_k=3, budget_tokens=B), Budget(B, "explicit"))
    assert given == {"top_k": 3}
    assert resolve_run(get_method("text-rag"), TextRagParams(top_k=3), None, B, equal_budget=True)[0] == \
        TextRagParams(top_k=3, budget_tokens=B)
    assert resolve_run(get_method("kg-retriever"), {"max_t": 5}, None, B, equal_budget=True)[0].max_t == 5
    # without equal_budget B caps the answer step only (ask, Compare): the method keeps its own budget
    assert resolve_run(get_method("text-rag"), None, None, B) == (TextRagParams(), Budget(B, "explicit"))
    with pytest.raises(ConfigError, match="needs its number of tokens"):
        resolve_run(get_method("text-rag"), None, None, None, equal_budget=True)


def test_the_evaluation_passes_its_params_on_unchanged(sample_ctx: MethodContext,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """B travels on the run request (equal_budget), not inside the caller's params."""
    import kgviz.evaluate.runner as runner
    seen: list[tuple[object, int | None, bool]] = []
    real = runner.run_method

    def spy(name: str, question: str, ctx: MethodContext, params: object = None, **kw: object) -> Run:
        seen.append((params, kw.get("budget_tokens"), bool(kw.get("equal_budget"))))  # type: ignore[arg-type]
        return real(name, question, ctx, params, **kw)  # type: ignore[arg-type]
    monkeypatch.setattr(runner, "run_method", spy)
    items = load_questions(SAMPLE_QUESTIONS, limit=1)
    cap = Capture()
    evaluate(items, ["text-rag", "ket-rag"], sample_ctx, budget_tokens=B, scorer=cap,
             params={"text-rag": {"top_k": 3}})
    assert sorted(seen, key=str) == sorted([({"top_k": 3}, B, True), (None, B, True)], key=str)
    assert {r.method: r.params[BUDGETED[r.method]] for r in cap.runs} == {"text-rag": B, "ket-rag": B}


def test_baselines_join_a_budgeted_run_once() -> None:
    assert with_baselines(["kg-rag"], B) == ["kg-rag", *BASELINES]
    assert with_baselines(["bm25", "kg-rag"], B) == ["bm25", "kg-rag", "dense"]
    assert with_baselines(["kg-rag"], B, baselines=False) == ["kg-rag"]
    assert with_baselines(["kg-rag"], None) == ["kg-rag"]


def test_run_evaluation_reports_baselines_median_tokens_and_gold_in_graph(sample_ctx: MethodContext,
                                                                          tmp_path: Path) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=3)
    out = run_evaluation(items, ["kg-retriever"], sample_ctx, out_dir=tmp_path, budget_tokens=B, n_boot=100,
                         scorer=Capture())
    assert list(out.summary.methods) == ["kg-retriever", "bm25", "dense"]
    for m, s in out.summary.methods.items():
        tokens = [r.context_tokens for r in out.records if r.method == m]
        assert s.median_context_tokens == statistics.median(tokens)
    assert out.summary.gold_in_graph == pytest.approx(2 / 3)  # Capture says s01's gold is not in the graph
    saved = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert saved["settings"]["budget_tokens"] == B and saved["settings"]["equal_budget"] is True
    assert saved["gold_in_graph"] == pytest.approx(2 / 3)
    assert saved["methods"]["bm25"]["median_context_tokens"] == out.summary.methods["bm25"].median_context_tokens
    table = format_table(out.summary)
    assert "Context tokens (median)" in table and f"context budget {B} tokens" in table and "66.7%" in table
    rows = format_equal_budget_table(out.summary).splitlines()
    assert rows[0].split()[:6] == ["method", "n", "of", "N", "failed", "Coverage"]
    assert [r.split()[0] for r in rows[1:]] == ["kg-retriever", "bm25", "dense"]
    assert rows[2].split()[-1] == f"{out.summary.methods['bm25'].median_context_tokens:.0f}"
    # opting out
    no = run_evaluation(items, ["kg-retriever"], sample_ctx, budget_tokens=B, n_boot=100, scorer=Capture(),
                        baselines=False)
    assert list(no.summary.methods) == ["kg-retriever"]


def test_resume_hash_follows_b(sample_ctx: MethodContext, tmp_path: Path) -> None:
    assert params_hash("kg-retriever", {}, "", 300, "offline") != params_hash("kg-retriever", {}, "", 400, "offline")
    items = load_questions(SAMPLE_QUESTIONS, limit=2)
    first = evaluate(items, ["text-rag", "kg-retriever"], sample_ctx, out_dir=tmp_path, budget_tokens=300,
                     scorer=Capture())
    other = evaluate(items, ["text-rag", "kg-retriever"], sample_ctx, out_dir=tmp_path, budget_tokens=400,
                     scorer=Capture())
    assert first.ran == 4 and other.ran == 4 and other.skipped == 0  # another B: nothing reused
    # the key is the one results files were written with when the evaluation put B into the params
    # itself: B on the run request changes no hash, so earlier results are still resumed
    old_key = params_hash("text-rag", params_to_dict(TextRagParams(budget_tokens=300)), "", 300, sample_ctx.reasoner.mode)
    assert old_key in {r.params_hash for r in first.records if r.method == "text-rag"}
    assert {r.params_hash for r in first.records}.isdisjoint(r.params_hash for r in other.records)
    again = evaluate(items, ["text-rag", "kg-retriever"], sample_ctx, out_dir=tmp_path, budget_tokens=300,
                     scorer=Capture())
    assert again.ran == 0 and again.skipped == 4


def test_cli_budget_adds_baselines_and_no_baselines_opts_out(sample_db: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    base = ["eval", str(SAMPLE_QUESTIONS), "--db", str(sample_db), "--methods", "kg-retriever", "--limit", "2",
            "--llm", "offline", "--embedder", "hashing", "--n-boot", "100", "--budget-tokens", str(B), "--json"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    d = json.loads(capsys.readouterr().out)
    assert list(d["methods"]) == ["kg-retriever", "bm25", "dense"]
    assert all(0 < d["methods"][m]["median_context_tokens"] <= B for m in ("bm25", "dense"))
    assert main([*base, "--out", str(tmp_path / "b"), "--no-baselines"]) == 0
    assert list(json.loads(capsys.readouterr().out)["methods"]) == ["kg-retriever"]
