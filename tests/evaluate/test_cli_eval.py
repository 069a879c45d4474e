"""`kgviz eval` and `kgviz bench --quick` through the CLI entry point."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_paths import SAMPLE_QUESTIONS

from kgviz.cli import main


def _eval(db: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", str(SAMPLE_QUESTIONS), "--db", str(db), "--methods", "text-rag,no-retrieval", "--limit", "3",
            "--out", str(out), "--llm", "offline", "--embedder", "hashing", "--n-boot", "200", *extra]


def test_eval_json_summary_and_resume(sample_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_eval(sample_db, tmp_path, "--json")) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["n_questions"] == 3 and d["ran"] == 6 and d["reused"] == 0
    assert list(d["methods"]) == ["text-rag", "no-retrieval"]
    m = d["methods"]["text-rag"]["metrics"]
    for key in ("em", "f1", "acc", "coverage", "hallucination", "abstention", "tokens", "cost_usd", "latency_s"):
        assert set(m[key]) == {"mean", "lo", "hi", "n", "of"} and m[key]["n"] == m[key]["of"] == 3
        assert m[key]["lo"] <= m[key]["mean"] <= m[key]["hi"]
    comps = d["comparisons"]
    assert {(c["a"], c["b"]) for c in comps} == {("text-rag", "no-retrieval")}
    assert all(0 <= c["p_value"] <= 1 for c in comps)
    assert (tmp_path / "summary.json").exists() and (tmp_path / "results.jsonl").exists()
    # human table, resumed: nothing runs again
    assert main(_eval(sample_db, tmp_path, "--budget-tokens", "4000")) == 0
    out = capsys.readouterr().out
    assert "text-rag" in out and "paired differences" in out and "[" in out


def test_eval_bad_questions_file_exits_2_naming_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"id": "1", "question": "Q?", "answers": ["a"]}\nnot json\n{"id": "2"}\n', encoding="utf-8")
    code = main(["eval", str(bad), "--db", str(tmp_path / "db"), "--llm", "offline", "--embedder", "hashing"])
    err = capsys.readouterr().err
    assert code == 2 and "line 2" in err and "line 3" in err
    assert not (tmp_path / "db").exists()  # rejected before the database was opened


def test_eval_unknown_method_exits_2(sample_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", str(SAMPLE_QUESTIONS), "--db", str(sample_db), "--methods", "text-rag,nope",
                 "--out", str(tmp_path), "--llm", "offline", "--embedder", "hashing"])
    assert code == 2 and "unknown method 'nope'" in capsys.readouterr().err


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_bench_quick_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--quick", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["quick"] is True and isinstance(d["all_met"], bool)
    figures = d["figures"]
    assert set(figures) == {"build", "bulk_vs_rows", "retrieval_latency", "extraction_speedup",
                            "cached_rerun_tokens", "ket_skeleton_ratio", "pyvis_render"}
    for name, f in figures.items():
        assert "met" in f and f["met"] in (True, False, None), name
        if f["met"] is not None:
            assert isinstance(f["target"], str) and f["target"], name
    assert isinstance(figures["build"]["seconds_by_stage"], dict) and figures["build"]["peak_rss_mb"] > 0
    assert figures["bulk_vs_rows"]["ratio_with_embeddings"] > 0
    assert all("p50_ms" in row for row in figures["retrieval_latency"]["methods"].values() if row.get("n"))
    assert figures["extraction_speedup"]["workers"] == 4 and figures["extraction_speedup"]["speedup"] > 0
    assert figures["cached_rerun_tokens"]["first_tokens"] > 0
    assert figures["cached_rerun_tokens"]["second_tokens"] == 0  # exact, not a timing
    ket = figures["ket_skeleton_ratio"]
    if ket["met"] is not None:
        assert set(ket["ratio_by_beta"]) >= {"0.2", "1.0"} and ket["ratio_by_beta"]["1.0"] == 1.0
    assert figures["pyvis_render"]["nodes"] == 500 and figures["pyvis_render"]["seconds_median"] > 0


def test_eval_preset_reaches_every_run_that_has_it(sample_db: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    args = ["eval", str(SAMPLE_QUESTIONS), "--db", str(sample_db), "--methods", "text-rag,kg-retriever", "--limit", "1",
            "--out", str(tmp_path), "--llm", "offline", "--embedder", "hashing", "--n-boot", "50", "--json"]
    assert main([*args, "--preset", "paper"]) == 0
    captured = capsys.readouterr()
    assert "no preset 'paper' for text-rag" in captured.err
    rows = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    by_method = {r["method"]: r for r in rows}
    assert by_method["kg-retriever"]["params"]["lam_mode"] == "absolute"  # the preset's, not the default 'relative'
    assert by_method["text-rag"]["params"] == by_method["text-rag"]["params"] | {"retriever": "hybrid"}
    assert main([*args, "--preset", "kg-retriever=nope"]) == 2
    assert "kg-retriever has no preset 'nope'" in capsys.readouterr().err
