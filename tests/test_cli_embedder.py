"""`kgviz build/ask` with the default ``auto`` embedder: the build says what auto became and why,
and the workspace is reopened with exactly that embedder."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.cli import main

DOC = "Ada Lovelace was born in London. Ada Lovelace wrote the first published algorithm in 1843.\n"


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KGVIZ_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "empty-cache"))
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KGVIZ_LLM", "KGVIZ_EMBEDDER", "KGVIZ_DB"):
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ada.txt").write_text(DOC, encoding="utf-8")
    return tmp_path


def test_build_under_auto_names_the_embedder_and_why_it_is_hashing(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = env / "db"
    assert main(["build", str(env / "docs"), "--db", str(db), "--json", "--no-ket"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["embedder"] == "hashing-768"
    assert len(out["notices"]) == 1 and "found no local model" in out["notices"][0]
    assert "note: Using the offline hashing embedder" in captured.err
    # reopened without --embedder: the recorded embedder, no notice
    assert main(["ask", "Where was Ada Lovelace born?", "--db", str(db), "--method", "text-rag", "--json"]) == 0
    captured = capsys.readouterr()
    assert "hashing embedder" not in captured.err
    # another embedder named explicitly: refused with one line naming both
    assert main(["ask", "Where was Ada Lovelace born?", "--db", str(db), "--method", "text-rag",
                 "--embedder", "hashing:64"]) == 2
    err = capsys.readouterr().err
    assert "hashing-768" in err and "hashing-64" in err
