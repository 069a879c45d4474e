"""Batch extraction (issue 29): ``BuildParams.batch`` sends the extraction through OpenAI's Batch
API or Anthropic's Message Batches — the real SDKs against a loopback fake speaking both
protocols (tests.support.fake_batch). The graph must equal an interactive build's, each chunk paid
once, a batch never submitted twice; failed and expired requests are asked again, alone."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support.fake_batch import BatchFake
from tests.support.fake_server import FakeServer

from kgviz.config import Settings
from kgviz.errors import BuildCancelled, ConfigError
from kgviz.graph.store import GraphStore
from kgviz.index.batch_extract import JOURNAL_FILE
from kgviz.index.pipeline import BuildParams, build
from kgviz.ingest import document_from_text
from kgviz.offline.extract import extract_offline
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.factory import make_llm
from kgviz.providers.pricing import PriceTable
from kgviz.reasoning import Reasoner

EMB = HashingEmbedder(64)
PARAMS = BuildParams(chunk_tokens=24, chunk_overlap=0, workers=2, batch_size=2, similar_docs_k=1, ket_enabled=False)
BATCH = BuildParams(chunk_tokens=24, chunk_overlap=0, workers=2, batch_size=2, similar_docs_k=1, ket_enabled=False,
                    batch=True, batch_poll_s=0.02)
STORIES = {
    "Vey Dam": "The Vey Dam holds back the River Sarn. It was designed by Oskar Linde in 1931. "
               "Linde was born in Halberg in 1890.",
    "Halberg": "Halberg is the capital of Norrland. Halberg has a port. The Halberg Opera House opened in 1901.",
    "Teo Brandt": "Teo Brandt studied at the Dorrow Conservatory. Brandt married Mara Quill in 1920. "
                  "Mara Quill was a chemist.",
}
SDKS = ["openai", "anthropic"]
PRICES = {("openai", "gpt-test"): (2.0, 8.0), ("anthropic", "claude-test"): (3.0, 15.0)}  # $ per million tokens


def documents() -> list:
    return [document_from_text(t, title=n, source=f"{n}.txt") for n, t in STORIES.items()]


def answer(text: str) -> str:
    return "\n".join(t.render() for t in extract_offline(text).triples)


def spec(sdk: str, url: str) -> str:
    return f"anthropic:claude-test@{url}" if sdk == "anthropic" else f"openai:gpt-test@{url}/v1"


def reasoner(sdk: str, url: str, home: Path) -> Reasoner:
    settings = Settings(home=home, db_dir=home / "db", timeout_s=5.0, max_retries=0)
    return Reasoner(make_llm(spec(sdk, url), settings, api_key="k-test", env={}), EMB, prices=PriceTable(PRICES))


def graph(store: GraphStore) -> dict[str, object]:
    """What a build left: row counts and the facts themselves."""
    triples = sorted(r["id"] for r in store.query("MATCH (t:Triple) RETURN t.id AS id"))
    return {"counts": dict(store.counts()), "triples": triples}


def run(sdk: str, url: str, home: Path, db: Path, params: BuildParams) -> tuple[dict[str, object], object]:
    store = GraphStore.open(db, embedder_id=EMB.id, dim=EMB.dim)
    try:
        report = build(documents(), store, reasoner(sdk, url, home), params)
        return graph(store), report
    finally:
        store.close()


_REFERENCE: dict[str, dict[str, object]] = {}


def interactive_graph(sdk: str, tmp_path: Path) -> dict[str, object]:
    if sdk not in _REFERENCE:
        with FakeServer() as srv:
            fake = BatchFake(srv, answer)
            _REFERENCE[sdk], report = run(sdk, srv.url, tmp_path / "ref-home", tmp_path / "ref-db", PARAMS)
            assert not report.failures and fake.interactive == len(fake.paid) > 0
    return _REFERENCE[sdk]


@pytest.mark.parametrize("sdk", SDKS)
def test_a_batch_build_equals_the_interactive_build_each_chunk_paid_once(sdk: str, tmp_path: Path) -> None:
    want = interactive_graph(sdk, tmp_path)
    with FakeServer() as srv:
        fake = BatchFake(srv, answer)
        got, report = run(sdk, srv.url, tmp_path / "home", tmp_path / "db", BATCH)
        assert got == want and not report.failures
        assert fake.interactive == 0 and set(fake.paid.values()) == {1} and set(fake.submitted.values()) == {1}
        batches = json.loads((tmp_path / "db" / JOURNAL_FILE).read_text())["batches"]
        assert len(batches) == 1 and batches[0]["ended"] and len(batches[0]["keys"]) == len(fake.paid)
        # billed at the batch price: half of what the same tokens cost interactively
        u = report.usage_by_stage["extract"]
        full = PriceTable(PRICES).cost(*spec(sdk, "x").split("@")[0].split(":"), u.input_tokens, u.output_tokens)
        assert u.calls == len(fake.paid) and u.cost_usd == pytest.approx(full / 2) and full > 0

        srv.requests.clear()  # a re-run finds every chunk extracted: nothing is sent at all
        again, _ = run(sdk, srv.url, tmp_path / "home", tmp_path / "db", BATCH)
        assert again == want and srv.requests == []


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("fault", ["errored", "expired"])
def test_failed_and_expired_requests_alone_go_into_a_new_batch(sdk: str, fault: str, tmp_path: Path) -> None:
    want = interactive_graph(sdk, tmp_path)
    with FakeServer() as srv:
        fake = BatchFake(srv, answer)
        fake.faults = {"Sarn": fault, "Quill": fault}
        got, report = run(sdk, srv.url, tmp_path / "home", tmp_path / "db", BATCH)
        assert got == want and not report.failures
        faulty = {t for t in fake.submitted if "Sarn" in t or "Quill" in t}
        assert faulty and all(fake.submitted[t] == 2 for t in faulty)  # asked again ...
        assert all(n == 1 for t, n in fake.submitted.items() if t not in faulty)  # ... and only they
        assert set(fake.paid.values()) == {1} and fake.interactive == 0
        batches = json.loads((tmp_path / "db" / JOURNAL_FILE).read_text())["batches"]
        assert [len(b["keys"]) for b in batches] == [len(fake.submitted), len(faulty)]


@pytest.mark.parametrize("sdk", SDKS)
def test_a_request_failing_every_round_is_a_failed_chunk_asked_by_the_next_build(sdk: str, tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from kgviz.index import batch_extract

    monkeypatch.setattr(batch_extract, "MAX_ROUNDS", 1)
    want = interactive_graph(sdk, tmp_path)
    with FakeServer() as srv:
        fake = BatchFake(srv, answer)
        fake.faults = {"Sarn": "expired"}
        got, report = run(sdk, srv.url, tmp_path / "home", tmp_path / "db", BATCH)
        assert len(report.failures) == 1 and "batch request failed" in report.failures[0][1]
        assert got != want
        got, report = run(sdk, srv.url, tmp_path / "home", tmp_path / "db", BATCH)  # the next build
        assert got == want and not report.failures
        assert set(fake.paid.values()) == {1}


@pytest.mark.parametrize("sdk", SDKS)
def test_a_build_stopped_while_its_batch_runs_resumes_that_batch(sdk: str, tmp_path: Path) -> None:
    import threading

    want = interactive_graph(sdk, tmp_path)
    with FakeServer() as srv:
        fake = BatchFake(srv, answer)
        fake.hold = True
        cancel = threading.Event()
        seen: list[str] = []

        def progress(event) -> None:
            seen.append(event.message)
            if "in_progress" in event.message:
                cancel.set()

        store = GraphStore.open(tmp_path / "db", embedder_id=EMB.id, dim=EMB.dim)
        try:
            with pytest.raises(BuildCancelled, match="runs at the provider"):
                build(documents(), store, reasoner(sdk, srv.url, tmp_path / "home"), BATCH, progress, cancel)
        finally:
            store.close()
        assert any("submitted" in m for m in seen) and any("of" in m and "finished" in m for m in seen)
        fake.hold = False
        got, report = run(sdk, srv.url, tmp_path / "home", tmp_path / "db", BATCH)
        assert got == want and not report.failures
        assert set(fake.submitted.values()) == {1} and set(fake.paid.values()) == {1} and fake.interactive == 0


_CHILD = """
import sys
from pathlib import Path
from tests.index.test_batch_extract import BATCH, run
run(sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]), BATCH)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sdk", SDKS)
def test_must_show_a_build_killed_during_its_batch_rerun_equals_interactive_paid_once(sdk: str, tmp_path: Path) -> None:
    """Issue 29's must-show: the build process is killed (SIGKILL) while its batch is in progress
    at the provider; the re-run ends with the interactive build's graph, each chunk paid once."""
    want = interactive_graph(sdk, tmp_path)
    with FakeServer() as srv:
        fake = BatchFake(srv, answer)
        fake.hold = True
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        child = subprocess.Popen([sys.executable, "-c", _CHILD, sdk, srv.url, str(tmp_path / "home"),
                                  str(tmp_path / "db")], env=env)
        try:
            deadline = time.monotonic() + 120
            while not (fake.submitted and any(r.method == "GET" and "batches/" in r.path for r in srv.requests)):
                assert child.poll() is None and time.monotonic() < deadline, "the build ended before its batch ran"
                time.sleep(0.05)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        assert child.returncode == -signal.SIGKILL and not fake.paid
        fake.hold = False
        got, report = run(sdk, srv.url, tmp_path / "home", tmp_path / "db", BATCH)
        assert got == want and not report.failures
        assert set(fake.submitted.values()) == {1} and set(fake.paid.values()) == {1} and fake.interactive == 0


def test_batch_needs_a_provider_with_a_batch_endpoint(tmp_path: Path) -> None:
    from kgviz.providers.offline import OfflineLLM

    store = GraphStore.open(tmp_path / "db", embedder_id=EMB.id, dim=EMB.dim)
    try:
        with pytest.raises(ConfigError, match="batch"):
            build(documents(), store, Reasoner(OfflineLLM(), EMB), BATCH)
    finally:
        store.close()
