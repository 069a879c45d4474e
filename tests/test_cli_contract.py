"""The CLI's contract: exit codes, one JSON object on stdout for every failure with --json, options
and settings checked before anything is created on disk, --estimate without a key, and no raw
control or bidi character ever printed to the terminal."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kgviz import cli
from kgviz.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "corpus"
from tests.support.fake_server import FakeServer, Reply, chat_ok

HOSTILE = "Paris\x1b[2J\x1b]0;pwned\x07 \u202eexe.txt\u202c \x9b31m done"


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, json.loads(out), err  # json.loads fails unless stdout is exactly one JSON document


def assert_json_failure(code: int, doc: Any, err: str, error_type: str, fragment: str, exit_code: int = 2) -> None:
    assert code == exit_code
    assert isinstance(doc, dict) and set(doc) == {"error", "error_type", "exit_code"}
    assert doc["error_type"] == error_type and doc["exit_code"] == exit_code
    assert fragment in doc["error"]
    lines = err.strip().splitlines()
    assert lines[-1] == f"error: {doc['error']}"  # the same one line on stderr


def test_json_failure_of_every_command(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = env / "db"
    bad_qa = env / "qa.jsonl"
    bad_qa.write_text("{not json\n")
    bad_kg = env / "kg.tsv"
    bad_kg.write_text("only-one-column\n")
    cases = [
        (["build", str(env / "missing-folder"), "--db", str(db), "--json"], "BuildError", "no loadable documents"),
        (["build", str(SAMPLE), "--db", str(db), "--json", "--chunk-tokens", "100", "--chunk-overlap", "100"],
         "ConfigError", "chunk_overlap"),
        (["import-kg", str(env / "nope.tsv"), "--db", str(db), "--json"], "UsageError", "no such file"),
        (["ask", "q?", "--db", str(db), "--method", "nope", "--json"], "UnknownMethodError", "unknown method 'nope'"),
        (["ask", "q?", "--db", str(db), "--llm", "anthropic:claude-haiku-4-5", "--json"], "MissingKeyError",
         "ANTHROPIC_API_KEY"),
        (["eval", str(bad_qa), "--db", str(db), "--json"], "EvaluationError", "qa.jsonl"),
        (["eval", str(SAMPLE.parent / "questions.jsonl"), "--db", str(db), "--workers", "0", "--json"], "UsageError",
         "--workers"),
        (["methods", "--json", "--bogus"], "UsageError", "unrecognized arguments: --bogus"),
        (["bench", "--json", "--quick", "extra"], "UsageError", "unrecognized arguments: extra"),
        (["frobnicate", "--json"], "UsageError", "invalid choice"),
    ]
    for argv, error_type, fragment in cases:
        code, doc, err = run_json(capsys, argv)
        assert_json_failure(code, doc, err, error_type, fragment)
    assert not db.exists()  # every failure above happened before the database was created


def test_bad_setting_fails_every_command_with_json(env: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGVIZ_MAX_RETRIES", "-1")
    db = env / "db"
    qa = SAMPLE.parent / "questions.jsonl"
    for argv in (["build", str(SAMPLE), "--db", str(db)], ["ask", "q?", "--db", str(db)],
                 ["eval", str(qa), "--db", str(db)], ["methods"], ["bench", "--quick"],
                 ["import-kg", str(qa), "--db", str(db)]):
        code, doc, err = run_json(capsys, [*argv, "--json"])
        assert_json_failure(code, doc, err, "ConfigError",
                            "KGVIZ_MAX_RETRIES=-1 is out of range: must be a whole number from 0 to 10")
    assert not db.exists() and not (env / "home").exists()


@pytest.mark.parametrize("var, value", [("KGVIZ_TIMEOUT_S", "-5"), ("KGVIZ_WORKERS", "lots"),
                                        ("KGVIZ_HOME", "UNDER_A_FILE")])
def test_bad_setting_is_one_line_and_exit_2(env: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    if value == "UNDER_A_FILE":
        (env / "file").write_text("x")
        value = str(env / "file" / "kgviz")
    monkeypatch.setenv(var, value)
    assert main(["build", str(SAMPLE), "--db", str(env / "db")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith(f"error: {var}=")
    assert not (env / "db").exists()


@pytest.mark.parametrize("argv", [
    ["build", "SAMPLE", "--chunk-tokens", "0"],
    ["build", "SAMPLE", "--beta", "1.5"],
    ["build", "SAMPLE", "--no-ket", "--knn-k", "4"],
    ["build", "SAMPLE", "--workers", "-2"],
    ["ask", "q?", "--budget-tokens", "0"],
    ["ask", "q?", "--method", "kg-rag,nope"],
    ["eval", "QA", "--n-boot", "0"],
    ["eval", "QA", "--methods", "nope"],
    ["import-kg", "SAMPLE"],  # a folder, not a TSV file
])
def test_bad_option_creates_no_directory(env: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    db = env / "new" / "db"
    argv = [str(SAMPLE) if a == "SAMPLE" else str(SAMPLE.parent / "questions.jsonl") if a == "QA" else a
            for a in argv]
    assert main([*argv, "--db", str(db)]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert not (env / "new").exists() and not (env / "home").exists()


def test_db_under_a_file_is_a_usage_error(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (env / "f").write_text("x")
    code, doc, err = run_json(capsys, ["ask", "q?", "--db", str(env / "f" / "db"), "--json"])
    assert_json_failure(code, doc, err, "UsageError", f"--db={env / 'f' / 'db'} is under a file")


@pytest.mark.parametrize("spec, model", [("anthropic:claude-haiku-4-5", "anthropic:claude-haiku-4-5"),
                                         ("openai:gpt-5-mini", "openai:gpt-5-mini")])
def test_estimate_needs_no_key_and_creates_nothing(env: Path, capsys: pytest.CaptureFixture[str],
                                                   spec: str, model: str) -> None:
    db = env / "db"
    assert main(["build", str(SAMPLE), "--db", str(db), "--llm", spec, "--estimate", "--json"]) == 0
    est = json.loads(capsys.readouterr().out)
    assert est["model"] == model and not est["offline"]
    # one extraction call per chunk, plus the KET skeleton's description calls (on by default)
    assert est["chunks"] > 0 and est["calls"] == est["chunks"] + est["descriptions"]["calls"]
    assert est["input_tokens"] > 0 and est["usd"] > 0
    assert not db.exists() and not (env / "home").exists()


def test_unexpected_error_and_interrupt_keep_the_json_contract(env: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(args: Any, settings: Any) -> int:
        raise ValueError("bad\nthing")

    monkeypatch.setattr(cli, "cmd_methods", boom)
    code, doc, err = run_json(capsys, ["methods", "--json"])
    assert_json_failure(code, doc, err, "ValueError", "unexpected ValueError: bad thing", exit_code=1)
    assert "Traceback" in err  # a bug keeps its traceback for the report

    def interrupted(args: Any, settings: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_methods", interrupted)
    code, doc, err = run_json(capsys, ["methods", "--json"])
    assert code == 130 and doc["error_type"] == "Interrupted" and doc["exit_code"] == 130
    assert "re-run to resume" in doc["error"]


def test_ask_escapes_a_models_control_and_bidi_characters(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer() as srv:
        srv.script(Reply(200, chat_ok(HOSTILE)))
        argv = ["ask", "Capital of France?", "--db", str(env / "db"), "--method", "no-retrieval",
                "--llm", f"openai-compatible:m@{srv.url}"]
        assert main(argv) == 0
        out, err = capsys.readouterr()
        for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\u202c"):
            assert raw not in out and raw not in err
        answer_line = next(line for line in out.splitlines() if line.startswith("no-retrieval"))
        assert "Paris\\x1b[2J\\x1b]0;pwned\\x07 \\u202eexe.txt\\u202c \\x9b31m done" in answer_line
        # --json keeps the model's text exactly (as JSON escapes), still with no raw byte on stdout
        assert main([*argv, "--json"]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\u202e" not in out
        assert json.loads(out)[0]["answer"] == HOSTILE


def test_error_messages_are_escaped_too(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "q?", "--db", str(env / "db"), "--method", "evil\x1b]0;title\x07\u202e"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert "evil\\x1b]0;title\\x07\\u202e" in err
