"""The batch runner: records, resume after an interruption, truncated lines, params hashing."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from eval_paths import SAMPLE_QUESTIONS

from kgviz.errors import EvaluationError, UnknownMethodError
from kgviz.evaluate import evaluate, load_questions, read_results, run_evaluation, summarise
from kgviz.evaluate.runner import RESULTS_FILE, SUMMARY_FILE
from kgviz.methods.base import MethodContext

METHODS = ["text-rag", "kg-retriever"]


class Interrupt(Exception):
    pass


def _quality(summary_dict: dict) -> dict:
    """Everything in a summary except wall-clock latency (differs run to run)."""
    out = {}
    for m, s in summary_dict["methods"].items():
        out[m] = {k: v for k, v in s["metrics"].items() if k != "latency_s"}
    comps = [c for c in summary_dict["comparisons"]]
    return {"methods": out, "comparisons": comps}


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_records_have_metrics_verdict_funnel_and_usage(sample_ctx: MethodContext, tmp_path: Path) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=4)
    seen: list[int] = []
    res = evaluate(items, [*METHODS, "no-retrieval"], sample_ctx, out_dir=tmp_path, workers=2,
                   progress=lambda ev: seen.append(ev.done))
    assert res.ran == 12 and res.skipped == 0 and len(res.records) == 12
    assert seen[0] == 0 and seen[-1] == 12 and seen == sorted(seen)
    assert [(r.qid, r.method) for r in res.records] == [(i.id, m) for i in items for m in [*METHODS, "no-retrieval"]]
    first = res.records[0]
    assert set(first.metrics) == {"em", "f1", "acc", "coverage"}
    assert first.verdict["judge"] and "labels" in first.verdict
    assert first.funnel["label"] and first.funnel["in_corpus"] in (True, False)
    assert first.latency_s > 0 and first.mode == "offline" and first.context_tokens > 0
    nr = [r for r in res.records if r.method == "no-retrieval"]
    assert all(r.abstained and not r.hallucinated and r.metrics["coverage"] == 0 for r in nr)
    # the text baseline finds s01's answer ("1898") in the sample corpus
    assert any(r.metrics["acc"] == 1.0 for r in res.records if r.method == "text-rag")
    assert len(_lines(tmp_path / RESULTS_FILE)) == 12


def test_interrupted_run_resumes_without_duplicates(sample_ctx: MethodContext, tmp_path: Path) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=6)
    out = tmp_path / "resumed"
    k = 5

    def stop_after_k(ev) -> None:  # noqa: ANN001
        if ev.done - ev.skipped >= k:
            raise Interrupt

    with pytest.raises(Interrupt):
        evaluate(items, METHODS, sample_ctx, out_dir=out, workers=2, progress=stop_after_k)
    assert len(_lines(out / RESULTS_FILE)) == k
    again = run_evaluation(items, METHODS, sample_ctx, out_dir=out, workers=2, n_boot=300)
    assert again.skipped == k and again.ran == 12 - k
    keys = [(d["qid"], d["method"], d["params_hash"]) for d in _lines(out / RESULTS_FILE)]
    assert len(keys) == len(set(keys)) == 12
    fresh = run_evaluation(items, METHODS, sample_ctx, out_dir=tmp_path / "fresh", workers=1, n_boot=300)
    assert _quality(again.to_dict()) == _quality(fresh.to_dict())
    saved = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert saved["n_questions"] == 6 and set(saved["methods"]) == set(METHODS)
    # a third run does nothing new
    third = evaluate(items, METHODS, sample_ctx, out_dir=out)
    assert third.ran == 0 and third.skipped == 12


def test_truncated_last_line_is_cut_and_rerun(sample_ctx: MethodContext, tmp_path: Path) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=2)
    evaluate(items, ["text-rag"], sample_ctx, out_dir=tmp_path)
    path = tmp_path / RESULTS_FILE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text(lines[0] + lines[1][: len(lines[1]) // 2], encoding="utf-8")  # killed mid-write
    assert len(read_results(path)) == 1
    res = evaluate(items, ["text-rag"], sample_ctx, out_dir=tmp_path)
    assert res.ran == 1 and res.skipped == 1
    data = _lines(path)  # every line parses again
    assert [d["qid"] for d in data] == [items[0].id, items[1].id]


def test_damaged_middle_line_is_an_error(sample_ctx: MethodContext, tmp_path: Path) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=2)
    evaluate(items, ["text-rag"], sample_ctx, out_dir=tmp_path)
    path = tmp_path / RESULTS_FILE
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("garbage\n" + "\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(EvaluationError, match="line 1"):
        evaluate(items, ["text-rag"], sample_ctx, out_dir=tmp_path)


def test_changed_budget_or_params_run_again(sample_ctx: MethodContext, tmp_path: Path) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=2)
    a = evaluate(items, ["text-rag"], sample_ctx, out_dir=tmp_path)
    b = evaluate(items, ["text-rag"], sample_ctx, out_dir=tmp_path, budget_tokens=64)
    assert b.ran == 2 and b.skipped == 0
    assert a.records[0].params_hash != b.records[0].params_hash
    assert all(r.budget_tokens == 64 for r in b.records)
    c = evaluate(items, ["text-rag"], sample_ctx, out_dir=tmp_path, params={"text-rag": {"top_k": 2}})
    assert c.ran == 2 and c.records[0].params["top_k"] == 2
    assert len(_lines(tmp_path / RESULTS_FILE)) == 6


def test_bad_input_fails_before_anything_runs(sample_ctx: MethodContext, tmp_path: Path) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=2)
    with pytest.raises(UnknownMethodError):
        evaluate(items, ["text-rag", "no-such-method"], sample_ctx, out_dir=tmp_path)
    assert not (tmp_path / RESULTS_FILE).exists()
    with pytest.raises(EvaluationError):
        evaluate(items, [], sample_ctx)
    with pytest.raises(EvaluationError):
        evaluate([], ["text-rag"], sample_ctx)
    with pytest.raises(EvaluationError, match="share an id"):
        evaluate([items[0], items[0]], ["text-rag"], sample_ctx, out_dir=tmp_path)
    with pytest.raises(EvaluationError, match="twice"):
        evaluate(items, ["text-rag", "text-rag"], sample_ctx, out_dir=tmp_path)
    assert not (tmp_path / RESULTS_FILE).exists()


def test_cancel_keeps_finished_results(sample_ctx: MethodContext, tmp_path: Path) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=6)
    cancel = threading.Event()

    def cancel_at_3(ev) -> None:  # noqa: ANN001
        if ev.done >= 3:
            cancel.set()

    with pytest.raises(EvaluationError, match="cancelled"):
        evaluate(items, METHODS, sample_ctx, out_dir=tmp_path, workers=1, progress=cancel_at_3, cancel=cancel)
    n = len(_lines(tmp_path / RESULTS_FILE))
    assert 3 <= n < 12
    assert evaluate(items, METHODS, sample_ctx, out_dir=tmp_path).skipped == n


def test_summary_pairs_methods_on_common_questions(sample_ctx: MethodContext) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=5)
    res = evaluate(items, ["text-rag", "no-retrieval"], sample_ctx)  # no out_dir: in memory only
    assert res.results_path is None
    summary = summarise(res.records, ["text-rag", "no-retrieval"], n_boot=200)
    d = summary.to_dict()
    assert d["methods"]["no-retrieval"]["metrics"]["abstention"]["mean"] == 1.0
    comp = summary.comparison("coverage", "text-rag", "no-retrieval")
    assert comp is not None and comp.n == 5 and comp.mean_diff > 0
    assert {c["metric"] for c in d["comparisons"]} == {"em", "f1", "acc", "coverage", "hallucination"}


def test_failed_runs_are_retried_not_duplicated(sample_ctx: MethodContext, tmp_path: Path) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=3)
    evaluate(items, ["text-rag"], sample_ctx, out_dir=tmp_path)
    path = tmp_path / RESULTS_FILE
    data = _lines(path)
    data[1]["error"] = "ProviderError: the provider was down"  # as if the second run had failed
    path.write_text("".join(json.dumps(d) + "\n" for d in data), encoding="utf-8")
    kept = evaluate(items, ["text-rag"], sample_ctx, out_dir=tmp_path, retry_failed=False)
    assert kept.ran == 0 and kept.records[1].error
    again = evaluate(items, ["text-rag"], sample_ctx, out_dir=tmp_path)
    assert again.ran == 1 and again.skipped == 2 and not again.records[1].error
    rows = _lines(path)
    assert sorted(d["qid"] for d in rows) == sorted(i.id for i in items) and not any(d["error"] for d in rows)
