"""scripts/record_real_model.py prune / report on a small synthetic recording (a scripted fake LLM
stands in for the real model): a run made stale by a changed question, or whose recorded answer
no longer matches, is dropped with its reason; good runs are kept; runs.jsonl, build.json and the
README's run figures follow."""
from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any, Sequence

import pytest
from tests.support.index_fakes import chunk_text_of, offline_reply

from kgviz.prompts.extraction import EXTRACT_TRIPLES_SYSTEM
from kgviz.prompts.verify import JUDGE_CLAIM_SCHEMA, SPLIT_CLAIMS_SCHEMA
from kgviz.replay import SAMPLE_QUESTIONS, missing_runs
from kgviz.text import count_tokens
from kgviz.types import Completion, Message, Usage

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("text-rag", "kg-retriever")
pytestmark = pytest.mark.slow  # records and replays the sample build four times (~1 min)


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("record_real_model", ROOT / "scripts" / "record_real_model.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TaskFake:
    """Answers each task the way a (dull) model would: offline triples, a fixed answer, a judge
    that finds nothing. Stands in for the live model while recording."""

    provider, model, base_url = "openai-compatible", "fake-model", "http://127.0.0.1:1/v1"
    is_offline = False

    def complete(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
                 json_schema: dict[str, Any] | None = None) -> Completion:
        prompt = messages[-1].content
        if system == EXTRACT_TRIPLES_SYSTEM:
            text = offline_reply(chunk_text_of(prompt))
        elif json_schema == JUDGE_CLAIM_SCHEMA:
            text = json.dumps({"verdict": "not_found", "evidence": [], "reason": "not in the passages"})
        elif json_schema == SPLIT_CLAIMS_SCHEMA:
            text = json.dumps({"claims": ["The answer is 1898."]})
        else:
            text = "Answer: 1898"
        usage = Usage(count_tokens(prompt), count_tokens(text), 1, latency_s=0.5)
        return Completion(text, usage, self.model, self.provider, latency_s=0.5)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recording of the sample's extraction and two methods on s01 and s02, made once."""
    script = load_script()
    folder = tmp_path_factory.mktemp("rec")
    questions = folder / "questions.jsonl"
    questions.write_text("".join(SAMPLE_QUESTIONS.read_text(encoding="utf-8").splitlines(keepends=True)[:2]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(script, "live", lambda spec: TaskFake())
        base = {"llm": "fake", "out": folder, "server": "scripted fake"}
        assert script.cmd_extract(argparse.Namespace(**base, workers=1)) == 0
        assert script.cmd_methods(argparse.Namespace(**base, methods=",".join(METHODS), questions=questions,
                                                     ids="", part="")) == 0
    return folder


def copy_of(recorded: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "rec"
    folder.mkdir()
    for f in recorded.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    rows = runs(folder)
    from kgviz.evaluate.qa import load_questions
    from kgviz.replay import runs_table

    table = runs_table(rows, load_questions(folder / "questions.jsonl"), METHODS)
    (folder / "README.md").write_text(f"# Rec\n\n- {len(rows)} runs over 2 questions, fine.\n\n{table}\n\nAfter.\n")
    return folder


def runs(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in (folder / "runs.jsonl").read_text(encoding="utf-8").splitlines() if ln.strip()]


def prune(folder: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[dict[str, Any], str]:
    assert load_script().main(["prune", "--out", str(folder), "--questions", str(folder / "questions.jsonl"), *extra]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_a_run_of_a_changed_question_is_dropped_and_the_figures_follow(
        recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = copy_of(recorded, tmp_path)
    assert [(r["id"], r["method"]) for r in runs(folder)] == [(q, m) for q in ("s01", "s02") for m in METHODS]
    qfile = folder / "questions.jsonl"
    lines = qfile.read_text().splitlines()
    s02 = json.loads(lines[1])
    lines[1] = json.dumps({**s02, "question": "How tall is the tower of Skellan Point lighthouse today?"})
    qfile.write_text("\n".join(lines) + "\n")
    build_before = json.loads((folder / "build.json").read_text())

    out, err = prune(folder, capsys)
    assert out["kept"] == 2 and out["dropped"] == 2 and out["written"] is True
    assert "drop s02 text-rag: the question changed" in err and "drop s02 kg-retriever: the question changed" in err
    assert [(r["id"], r["method"]) for r in runs(folder)] == [("s01", m) for m in METHODS]
    build = json.loads((folder / "build.json").read_text())
    assert build["recorded_runs"]["runs"] == 2 and build["recorded_runs"]["questions"] == 1
    assert {k: v for k, v in build.items() if k != "recorded_runs"} == build_before  # the build figures stay
    readme = (folder / "README.md").read_text()
    assert "- 2 runs over 1 questions, fine." in readme and "| s01 (1898) |" in readme and "| s02" not in readme
    assert readme.endswith("\n\nAfter.\n")
    assert out["missing_runs"] == [f"s01 {m}" for m in ("no-retrieval", "ket-rag", "kg-rag", "kg-infused")] + \
        [f"s02 {m}" for m in ("text-rag", "no-retrieval", "kg-retriever", "ket-rag", "kg-rag", "kg-infused")]
    assert not list(folder.glob(".*prune-tmp"))  # written through temp files, none left behind

    again, err = prune(folder, capsys)  # nothing stale left: nothing written
    assert again["dropped"] == 0 and again["written"] is False and again["kept"] == 2 and "drop" not in err


def test_a_run_whose_recorded_answer_differs_is_dropped_the_rest_kept(
        recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = copy_of(recorded, tmp_path)
    rows = runs(folder)
    rows[0]["answer"] = "an answer this code would not give"
    (folder / "runs.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    out, err = prune(folder, capsys, "--dry-run")
    assert out["dropped"] == 1 and out["kept"] == 3 and out["written"] is False
    assert f"drop s01 {METHODS[0]}: answer differ" in err
    assert runs(folder) == rows  # a dry run writes nothing
    out, _ = prune(folder, capsys)
    assert [(r["id"], r["method"]) for r in runs(folder)] == [(r["id"], r["method"]) for r in rows[1:]]


def test_missing_runs_lists_every_unrecorded_pair_in_question_order() -> None:
    rows = [{"id": "s01", "method": "text-rag"}, {"id": "s02", "method": "kg-rag"}]
    assert missing_runs(rows, ["s01", "s02"], ("text-rag", "kg-rag")) == ["s01 kg-rag", "s02 text-rag"]
