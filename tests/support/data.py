"""Where the public evaluation data lives (``../shared/data`` beside the checkout, or $KGVIZ_DATA).

Tests that read it skip cleanly when it is absent (a user's machine, a clone elsewhere); point
KGVIZ_DATA at the folder to run them from a clone that does not sit beside ``shared/``.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = Path(os.environ.get("KGVIZ_DATA") or ROOT.parent / "shared" / "data")


def write_kg_files(folder: Path, triples_tsv: str, entities_jsonl: str) -> tuple[Path, Path]:
    """A curated KG in `kgviz import-kg`'s two files (triples.tsv, entities.jsonl) under ``folder``."""
    t, e = folder / "triples.tsv", folder / "entities.jsonl"
    t.write_text(triples_tsv, encoding="utf-8")
    e.write_text(entities_jsonl, encoding="utf-8")
    return t, e
