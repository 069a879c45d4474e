"""Build page with a local model (loopback server): $0, time unknown until measured, Calibrate
times the server and the estimate then shows the measured time and its source."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from tests.support.fake_server import FakeServer, Recorded, Reply, chat_stream

from kgviz.prompts.extraction import EXTRACT_TRIPLES_SYSTEM

ROOT = Path(__file__).resolve().parents[2]


def _slow(rec: Recorded) -> Reply:
    # 70 tokens: calibration needs 64+ to time generation (kgviz.providers.speed.MIN_GEN_TOKENS)
    return chat_stream([f"{i}\n" for i in range(1, 71)], 150, delay_s=0.05, piece_delay_s=0.002)


def test_build_page_calibrates_a_local_model_and_shows_the_time(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeServer() as server:
        server.responder = _slow
        monkeypatch.setenv("KGVIZ_LLM", f"openai-compatible:qwen@{server.url}")
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
        at.switch_page("pages/build.py").run()
        at.radio[0].set_value("Sample corpus").run()
        assert not at.exception, at.exception
        metrics = {m.label: m.value for m in at.metric}
        assert metrics["estimated cost"] == "$0 (local model)" and "estimated time" not in metrics
        assert any("unknown until measured" in str(i.value) for i in at.info)
        assert server.requests == []  # estimating sends nothing
        next(b for b in at.button if b.label == "Calibrate").click().run()
        assert not at.exception, at.exception
        # KGVIZ_WORKERS=2: calls alone until two agree (2 to 4), the extraction of chunks of the
        # sample until their output length settles (3 to 8), then two at once
        n = len(server.requests)
        k = sum(r.json["messages"][0]["content"] == EXTRACT_TRIPLES_SYSTEM for r in server.requests)
        assert 3 <= k <= 8 and 4 + k <= n <= 6 + k
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["estimated time"].startswith("~")
    captions = [str(c.value).replace("\\", "") for c in at.caption]  # md_text escapes markdown characters
    assert any(f"measured on {n - 2} call(s) (calibration)" in c and ", between ~" in c
               and f"{k} of " in c and "chunks extracted on the corpus" in c for c in captions), captions
