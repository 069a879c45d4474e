"""The sample corpus is the first thing every user sees, so its gold answers must be checkable:
each answer is stated in the text, each question really needs the hops it claims, and the jsonl
copy never drifts from the hand-written files."""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
CORPUS_DIR = SAMPLE / "corpus"
QUESTION_KEYS = {"id", "question", "answers", "type", "hops", "supporting_titles"}


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def parse_file(path: Path) -> tuple[str, str]:
    """Title and text as a reader sees them, written independently of make_jsonl.py."""
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        lines = raw.strip().splitlines()
        assert lines[0].startswith("# "), f"{path.name} must start with '# Title'"
        return lines[0][2:].strip(), "\n".join(lines[1:]).strip()
    return " ".join(w.capitalize() for w in path.stem.split("_")), raw.strip()


@pytest.fixture(scope="module")
def files() -> dict[str, tuple[str, str]]:
    """title -> (id, text) from the .md/.txt files."""
    out: dict[str, tuple[str, str]] = {}
    for p in sorted(CORPUS_DIR.iterdir()):
        title, text = parse_file(p)
        out[title] = (p.stem, text)
    return out


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return load_jsonl(SAMPLE / "questions.jsonl")


def make_jsonl_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sample_make_jsonl", SAMPLE / "make_jsonl.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_corpus_files_shape(files: dict[str, tuple[str, str]]) -> None:
    paths = sorted(CORPUS_DIR.iterdir())
    assert len(paths) == 15
    assert {p.suffix for p in paths} == {".md", ".txt"}
    assert sum(p.suffix == ".txt" for p in paths) >= 2
    for title, (doc_id, text) in files.items():
        n_words = len(text.split())
        assert 120 <= n_words <= 250, f"{doc_id}: {n_words} words"


def test_jsonl_matches_files(files: dict[str, tuple[str, str]]) -> None:
    records = load_jsonl(SAMPLE / "corpus.jsonl")
    assert [set(r) for r in records] == [{"id", "title", "text"}] * len(records)
    assert {r["title"]: (r["id"], r["text"]) for r in records} == files
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids))


def test_jsonl_is_what_the_script_writes() -> None:
    mod = make_jsonl_module()
    expected = mod.render(mod.build_records(CORPUS_DIR))
    assert (SAMPLE / "corpus.jsonl").read_text(encoding="utf-8") == expected


def test_question_schema(questions: list[dict], files: dict[str, tuple[str, str]]) -> None:
    assert len(questions) == 14
    ids = [q["id"] for q in questions]
    assert len(ids) == len(set(ids))
    for q in questions:
        assert set(q) == QUESTION_KEYS, q["id"]
        assert q["answers"] and all(isinstance(a, str) and a.strip() for a in q["answers"])
        assert q["type"] in {"bridge", "comparison", "single"}
        assert q["hops"] in {1, 2, 3}
        assert len(set(q["supporting_titles"])) == len(q["supporting_titles"])
        for title in q["supporting_titles"]:
            assert title in files, f"{q['id']}: unknown supporting title {title!r}"
        if q["type"] == "comparison":
            assert q["hops"] == 2 and len(q["supporting_titles"]) == 2
        else:
            # bridge/single: one supporting document per hop, listed in hop order
            assert len(q["supporting_titles"]) == q["hops"], q["id"]
        assert (q["type"] == "single") == (q["hops"] == 1), q["id"]


def test_question_mix(questions: list[dict]) -> None:
    by_type = [q["type"] for q in questions]
    assert sum(q["hops"] >= 2 for q in questions) >= 10
    assert sum(q["hops"] == 3 for q in questions) >= 3
    assert 2 <= by_type.count("comparison") <= 3
    assert by_type.count("single") == 2


def test_answers_stated_in_corpus(questions: list[dict], files: dict[str, tuple[str, str]]) -> None:
    corpus = norm(" ".join(text for _, text in files.values()))
    for q in questions:
        for answer in q["answers"]:
            assert norm(answer) in corpus, f"{q['id']}: {answer!r} not in corpus"


def test_answers_live_in_the_supporting_documents(
    questions: list[dict], files: dict[str, tuple[str, str]]
) -> None:
    for q in questions:
        support = [norm(files[t][1]) for t in q["supporting_titles"]]
        answers = [norm(a) for a in q["answers"]]
        if q["type"] == "comparison":
            # both candidates are named in the question; the facts sit in the two documents
            assert all(a in norm(q["question"]) for a in answers), q["id"]
            continue
        assert not any(a in norm(q["question"]) for a in answers), f"{q['id']}: gives answer away"
        # the first answer is the canonical one; later entries may be aliases stated elsewhere
        assert answers[0] in support[-1], f"{q['id']}: answer not in the last-hop document"
        # the answer must not be readable from an earlier hop, or the question is not multi-hop
        for title, text in zip(q["supporting_titles"][:-1], support[:-1]):
            assert not any(a in text for a in answers), f"{q['id']}: answer already in {title!r}"
