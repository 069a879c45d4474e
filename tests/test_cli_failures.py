"""`kgviz build` against a loopback OpenAI-compatible server (issue 15): failures are listed and
exit 3, --json carries them, a re-run asks only the failed chunks, KGVIZ_WORKERS counts,
--no-cache bypasses the LLM cache."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "providers"))
from fake_server import FakeServer, Recorded, Reply, chat_ok  # noqa: E402

import kgviz.index.pipeline as pipeline  # noqa: E402
from kgviz.cli import EXIT_BUILT_WITH_FAILURES, main  # noqa: E402
from kgviz.index.heuristic import extract_offline  # noqa: E402

TEXTS = {
    "dam.txt": "The Vey Dam holds back the River Sarn. It was designed by Oskar Linde in 1931.",
    "city.txt": "Halberg is the capital of Norrland. Halberg has a port.",
}
HTML = "<!DOCTYPE html><html><body>Welcome to nginx!</body></html>"


def chunk_text(rec: Recorded) -> str:
    return rec.json["messages"][-1]["content"].rsplit("Text: ", 1)[1].rsplit("\nTriples:", 1)[0]


def server_reply(broken: bool):  # noqa: ANN201 - a responder
    def reply(rec: Recorded) -> Reply:
        text = chunk_text(rec)
        if broken and "Sarn" in text:
            return Reply(200, HTML, content_type="text/html")
        return Reply(200, chat_ok("\n".join(t.render() for t in extract_offline(text).triples)))
    return reply


@pytest.fixture()
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KGVIZ_LLM", "KGVIZ_EMBEDDER", "KGVIZ_DB",
                "KGVIZ_TIMEOUT_S", "OPENAI_BASE_URL", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KGVIZ_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KGVIZ_WORKERS", "1")
    monkeypatch.setenv("KGVIZ_MAX_RETRIES", "0")
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in TEXTS.items():
        (docs / name).write_text(text)
    workers: list[int] = []
    real_build = pipeline.build

    def spy(documents, store, reasoner, params, **kw):  # noqa: ANN001, ANN202
        workers.append(params.workers)
        return real_build(documents, store, reasoner, params, **kw)

    monkeypatch.setattr(pipeline, "build", spy)
    return {"docs": docs, "tmp": tmp_path, "workers": workers}


def test_failed_chunks_are_listed_exit_3_and_a_rerun_asks_only_them(setup, capsys) -> None:
    with FakeServer() as srv:
        srv.responder = server_reply(broken=True)
        args = ["build", str(setup["docs"]), "--db", str(setup["tmp"] / "db"), "--no-ket",
                "--llm", f"openai-compatible:qwen@{srv.url}/v1"]
        assert main(args) == EXIT_BUILT_WITH_FAILURES == 3
        err = capsys.readouterr().err
        failed = [chunk_text(r) for r in srv.requests if "Sarn" in chunk_text(r)]
        assert f"extraction failed for {len(failed)} chunk(s)" in err
        assert "the server returned HTML, not an API reply" in err
        assert setup["workers"] == [1]  # KGVIZ_WORKERS reached the build

        srv.responder = server_reply(broken=False)
        srv.requests.clear()
        assert main(args + ["--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["failures"] == [] and len(srv.requests) == len(failed)
        assert {chunk_text(r) for r in srv.requests} == set(failed)


def test_json_output_carries_every_failure(setup, capsys) -> None:
    with FakeServer() as srv:
        srv.responder = server_reply(broken=True)
        code = main(["build", str(setup["docs"]), "--db", str(setup["tmp"] / "db"), "--no-ket", "--json",
                     "--workers", "2", "--llm", f"openai-compatible:qwen@{srv.url}/v1"])
        out = json.loads(capsys.readouterr().out)
    assert code == 3 and setup["workers"] == [2]  # --workers wins over KGVIZ_WORKERS
    assert out["failures"] and all("HTML" in f[1] for f in out["failures"])
    assert all(f[0].startswith("doc:") for f in out["failures"])


def test_no_cache_asks_again_where_the_cache_would_replay(setup, capsys) -> None:
    with FakeServer() as srv:
        srv.responder = server_reply(broken=False)
        spec = f"openai-compatible:qwen@{srv.url}/v1"
        base = ["build", str(setup["docs"]), "--no-ket", "--json", "--llm", spec]
        assert main(base + ["--db", str(setup["tmp"] / "a")]) == 0
        asked = len(srv.requests)
        assert asked >= 2
        assert main(base + ["--db", str(setup["tmp"] / "b")]) == 0  # a new graph, same cache: replayed
        assert len(srv.requests) == asked
        assert main(base + ["--db", str(setup["tmp"] / "c"), "--no-cache"]) == 0
        assert len(srv.requests) == 2 * asked
    capsys.readouterr()
