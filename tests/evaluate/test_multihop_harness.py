"""benchmarks/multihop.py on the sample (a folder with corpus.jsonl + questions.jsonl): it builds,
evaluates at one budget with the baselines, prints the must-show table, and a --keep folder is
reused on the next run. Figures are not asserted on, only that they are there and consistent."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from eval_paths import ROOT

HARNESS = ROOT / "benchmarks" / "multihop.py"


def _load():  # noqa: ANN202 - a module loaded by path
    spec = importlib.util.spec_from_file_location("kgviz_multihop_harness", HARNESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_harness_builds_evaluates_and_reuses_its_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    harness = _load()
    args = [str(ROOT / "sample_data"), "--budget-tokens", "400", "--limit", "2", "--methods", "kg-retriever",
            "--keep", str(tmp_path / "ws"), "--n-boot", "100", "--json"]
    assert harness.main(args) == 0
    out, err = capsys.readouterr()
    assert "building" in err
    lines = out.splitlines()
    assert lines[0].startswith("sample_data: 2 questions") and "budget 400 tokens" in lines[0]
    assert lines[1].startswith("gold in graph: ") and "% of questions; build " in lines[1]
    assert lines[2].split()[:6] == ["method", "n", "of", "N", "failed", "Coverage"]
    assert [ln.split()[0] for ln in lines[3:6]] == ["kg-retriever", "bm25", "dense"]
    doc = json.loads(out[out.index("{"):])
    assert doc["budget_tokens"] == 400 and doc["questions"] == 2 and 0.0 <= doc["gold_in_graph"] <= 1.0
    assert doc["gold_in_graph"] == doc["summary"]["gold_in_graph"]
    assert all(0 < doc["summary"]["methods"][m]["median_context_tokens"] <= 400 for m in ("bm25", "dense"))
    built = json.loads((tmp_path / "ws" / harness.BUILD_FILE).read_text(encoding="utf-8"))
    # again: the build is reused (its seconds shown again) and every run is resumed
    assert harness.main(args) == 0
    out, err = capsys.readouterr()
    assert "reusing the build" in err and f"build {built['build_seconds']} s (reused build)" in out
    assert json.loads(out[out.index("{"):])["summary"]["ran"] == 0
