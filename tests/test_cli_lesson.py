"""`kgviz lesson`: one self-contained HTML file of one or two methods on a question (offline)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "corpus"
QUESTION = "In what year was the Tidewell Line founded?"


@pytest.fixture(scope="module")
def built_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("lesson") / "db"
    assert main(["build", str(SAMPLE), "--db", str(db), "--json"]) == 0
    return db


def test_lesson_writes_one_offline_page_of_two_methods(built_db: Path, env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = env / "lesson.html"
    capsys.readouterr()
    assert main(["lesson", QUESTION, "--method", "kg-rag", "--method", "ket-rag", "--db", str(built_db),
                 "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["methods"] == ["kg-rag", "ket-rag"] and report["steps"]["kg-rag"] > 3 and not report["errors"]
    page = out.read_text(encoding="utf-8")
    assert 'id="kp-data-2"' in page and "vis.Network" in page  # vis-network inlined
    assert "src=\"http" not in page and "href=\"http" not in page


@pytest.mark.parametrize("args", [
    ["--method", "kg-rag", "--method", "ket-rag", "--method", "text-rag"],  # three
    ["--method", "no-such-method"],
])
def test_lesson_refuses_bad_method_lists(built_db: Path, env: Path, args: list[str]) -> None:
    out = env / "x.html"
    assert main(["lesson", QUESTION, *args, "--db", str(built_db), "-o", str(out)]) == 2
    assert not out.exists()


def test_lesson_into_a_missing_folder_is_a_clear_error(built_db: Path, env: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lesson", QUESTION, "--method", "kg-rag", "--db", str(built_db),
                 "-o", str(env / "nope" / "x.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
