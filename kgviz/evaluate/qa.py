"""QA files: one JSON object per line with ``id``, ``question`` and ``answers`` (a list of gold
strings), as in ../shared/data/*/questions.jsonl and sample_data/questions.jsonl. Other keys
(type, hops, supporting_titles, ...) are kept in ``extra``.

A file with bad lines is rejected as a whole, naming every bad line (up to a limit), so a typo on
line 812 is found before an evaluation has spent anything.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgviz.errors import EvaluationError

MAX_REPORTED = 20  # bad lines named in the error message


@dataclass(frozen=True)
class QAItem:
    id: str
    question: str
    answers: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "question": self.question, "answers": list(self.answers), **self.extra}


def _check(obj: Any) -> tuple[QAItem | None, str]:
    if not isinstance(obj, dict):
        return None, f"expected a JSON object, got {type(obj).__name__}"
    qid, question, answers = obj.get("id"), obj.get("question"), obj.get("answers")
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    if not isinstance(qid, str) or not qid.strip():
        return None, "missing or empty \"id\" (a string)"
    if not isinstance(question, str) or not question.strip():
        return None, "missing or empty \"question\" (a string)"
    if isinstance(answers, str):
        answers = [answers]
    if (not isinstance(answers, list) or not answers
            or not all(isinstance(a, str) and a.strip() for a in answers)):
        return None, "\"answers\" must be a non-empty list of non-empty strings"
    extra = {k: v for k, v in obj.items() if k not in ("id", "question", "answers")}
    return QAItem(qid.strip(), question.strip(), tuple(a.strip() for a in answers), extra), ""


def parse_questions(text: str, source: str = "questions") -> list[QAItem]:
    """Every QA item in ``text`` (JSONL). Blank lines are skipped. Raises EvaluationError naming
    the bad lines (invalid JSON, missing keys, duplicate ids) when there is any."""
    items: list[QAItem] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {n}: invalid JSON ({exc.msg})")
            continue
        item, why = _check(obj)
        if item is None:
            problems.append(f"line {n}: {why}")
        elif item.id in seen:
            problems.append(f"line {n}: duplicate id {item.id!r} (first on line {seen[item.id]})")
        else:
            seen[item.id] = n
            items.append(item)
    if problems:
        shown = "; ".join(problems[:MAX_REPORTED])
        more = f"; and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
        raise EvaluationError(f"{source}: {len(problems)} bad line(s): {shown}{more}",
                              hint='each line must be a JSON object like {"id": "q1", "question": "...", '
                                   '"answers": ["..."]}')
    if not items:
        raise EvaluationError(f"{source}: no questions found", hint="the file is empty or has only blank lines")
    return items


def load_questions(path: str | Path, limit: int | None = None) -> list[QAItem]:
    """The QA items of a .jsonl file, the first ``limit`` of them when given."""
    p = Path(path)
    if not p.is_file():
        raise EvaluationError(f"QA file not found: {p}", hint="give the path of a questions.jsonl file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise EvaluationError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    items = parse_questions(text, source=str(p))
    if limit is not None:
        if limit < 1:
            raise EvaluationError(f"--limit must be at least 1 (got {limit})")
        items = items[:limit]
    return items


def parse_question_bytes(data: bytes, name: str) -> list[QAItem]:
    """An uploaded QA file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EvaluationError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    return parse_questions(text, source=name)
