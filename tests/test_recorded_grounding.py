"""Replay a real 0.5B model's extraction of four sample documents (issue 23: the model returned
the extraction prompt's few-shot examples as facts), recorded by scripts/record_grounding.py into
sample_recorded/grounding/. No model, server or network: `kgviz build --llm recorded:...` must
store none of the examples, count them, and exit 3 saying the model is not following the prompt."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kgviz.cli import EXIT_BUILT_WITH_FAILURES, main
from kgviz.graph.store import GraphStore
from kgviz.providers.recorded import read_file, recording_files

ROOT = Path(__file__).resolve().parents[1]
REC = ROOT / "sample_recorded" / "grounding"
FOUR = ("agnes_vohl.md", "aster_wren.md", "edda_lunn.txt", "kellhaven.md")
EXAMPLE_NAMES = ("ana pell", "vey dam", "halberg", "salt road", "teo brandt", "mara quill", "norrland", "dorrow")


def test_the_recording_names_its_model_and_holds_four_replies() -> None:
    (f,) = recording_files(REC)
    header, rows = read_file(f)
    assert header["model"] == "qwen2.5-coder-0.5b-instruct" and header["phase"] == "extraction"
    assert header["server"] and len(header["kgviz_commit"]) >= 40 and len(rows) == 4
    assert all("Ana Pell" in r["text"] for r in rows)  # every reply copies the prompt's first example


@pytest.mark.usefixtures("env", "no_network")  # a CLI environment of its own; no socket may connect
def test_a_real_model_copying_the_prompt_stores_no_example_and_exits_3(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in FOUR:
        shutil.copy(ROOT / "sample_data" / "corpus" / name, docs / name)
    db = tmp_path / "db"
    code = main(["build", str(docs), "--db", str(db), "--llm", f"recorded:{REC}", "--embedder", "hashing",
                 "--workers", "1", "--json"])
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert code == EXIT_BUILT_WITH_FAILURES and report["failures"] == []
    assert report["extracted_chunks"] == 4 and report["not_following_prompt"] and report["ungrounded_chunks"] == 4
    # as recorded: 78 facts left out, 77 of them the prompt's examples, 4 kept from the text
    assert (report["facts_ungrounded"], report["facts_prompt_examples"], report["facts_accepted"]) == (78, 77, 4)
    assert "the model is not following the prompt" in out.err
    store = GraphStore.open(db)
    try:
        texts = [str(r["t"]).lower() for r in store.query("MATCH (t:Triple) RETURN t.text AS t")]
    finally:
        store.close()
    assert len(texts) == 4 and not [t for t in texts if any(n in t for n in EXAMPLE_NAMES)]
