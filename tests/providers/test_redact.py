"""A server that echoes the API key (issue 28): the key reaches neither the LLM cache nor a trace
nor the graph. Real SDKs against the loopback fake server."""
from __future__ import annotations

from pathlib import Path

from tests.support.fake_server import FakeServer, Reply, anthropic_ok, chat_ok

from kgviz.config import Settings
from kgviz.graph.store import GraphStore
from kgviz.index.pipeline import BuildParams, build
from kgviz.ingest import document_from_text
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.factory import make_llm
from kgviz.providers.redact import REDACTED, scrub
from kgviz.reasoning import Reasoner
from kgviz.types import Message

KEY = "sk-echo-TEST-SECRET-0123456789abcdef"


def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", db_dir=tmp_path / "db", timeout_s=5, max_retries=0)


def cache_bytes(s: Settings) -> bytes:
    return b"".join(p.read_bytes() for p in s.cache_dir.iterdir() if p.is_file())


def test_scrub_reaches_into_nested_metadata() -> None:
    assert scrub({"a": [KEY, ("x", f"key={KEY}")], KEY: 1}, KEY) == {"a": [REDACTED, ("x", f"key={REDACTED}")],
                                                                     REDACTED: 1}
    assert scrub("not-needed here", "not-needed"[:5]) == "not-needed here"  # too short to be a key


def test_an_echoed_key_is_not_stored_in_the_cache(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.script(Reply(200, anthropic_ok(f"Your key is {KEY}.")), Reply(200, chat_ok(f"I was sent {KEY}")))
    for spec in (f"anthropic:claude-haiku-4-5@{server.url}", f"openai-compatible:m@{server.url}/v1"):
        llm = make_llm(spec, s, api_key=KEY)
        c = llm.complete([Message("user", "hello")])
        llm.accept(c)
        assert KEY not in c.text and REDACTED in c.text
    assert KEY.encode() not in cache_bytes(s)
    assert all(any(KEY in v for v in r.headers.values()) for r in server.requests)  # the key was really sent


def test_an_echoed_key_never_becomes_a_fact(server: FakeServer, tmp_path: Path) -> None:
    s = settings(tmp_path)
    server.responder = lambda req: Reply(200, chat_ok(f"(Harbour Library; guarded by; {KEY})\n"
                                                      f"(Marta Ruiz; designed; Harbour Library)"))
    llm = make_llm(f"openai-compatible:m@{server.url}/v1", s, api_key=KEY)
    emb = HashingEmbedder(64)
    doc = document_from_text("Marta Ruiz designed the Harbour Library.", title="Harbour", source="h.txt")
    with GraphStore.open(tmp_path / "ws", embedder_id=emb.id, dim=emb.dim) as store:
        report = build([doc], store, Reasoner(llm, emb), BuildParams(workers=1, ket_enabled=False))
        # the echoed fact names something the chunk lacks, so the grounding check leaves it out
        # (issue 23); the other is kept
        assert report.counts["Triple"] >= 1 and not report.failures
        assert report.facts_ungrounded == 1 and KEY not in repr(report.rejected_facts)
        assert REDACTED in repr(report.rejected_facts)  # what was left out is shown with its secret gone
        found = {}
        for table, column in (("Entity", "name"), ("Entity", "description"), ("Triple", "text"),
                              ("Extraction", "raw")):
            found[f"{table}.{column}"] = store.query(
                f"MATCH (n:{table}) WHERE n.{column} CONTAINS $k RETURN count(*) AS c", {"k": KEY})[0]["c"]
        assert set(found.values()) == {0}, found
    assert KEY.encode() not in cache_bytes(s)
