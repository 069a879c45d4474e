"""kgviz.provenance: what changed between a result's settings and the current ones, and the
names of exported files."""
from __future__ import annotations

import calendar
from pathlib import Path

from kgviz.provenance import Provenance, changes, describe, export_name, slug

WHEN = calendar.timegm((2026, 11, 25, 18, 42, 7, 0, 0, 0))


def test_the_same_settings_are_current_whatever_the_time_and_path_spelling(tmp_path: Path) -> None:
    made = Provenance.of(tmp_path / "ws", "offline", "hashing-768", WHEN)
    now = Provenance.of(tmp_path / "x" / ".." / "ws", "offline", "hashing-768", WHEN + 3600)
    assert changes(made, now) == []


def test_each_changed_setting_is_named(tmp_path: Path) -> None:
    made = Provenance.of(tmp_path / "sample-recorded", "recorded:/some/where/sample_recorded", "hashing-768")
    now = Provenance.of(tmp_path / "default", "offline", "fastembed:sentence-transformers/all-MiniLM-L6-v2")
    assert changes(made, now) == [
        "workspace sample-recorded → default",
        "LLM recorded:sample_recorded → offline",
        "embedder hashing-768 → fastembed:sentence-transformers/all-MiniLM-L6-v2",
    ]


def test_describe_names_workspace_model_embedder_and_time(tmp_path: Path) -> None:
    p = Provenance.of(tmp_path / "lecture-3", "anthropic:claude-x", "hashing-768", WHEN)
    assert describe(p) == "workspace lecture-3 · LLM anthropic:claude-x · embedder hashing-768 · made 18:42:07 UTC"
    assert describe(Provenance.of(tmp_path / "w", "offline", "hashing-768")).endswith("embedder hashing-768")


def test_export_names_carry_the_question_and_the_time() -> None:
    q = "In which town was the founder of the Ossel Marine Institute born?"
    html = export_name("case", q, WHEN, "html")
    assert html == "kgviz_case_in-which-town-was-the-founder-of-the-ossel_20261125-184207.html"
    other = export_name("case", "In what year was the Tidewell Line founded?", WHEN, "html")
    later = export_name("case", q, WHEN + 1, "html")
    assert len({html, other, later}) == 3  # a second case (or a later run) never overwrites the first
    assert export_name("comparison", q, WHEN, ".json").endswith("_20261125-184207.json")
    assert export_name("case", q, None, "html").endswith("_undated.html")


def test_slug_is_a_safe_file_name_part() -> None:
    assert slug("Where's Zoë's café? ../../etc/passwd") == "where-s-zoe-s-cafe-etc-passwd"
    assert slug("東京はどこ？") == "question"
    assert slug("x" * 100) == "x" * 48
    assert len(slug("word " * 40)) <= 48
