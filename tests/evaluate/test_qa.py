"""QA files: valid files load, bad lines are named."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.errors import EvaluationError
from kgviz.evaluate.qa import load_questions, parse_question_bytes, parse_questions

ROOT = Path(__file__).resolve().parents[2]


def test_sample_questions_load() -> None:
    items = load_questions(ROOT / "sample_data" / "questions.jsonl")
    assert len(items) >= 10
    assert items[0].id == "s01" and items[0].answers == ("1898",)
    assert items[0].extra["type"] == "single"
    assert len(load_questions(ROOT / "sample_data" / "questions.jsonl", limit=3)) == 3


def test_bad_lines_are_named(tmp_path: Path) -> None:
    good = json.dumps({"id": "q1", "question": "Who?", "answers": ["A"]})
    lines = [good, "", "{not json", json.dumps({"id": "q2", "answers": ["B"]}),
             json.dumps({"id": "q3", "question": "Why?", "answers": []}), good, "[1, 2]"]
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(EvaluationError) as info:
        load_questions(path)
    msg = str(info.value)
    assert "5 bad line(s)" in msg
    for n, why in ((3, "invalid JSON"), (4, "question"), (5, "answers"), (6, "duplicate id 'q1'"), (7, "JSON object")):
        assert f"line {n}: " in msg and why in msg, (n, msg)
    assert "line 1:" not in msg and "line 2:" not in msg


def test_missing_empty_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match="not found"):
        load_questions(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n\n", encoding="utf-8")
    with pytest.raises(EvaluationError, match="no questions"):
        load_questions(tmp_path / "empty.jsonl")
    with pytest.raises(EvaluationError, match="UTF-8"):
        parse_question_bytes(b"\xff\xfe\x00bad", "up.jsonl")
    with pytest.raises(EvaluationError, match="--limit"):
        load_questions(ROOT / "sample_data" / "questions.jsonl", limit=0)


def test_string_answer_and_int_id_are_accepted() -> None:
    items = parse_questions('{"id": 7, "question": " Q? ", "answers": "yes"}')
    assert items[0].id == "7" and items[0].question == "Q?" and items[0].answers == ("yes",)
