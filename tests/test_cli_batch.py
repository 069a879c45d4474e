"""`kgviz build --batch` (issue 29): the CLI sends the extraction through the provider's batch
API (the real openai SDK against the loopback batch fake), prints the batch's progress lines,
and `--estimate` shows the batch price next to the interactive one."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.fake_batch import BatchFake
from tests.support.fake_server import FakeServer
from kgviz.cli import main
from kgviz.offline.extract import extract_offline

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "corpus"
TWO = ("agnes_vohl.md", "kellhaven.md")


@pytest.fixture()
def docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("ANTHROPIC_API_KEY", "KGVIZ_LLM", "KGVIZ_EMBEDDER", "KGVIZ_DB", "KGVIZ_TIMEOUT_S",
                "OPENAI_BASE_URL", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KGVIZ_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KGVIZ_MAX_RETRIES", "0")
    monkeypatch.setenv("OPENAI_API_KEY", "k-test")
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in TWO:
        shutil.copy(SAMPLE / name, folder / name)
    return folder


def answer(text: str) -> str:
    return "\n".join(t.render() for t in extract_offline(text).triples)


def test_build_batch_sends_one_batch_and_no_interactive_call(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer() as srv:
        fake = BatchFake(srv, answer)
        code = main(["build", str(docs), "--db", str(docs.parent / "db"), "--no-ket", "--batch", "--json",
                     "--embedder", "hashing", "--llm", f"openai:gpt-test@{srv.url}/v1"])
        out = json.loads(capsys.readouterr().out)
    assert code == 0 and not out["failures"]
    assert fake.interactive == 0 and fake.submitted and set(fake.submitted.values()) == {1}
    assert out["extracted_chunks"] == len(fake.submitted) and out["counts"]["Triple"] > 0
    assert sum(1 for r in srv.requests if r.method == "POST" and r.path == "/v1/batches") == 1


def test_estimate_shows_the_batch_price_beside_the_interactive_one(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", str(docs), "--estimate", "--llm", "openai:gpt-5-mini", "--no-ket-descriptions"]) == 0
    text = capsys.readouterr().out
    cost = float(text.split("cost: $", 1)[1].split()[0])
    batch = float(text.split("cost with --batch (the provider's batch API, replies within 24 h): $", 1)[1].split()[0])
    assert cost > 0 and batch == pytest.approx(cost / 2, abs=1e-4)
    assert main(["build", str(docs), "--estimate", "--json", "--llm", "openai:gpt-5-mini"]) == 0
    est = json.loads(capsys.readouterr().out)
    # the skeleton's description calls go through the interactive API, at its price
    d = est["descriptions"]["usd"]
    assert d > 0 and est["batch_usd"] == pytest.approx((est["usd"] - d) / 2 + d)
    assert main(["build", str(docs), "--estimate", "--json", "--llm", "offline"]) == 0
    assert json.loads(capsys.readouterr().out)["batch_usd"] is None
