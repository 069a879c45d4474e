"""The build estimate for a local model: $0, and time from measured tokens/s (a calibration
against the loopback server, or the workspace's earlier calls), never a made-up rate."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.fake_server import FakeServer, Recorded, Reply, chat_stream
from tests.support.index_fakes import corpus

from kgviz.cli import main
from kgviz.config import Settings
from kgviz.errors import ConfigError
from kgviz.index.estimate import UNKNOWN_TIME, calibrate_spec, estimate_cost
from kgviz.index.extract_sample import MAX_SAMPLE_CHUNKS, MIN_SAMPLE_CHUNKS
from kgviz.index.params import BuildParams
from kgviz.prompts.extraction import EXTRACT_TRIPLES_SYSTEM
from kgviz.providers.factory import make_llm
from kgviz.providers.speed import MAX_ROUNDS, SPEED_FILE
from kgviz.types import Message

PROMPT_DELAY, PIECE_DELAY, PIECES, PROMPT_TOKENS = 0.2, 0.004, 70, 150  # 70 >= MIN_GEN_TOKENS


def slow_server(rec: Recorded) -> Reply:
    """A local server that takes 0.2 s before the first token and 0.004 s per further token."""
    return chat_stream([f"{i}\n" for i in range(1, PIECES + 1)], PROMPT_TOKENS, delay_s=PROMPT_DELAY,
                       piece_delay_s=PIECE_DELAY)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", db_dir=tmp_path / "db", timeout_s=10, max_retries=0)


def test_a_local_model_without_measurements_costs_0_and_its_time_is_unknown(settings: Settings) -> None:
    est = estimate_cost(corpus(), BuildParams(workers=2), "openai-compatible:qwen@http://127.0.0.1:9/v1",
                        cache_dir=settings.cache_dir)
    assert est.local and est.usd == 0 and est.price_known and est.input_tokens > 0
    assert est.seconds is None and est.time_source == UNKNOWN_TIME
    remote = estimate_cost(corpus(), BuildParams(), "openai-compatible:qwen@http://10.0.0.7:8000/v1",
                           cache_dir=settings.cache_dir)
    assert not remote.local and remote.seconds is None and remote.time_source == ""


def test_calibration_measures_the_server_and_the_estimate_uses_those_figures(settings: Settings) -> None:
    with FakeServer() as server:
        server.responder = slow_server
        spec = f"openai-compatible:qwen@{server.url}"
        speed = calibrate_spec(spec, settings, workers=2)
        n = len(server.requests)
        assert 2 + 2 <= n <= MAX_ROUNDS + 2  # alone until two agree (2 to 4), then two at once
        assert all(r.json["stream"] is True for r in server.requests)
        prompts = [r.json["messages"][-1]["content"] for r in server.requests]
        assert len(set(prompts)) == n  # distinct prompts: a server's prompt cache cannot skip one
        params = BuildParams(workers=2, chunk_tokens=24, chunk_overlap=0)
        est = estimate_cost(corpus(), params, spec, cache_dir=settings.cache_dir)
    rows = [json.loads(line) for line in (settings.cache_dir / SPEED_FILE).read_text().splitlines()]
    assert len(rows) == n and {r["base_url"] for r in rows} == {server.url}
    # the rates are the recorded figures of the calls made alone (all but the last two), pooled
    alone = rows[:-2]
    prompt_tps = sum(r["input_tokens"] for r in alone) / sum(r["prompt_s"] for r in alone)
    gen_tps = sum(r["output_tokens"] for r in alone) / sum(r["seconds"] - r["prompt_s"] for r in alone)
    assert speed.prompt_tps == pytest.approx(prompt_tps) and speed.gen_tps == pytest.approx(gen_tps)
    # within reason: the server slept before the first token and between tokens, so no rate can
    # exceed what those sleeps allow
    assert 0 < prompt_tps <= PROMPT_TOKENS / PROMPT_DELAY
    assert 0 < gen_tps <= PIECES / ((PIECES - 1) * PIECE_DELAY)
    assert speed.parallelism is not None and speed.parallel_calls == 2
    assert est.local and est.usd == 0 and est.price_known
    want = (est.input_tokens / prompt_tps + est.output_tokens / gen_tps) / min(2.0, speed.parallelism)
    assert est.seconds == pytest.approx(want)
    assert est.time_source.startswith(f"measured on {n - 2} call(s) (calibration)")
    # the range the calls allow is carried with the estimate, around it
    assert est.seconds_low is not None and est.seconds_low <= est.seconds <= est.seconds_high


def test_earlier_calls_in_the_workspace_are_the_measurement_when_not_calibrated(settings: Settings) -> None:
    with FakeServer() as server:
        server.responder = slow_server
        spec = f"openai-compatible:qwen@{server.url}"
        llm = make_llm(spec, settings)  # cached: the rows are the history
        for i in range(2):
            llm.complete([Message("user", f"question {i}")])
        est = estimate_cost(corpus(), BuildParams(workers=1), spec, cache_dir=settings.cache_dir)
    assert est.seconds is not None and "earlier calls in this workspace" in est.time_source
    assert "; 1 worker" in est.time_source


def test_calibrating_a_hosted_api_is_refused(settings: Settings) -> None:
    with pytest.raises(ConfigError, match="times a local model"):
        calibrate_spec("anthropic:claude-haiku-4-5", settings, workers=1)


def test_the_cli_calibrates_and_prints_the_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KGVIZ_HOME", str(tmp_path / "home"))
    for key in ("KGVIZ_LLM", "KGVIZ_WORKERS", "KGVIZ_TIMEOUT_S", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(key, raising=False)
    sample = Path(__file__).resolve().parents[2] / "sample_data" / "corpus"
    with FakeServer() as server:
        server.responder = slow_server
        argv = ["build", str(sample), "--db", str(tmp_path / "db"), "--llm", f"openai-compatible:q@{server.url}",
                "--estimate", "--workers", "1"]
        assert main(argv) == 0
        assert "time: unknown until measured" in capsys.readouterr().out
        assert server.requests == []  # a plain --estimate sends nothing
        assert main([*argv, "--calibrate"]) == 0
        out = capsys.readouterr().out
        n = len(server.requests)
        # one worker: calls alone until two agree, no parallel pair; then the extraction of chunks
        # until their output length settles
        assert 2 + MIN_SAMPLE_CHUNKS <= n <= MAX_ROUNDS + MAX_SAMPLE_CHUNKS
        assert [r.json["messages"][0]["content"] == EXTRACT_TRIPLES_SYSTEM
                for r in server.requests[-MIN_SAMPLE_CHUNKS:]] == [True] * MIN_SAMPLE_CHUNKS
    assert "cost: $0 (local model)" in out
    assert "time: ~" in out and f"(measured on {n} call(s) (calibration)" in out and ", between ~" in out
    assert main(["build", str(sample), "--db", str(tmp_path / "db"), "--calibrate"]) == 2
