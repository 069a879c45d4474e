"""Recorded replies: an evaluation checks before running which (question, method, budget) runs the
bundled recording (sample_recorded) covers, then stops naming the others or runs only the covered
ones; at each method's own budget (how the sample was recorded) every recorded run is covered."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_paths import SAMPLE_QUESTIONS

import kgviz.run
from kgviz.cli import main
from kgviz.evaluate import load_questions, run_evaluation
from kgviz.evaluate.coverage import NotRecordedError, recorded_methods
from kgviz.methods.base import MethodContext
from kgviz.providers.recorded import RecordedLLM
from kgviz.replay import SAMPLE_RECORDING, open_session
from tests.support.recorded_sample import replayed_sample


@pytest.fixture(scope="module")
def recorded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("rec") / "ws"
    with replayed_sample(db):
        pass  # built, then closed: each test opens the graph in a session of its own (_ctx)
    return db


def _ctx(db: Path) -> MethodContext:
    session = open_session(db, RecordedLLM(SAMPLE_RECORDING))
    return session.method_context()


def test_uncovered_runs_stop_the_evaluation_before_anything_is_saved(recorded_db: Path, tmp_path: Path) -> None:
    items = load_questions(SAMPLE_QUESTIONS, limit=2)
    with pytest.raises(NotRecordedError) as err:
        run_evaluation(items, ["kg-rag", "text-rag"], _ctx(recorded_db), out_dir=tmp_path, budget_tokens=3000,
                       baselines=False, n_boot=50)
    msg = str(err.value)
    # text-rag's equal-budget context changes its answer prompt: not recorded; kg-rag's is
    assert "covers 2 of 4 runs at a context budget of 3000 tokens" in msg
    assert "not recorded: text-rag (every question)" in msg and "kg-rag" not in msg.split("not recorded:")[1]
    assert not (tmp_path / "results.jsonl").exists()


def test_only_covered_runs_are_evaluated_and_none_failed(recorded_db: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = kgviz.run.run_method

    def spy(name: str, *a: object, **kw: object) -> object:
        calls.append(name)
        return real(name, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr("kgviz.evaluate.coverage.run_method", spy)
    monkeypatch.setattr("kgviz.evaluate.runner.run_method", spy)
    items = load_questions(SAMPLE_QUESTIONS, limit=2)
    out = run_evaluation(items, ["kg-rag", "text-rag", "no-retrieval"], _ctx(recorded_db), out_dir=tmp_path,
                         budget_tokens=3000, baselines=False, n_boot=50, not_recorded="skip")
    assert out.coverage is not None and out.coverage.covered == 4 and len(out.coverage.missing) == 2
    assert {m for _q, m in out.coverage.missing} == {"text-rag"}
    assert [(r.qid, r.method) for r in out.records] == [("s01", "kg-rag"), ("s01", "no-retrieval"),
                                                         ("s02", "kg-rag"), ("s02", "no-retrieval")]
    assert not any(r.error for r in out.records) and out.summary.failures.count == 0
    assert list(out.summary.methods) == ["kg-rag", "no-retrieval"]  # text-rag ran nowhere: no row of n/a
    assert "evaluated only the 4 recorded runs" in out.coverage_note()
    assert len(calls) == 6  # each pending run replayed once by the check; covered replays are not redone
    d = out.to_dict()
    assert d["recording_coverage"]["covered"] == 4
    assert {x["method"] for x in d["recording_coverage"]["not_recorded"]} == {"text-rag"}


def test_at_each_methods_own_budget_the_recorded_methods_are_covered(recorded_db: Path, tmp_path: Path) -> None:
    ctx = _ctx(recorded_db)
    methods = recorded_methods(ctx.reasoner.llm)  # type: ignore[arg-type]
    assert set(methods) == {"text-rag", "no-retrieval", "kg-retriever", "ket-rag", "kg-rag", "kg-infused"}
    items = load_questions(SAMPLE_QUESTIONS, limit=2)
    out = run_evaluation(items, methods, ctx, out_dir=tmp_path, budget_tokens=None, n_boot=50)
    assert out.coverage is not None and not out.coverage.missing and out.coverage.covered == 12
    assert out.summary.failures.count == 0 and all(s.n_ok == 2 for s in out.summary.methods.values())


def test_cli_names_what_is_not_recorded_and_runs_only_the_rest(recorded_db: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    base = ["eval", str(SAMPLE_QUESTIONS), "--db", str(recorded_db), "--llm", f"recorded:{SAMPLE_RECORDING}",
            "--embedder", "hashing", "--limit", "2", "--methods", "kg-rag,text-rag", "--budget-tokens", "3000",
            "--no-baselines", "--n-boot", "50", "--out", str(tmp_path)]
    assert main(base) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not recorded: text-rag (every question)" in err[0] and "--only-recorded" in err[0]
    assert main([*base, "--only-recorded"]) == 0
    text = capsys.readouterr().out
    assert "NOT RECORDED:" in text and "evaluated only the 2 recorded runs" in text
    assert "FAILED" not in text and "text-rag" not in text.split("evaluated only")[1]
    assert main([*base, "--only-recorded", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["failures"]["count"] == 0 and list(d["methods"]) == ["kg-rag"]
    assert d["methods"]["kg-rag"]["n_ok"] == 2 and d["reused"] == 2
