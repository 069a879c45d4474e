"""benchmarks/scale.py's corpus (issue 29): the shared corpora's distinct passages, then renamed
copies that are distinct documents (their names rewritten), never duplicates the build would skip."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.support.data import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]


def scale_module():
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "benchmarks" / "scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_renamed_rewrites_names_and_leaves_function_words() -> None:
    scale = scale_module()
    text = "The Vey Dam holds back the River Sarn. It was designed by Oskar Linde in 1931."
    assert scale.renamed(text, 0) == text
    assert scale.renamed(text, 1) == ("The Veyvan Damvan holds back the Rivervan Sarnvan. It was designed by "
                                      "Oskarvan Lindevan in 1931.")


@pytest.mark.data
@pytest.mark.skipif(not (SHARED_DATA / "hotpotqa").exists(), reason="../shared/data is absent")
def test_the_corpus_past_the_real_passages_holds_distinct_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    scale = scale_module()
    monkeypatch.setattr(scale, "DATA", SHARED_DATA)
    real = scale.real_passages()
    rows = scale.corpus(len(real) + 500)
    assert len({" ".join(r["text"].split()) for r in rows}) == len(rows)  # no duplicate text
    assert rows[:len(real)] == real and rows[len(real)]["title"] != real[0]["title"]
