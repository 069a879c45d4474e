"""`kgviz build` against a loopback OpenAI-compatible server whose model does not follow the prompt
(issue 23): facts that copy the prompt's examples are not stored, the output counts them per chunk
and in total, and the build exits 3 saying the model is not following the prompt."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_server import FakeServer, Recorded, Reply, chat_ok
from kgviz.cli import EXIT_BUILT_WITH_FAILURES, main
from kgviz.offline.extract import extract_offline
from kgviz.prompts.extraction import EXTRACT_TRIPLES_EXAMPLES

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "corpus"
FOUR = ("agnes_vohl.md", "aster_wren.md", "edda_lunn.txt", "kellhaven.md")
EXAMPLES_REPLY = "\n".join(ln for ln in EXTRACT_TRIPLES_EXAMPLES.splitlines() if ln.startswith("("))


def chunk_text(rec: Recorded) -> str:
    return rec.json["messages"][-1]["content"].rsplit("Text: ", 1)[1].rsplit("\nTriples:", 1)[0]


@pytest.fixture()
def docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KGVIZ_LLM", "KGVIZ_EMBEDDER", "KGVIZ_DB",
                "KGVIZ_TIMEOUT_S", "OPENAI_BASE_URL", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KGVIZ_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KGVIZ_MAX_RETRIES", "0")
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in FOUR:
        shutil.copy(SAMPLE / name, folder / name)
    return folder


def build(docs: Path, srv: FakeServer, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, Any, str]:
    code = main(["build", str(docs), "--db", str(docs.parent / "db"), "--no-ket", "--workers", "1",
                 "--llm", f"openai-compatible:qwen@{srv.url}/v1", *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_prompt_example_replies_store_nothing_and_exit_3(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer() as srv:
        srv.responder = lambda rec: Reply(200, chat_ok(EXAMPLES_REPLY))
        code, out, err = build(docs, srv, capsys, "--json")
        report = json.loads(out)
        chunks = len(srv.requests)
    assert code == EXIT_BUILT_WITH_FAILURES and report["failures"] == []
    assert report["counts"]["Triple"] == 0 and report["facts_accepted"] == 0
    assert report["facts_prompt_examples"] == report["facts_ungrounded"] == 26 * chunks
    assert report["extracted_chunks"] == chunks and report["failed_chunks"] == 0
    assert report["not_following_prompt"] and report["ungrounded_chunks"] == chunks
    assert len(report["chunk_facts"]) == chunks
    assert "the model is not following the prompt" in err and f"in {chunks} of {chunks} chunks" in err


def test_text_output_shows_facts_per_chunk_and_in_total(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def reply(rec: Recorded) -> Reply:
        text = chunk_text(rec)
        facts = "\n".join(t.render() for t in extract_offline(text).triples)
        if "Aster Wren" in text:
            facts += "\n(Ana Pell; founded; Pell Glassworks)\n(broken; line)"
        return Reply(200, chat_ok(facts))

    with FakeServer() as srv:
        srv.responder = reply
        code, out, err = build(docs, srv, capsys)
    assert code == 0 and "not following" not in err
    total = next(ln for ln in out.splitlines() if ln.startswith("facts: "))
    assert "1 rejected as not in the chunk's text (1 copy the prompt's examples), 1 malformed line(s)" in total
    assert "4 extracted, 0 failed, 0 reused" in total
    rows = [ln.split() for ln in out.splitlines() if ln.strip().startswith("doc:")]
    assert len(rows) == 4 and sorted(r[2:] for r in rows)[-1] == ["1", "1"]


def test_a_counting_loop_is_cut_while_streaming(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = "\n".join(f"((Ossel Marine Institute; was director for; twenty-six years); in year; {y})"
                     for y in range(1921, 1961))

    with FakeServer() as srv:
        srv.responder = lambda rec: Reply(200, chat_ok(loop))
        code, out, _ = build(docs, srv, capsys, "--json")
        report = json.loads(out)
        streams = list(srv.streams)
    chunks = len(streams)
    assert chunks == report["extracted_chunks"] > 0
    # the client stopped receiving at the 4th line (~11 tokens a line, the server offered 440)
    assert report["usage_by_stage"]["extract"]["output_tokens"] < 5 * 11 * chunks
    assert report["n_malformed_lines"] == chunks  # one cut per reply, as for a repeated line
    # the first three lines were read; only agnes_vohl.md says "In 1921 Agnes Vohl founded the Ossel
    # Marine Institute. She was its director for twenty-six years": there the 1921 line's names are
    # all in the text and it is kept (the check reads names, not relations: the wrong fact
    # stays), its 1922 and 1923 are not (their inner fact is, and is kept once); elsewhere nothing is
    assert report["facts_accepted"] == 2 and report["facts_ungrounded"] == 3 * chunks - 1
    assert sum("1922" in f[1] for f in report["rejected_facts"]) == chunks
    assert report["counts"]["Triple"] == 2  # the hypernode and its inner fact
    assert code == EXIT_BUILT_WITH_FAILURES
