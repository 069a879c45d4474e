"""Replay qwen2.5-coder-1.5b's extraction of four short real-world paragraphs (the Vltava, Marie
Curie, the Panama Canal, Lake Baikal), recorded live by scripts/record_grounding.py into
sample_recorded/paragraphs/ (issue 23: fresh 1.5B replies on real paragraphs). No model, server or
network: the build reads every chunk, keeps the facts whose names are in the text, leaves out the
one whose year the paragraph does not give, and counts the two lines without an object."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.cli import main
from kgviz.graph.store import GraphStore
from kgviz.providers.recorded import read_file, recording_files

ROOT = Path(__file__).resolve().parents[1]
REC = ROOT / "sample_recorded" / "paragraphs"


def test_the_recording_names_its_model_and_holds_one_reply_per_paragraph() -> None:
    (f,) = recording_files(REC)
    header, rows = read_file(f)
    assert header["model"] == "qwen2.5-coder-1.5b-instruct" and header["phase"] == "extraction"
    assert header["server"] and len(header["kgviz_commit"]) >= 40 and len(rows) == 4
    assert len(list((REC / "docs").glob("*.txt"))) == 4


@pytest.mark.usefixtures("env", "no_network")  # a CLI environment of its own; no socket may connect
def test_fresh_replies_on_real_paragraphs_are_read_and_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "db"
    code = main(["build", str(REC / "docs"), "--db", str(db), "--llm", f"recorded:{REC}", "--embedder", "hashing",
                 "--workers", "1", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["failures"] == [] and report["extracted_chunks"] == 4
    assert not report["not_following_prompt"] and report["ungrounded_chunks"] == 0
    # as recorded: 31 reply lines, 27 facts kept, 2 lines without an object, 1 fact left out
    assert (report["facts_accepted"], report["n_malformed_lines"], report["facts_ungrounded"]) == (27, 2, 1)
    assert report["facts_prompt_examples"] == 0
    ((_, fact, reason),) = report["rejected_facts"]
    assert "1402" in fact and "'1402' is not in the text" in reason  # the paragraph says "early in the fifteenth century"
    store = GraphStore.open(db)
    try:
        texts = {str(r["t"]) for r in store.query("MATCH (t:Triple) RETURN t.text AS t")}
    finally:
        store.close()
    assert len(texts) == 27
    # a qualified fact is kept as the fact plus its qualifier; the year the text gives stays
    assert {"Marie Curie was born in Warsaw", "Marie Curie was born in Warsaw in year 1867",
            "The Vltava flows north through České Budějovice"} <= texts
