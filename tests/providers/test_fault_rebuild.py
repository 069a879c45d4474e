"""Issue 15 regression: a build against a faulty server, then the server is fixed and the build
runs again. A failed reply must never be cached: the re-run asks for exactly the failed chunks
and ends with the same graph as a clean build. Real SDKs against the loopback fake server."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
from fake_server import FakeServer, Recorded, Reply, anthropic_ok, chat_ok

from kgviz.config import Settings
from kgviz.graph.store import GraphStore
from kgviz.index.heuristic import extract_offline
from kgviz.index.pipeline import BuildParams, build
from kgviz.ingest import document_from_text
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.factory import make_llm
from kgviz.reasoning import Reasoner

EMB = HashingEmbedder(64)
PARAMS = BuildParams(chunk_tokens=24, chunk_overlap=0, workers=2, batch_size=2, similar_docs_k=1, ket_enabled=False)
STORIES = {
    "Vey Dam": "The Vey Dam holds back the River Sarn. It was designed by Oskar Linde in 1931. "
               "Linde was born in Halberg in 1890.",
    "Halberg": "Halberg is the capital of Norrland. Halberg has a port. The Halberg Opera House opened in 1901.",
    "Teo Brandt": "Teo Brandt studied at the Dorrow Conservatory. Brandt married Mara Quill in 1920. "
                  "Mara Quill was a chemist.",
}
FAULTY_WORD = "Sarn"  # chunks whose text holds this word get the fault until the server is fixed
HTML = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


def documents() -> list:
    return [document_from_text(t, title=n, source=f"{n}.txt") for n, t in STORIES.items()]


def chunk_text(rec: Recorded) -> str:
    prompt = rec.json["messages"][-1]["content"]
    return prompt.rsplit("Text: ", 1)[1].rsplit("\nTriples:", 1)[0]


def good(sdk: str, text: str) -> Reply:
    triples = "\n".join(t.render() for t in extract_offline(text).triples)
    return Reply(200, anthropic_ok(triples) if sdk == "anthropic" else chat_ok(triples))


def fault(sdk: str, kind: str, text: str) -> Reply:
    if kind == "garbage":
        reply = "lorem ipsum dolor sit amet, the quick brown fox"
        return Reply(200, anthropic_ok(reply) if sdk == "anthropic" else chat_ok(reply))
    if kind == "empty":
        body = anthropic_ok("") if sdk == "anthropic" else chat_ok("")
        if sdk == "anthropic":
            body["content"] = []
        return Reply(200, body)
    if kind == "html":
        return Reply(200, HTML, content_type="text/html")
    if kind == "500":
        return Reply(500, {"error": {"message": "model crashed"}})
    assert kind == "timeout"
    return Reply(200, good(sdk, text).body, delay_s=1.5)  # the client gives up after 0.5 s


def spec(sdk: str, url: str) -> str:
    return f"anthropic:claude-test@{url}" if sdk == "anthropic" else f"openai-compatible:qwen-1.5b@{url}/v1"


def run_build(sdk: str, url: str, home: Path, store: GraphStore):
    settings = Settings(home=home, db_dir=home / "db", timeout_s=0.5, max_retries=0)
    llm = make_llm(spec(sdk, url), settings, api_key="k-test" if sdk == "anthropic" else None, env={})
    return build(documents(), store, Reasoner(llm, EMB), PARAMS)


def responder(sdk: str, kind: str | None) -> Callable[[Recorded], Reply]:
    """A server that fails the chunks holding FAULTY_WORD in way ``kind`` (None: a fixed server)."""
    def reply(rec: Recorded) -> Reply:
        text = chunk_text(rec)
        return fault(sdk, kind, text) if kind and FAULTY_WORD in text else good(sdk, text)
    return reply


_CLEAN: dict[str, dict[str, int]] = {}


def clean_counts(sdk: str, tmp_path: Path) -> dict[str, int]:
    if sdk not in _CLEAN:
        with FakeServer() as srv:
            srv.responder = responder(sdk, None)
            store = GraphStore.open(tmp_path / "clean-db", embedder_id=EMB.id, dim=EMB.dim)
            try:
                report = run_build(sdk, srv.url, tmp_path / "clean-home", store)
            finally:
                store.close()
            assert not report.failures
            _CLEAN[sdk] = dict(report.counts)
    return _CLEAN[sdk]


@pytest.mark.parametrize("sdk", ["openai-compatible", "anthropic"])
@pytest.mark.parametrize("kind", ["garbage", "empty", "html", "500", "timeout"])
def test_failed_chunks_are_reasked_after_the_server_is_fixed(sdk: str, kind: str, tmp_path: Path) -> None:
    want = clean_counts(sdk, tmp_path)
    store = GraphStore.open(tmp_path / "db", embedder_id=EMB.id, dim=EMB.dim)
    try:
        with FakeServer() as srv:
            srv.responder = responder(sdk, kind)
            first = run_build(sdk, srv.url, tmp_path / "home", store)
            failed = {c for c, _, _ in first.failures}
            asked_faulty = {chunk_text(r) for r in srv.requests if FAULTY_WORD in chunk_text(r)}
            assert failed and len(failed) == len(asked_faulty)  # every faulty chunk failed, nothing else
            assert all(err for _, err, _ in first.failures)
            assert first.counts["Triple"] < want["Triple"]

            srv.responder = responder(sdk, None)  # the server is fixed
            srv.requests.clear()
            second = run_build(sdk, srv.url, tmp_path / "home", store)
            assert len(srv.requests) == len(failed)  # exactly the failed chunks are asked again
            assert {chunk_text(r) for r in srv.requests} == asked_faulty
            assert not second.failures
            assert dict(second.counts) == want

            srv.requests.clear()
            third = run_build(sdk, srv.url, tmp_path / "home", store)  # nothing left to ask
            assert len(srv.requests) == 0 and dict(third.counts) == want
    finally:
        store.close()
