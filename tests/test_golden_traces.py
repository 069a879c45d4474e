"""Issue 11: restructuring keeps behaviour. Every method's offline trace on every sample question
(and on the first HotpotQA questions, where ../shared/data exists) hashes to the saved golden
value. A deliberate behaviour change regenerates them (`python -m tests.support.golden --write`)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import golden


def _compare(runs: dict, path: Path) -> None:
    saved = json.loads(path.read_text())
    now = golden.digests(runs)
    assert set(now) == set(saved), "the set of (method, question) runs changed"
    differ = sorted(k for k in now if now[k] != saved[k])
    assert not differ, (f"{len(differ)} of {len(now)} traces differ from {path.name} (first: {differ[:5]}); "
                        "diff with `python -m tests.support.golden --dump DIR` before and after the change")


def test_sample_traces_equal_the_golden_traces(tmp_path: Path) -> None:
    _compare(golden.sample_runs(tmp_path), golden.SAMPLE_FILE)


@pytest.mark.data
@pytest.mark.skipif(not golden.HOTPOT_DIR.exists(), reason="../shared/data/hotpotqa is absent")
def test_hotpotqa_traces_equal_the_golden_traces(tmp_path: Path) -> None:
    _compare(golden.hotpot_runs(tmp_path), golden.HOTPOT_FILE)
