"""Which recordings build without the skeleton's LLM descriptions by default (kgviz.replay)."""
from __future__ import annotations

import json
from pathlib import Path

from kgviz.replay import builds_without_descriptions

ROOT = Path(__file__).resolve().parents[1]


def _recording(path: Path, phase: str) -> Path:
    path.write_text(json.dumps({"kgviz_recording": 1, "phase": phase}) + "\n", encoding="utf-8")
    return path


def test_a_recording_with_no_description_phase_builds_without_them(tmp_path: Path) -> None:
    _recording(tmp_path / "extraction.m.jsonl", "extraction")
    assert builds_without_descriptions(f"recorded:{tmp_path}")
    assert builds_without_descriptions(f"recorded:{tmp_path / 'extraction.m.jsonl'}")


def test_a_recording_holding_descriptions_asks_for_them(tmp_path: Path) -> None:
    _recording(tmp_path / "extraction.m.jsonl", "extraction")
    _recording(tmp_path / "describe.m.jsonl", "descriptions")
    assert not builds_without_descriptions(f"recorded:{tmp_path}")


def test_the_bundled_sample_and_live_models() -> None:
    # the sample holds descriptions for every document, and its method runs were recorded with them
    assert not builds_without_descriptions(f"recorded:{ROOT / 'sample_recorded'}")
    assert builds_without_descriptions(f"recorded:{ROOT / 'sample_recorded' / 'grounding'}")
    assert not builds_without_descriptions("offline")
    assert not builds_without_descriptions("openai:gpt-4o-mini")


def test_an_unreadable_file_counts_as_no_descriptions(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    assert builds_without_descriptions(f"recorded:{tmp_path}")
