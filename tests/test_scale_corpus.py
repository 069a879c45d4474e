"""benchmarks/scale.py's corpus (issue 29): the shared corpora's distinct passages, then renamed
copies that are distinct documents (their names rewritten), never duplicates the build would skip."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

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


def _hold(mb: int) -> Any:
    """``mb`` MB of resident memory (every page written)."""
    import numpy as np

    return np.ones(mb << 17, dtype=np.float64)


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc/self/clear_refs")
def test_the_build_peak_leaves_out_the_retrieval_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """measure_one reports the build's own peak RSS apart from the process's: the retrieval run
    after the build (here 600 MB held) is in ``peak_rss_mb`` only, and the build's 200 MB is in
    both."""
    import sys
    import types

    scale = scale_module()
    questions = tmp_path / "questions.jsonl"
    questions.write_text('{"question": "Who?"}\n', "utf-8")
    monkeypatch.setattr(scale, "QUESTIONS", questions)
    monkeypatch.setattr(scale, "corpus", lambda n: [{"title": "t", "text": "x"}] * n)
    monkeypatch.setattr(scale, "real_passages", lambda: [{"title": "t", "text": "x"}])
    with open("/proc/self/status", encoding="ascii") as f:
        rss = next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:"))

    class Store:
        def close(self) -> None:
            pass

    from kgviz.index import steps

    marked: list[str] = []
    def fake_mark(store: Any, name: str) -> None:
        marked.append(name)

    monkeypatch.setattr(steps, "mark_build_stage", fake_mark)

    def fake_build(corpus_file: Path, db: Path) -> Any:
        db.mkdir()
        steps.mark_build_stage(None, "extract")  # as the pipeline marks each stage it begins
        held = _hold(200)
        del held
        steps.mark_build_stage(None, "write")
        held = _hold(50)
        del held
        report = types.SimpleNamespace(seconds_by_stage={"chunk": 0.1}, counts={"Document": 1})
        return types.SimpleNamespace(store=Store()), report, 0.1

    def fake_measure(ctx: Any, questions: list[str], methods: list[str]) -> dict[str, Any]:
        held = _hold(600)
        del held
        return {}

    monkeypatch.setattr(scale, "_build", fake_build)
    monkeypatch.setitem(sys.modules, "retrieval_latency", types.SimpleNamespace(measure=fake_measure))
    row = scale.measure_one(3, twin=False, with_eval=False)
    assert rss + 195 <= row["build_peak_rss_mb"] < rss + 400  # the build's 200 MB on what the process held
    # per stage, each from its own start: the write stage's 50 MB, not the extract stage's 200
    peaks = row["stage_peak_rss_mb"]
    assert list(peaks) == ["extract", "write"] and marked == ["extract", "write"]  # the workspace still told
    assert steps.mark_build_stage is fake_mark  # put back as the build returned
    assert rss + 195 <= peaks["extract"] < rss + 400
    assert rss + 45 <= peaks["write"] < rss + 150
    assert row["peak_rss_mb"] >= rss + 595  # the retrieval's 600 MB, after the build
