"""A bad recording chosen as the session's LLM (issue 28): the sidebar names the file, the line
and what is wrong, and every page keeps working (the Build page keeps its uploader); never
"unexpected error"."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
HEADER = json.dumps({"kgviz_recording": 1, "provider": "openai-compatible", "model": "tiny",
                     "base_url": "http://127.0.0.1:9/v1"})
ROW = {"key": "k1", "provider": "openai-compatible", "model": "tiny", "text": "(a; b; c)", "reply_model": "tiny",
       "input_tokens": 10, "output_tokens": 5, "latency_s": 0.5, "raw": {}, "created": 1.0}


@pytest.mark.parametrize("body, expected", [
    (f'{HEADER}\n{json.dumps(dict(ROW, input_tokens="many"))}\n',
     'rec.jsonl, line 2: "input_tokens" must be a whole number of tokens'),
    (f'{HEADER}\n{{"key": {"[" * 100_000}{"]" * 100_000}}}\n', "rec.jsonl, line 2: JSON nested deeper than 32 levels"),
    (HEADER + "\n" + "\x00\x01\x02" * 50 + "\n", "rec.jsonl, line 2: holds the control byte 0x00"),
])
def test_a_bad_recording_is_a_message_and_the_build_page_keeps_its_uploader(
    app_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, body: str, expected: str
) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "rec.jsonl").write_text(body, encoding="utf-8")
    monkeypatch.setenv("KGVIZ_LLM", f"recorded:{folder}")
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/build.py").run()
    assert not at.exception
    shown = [str(w.value).replace("\\", "") for w in at.sidebar.warning]  # markdown escapes aside
    assert any(expected in w for w in shown), shown
    everything = " ".join(str(e.value) for kind in ("error", "warning") for e in getattr(at, kind))
    assert "unexpected error" not in everything and "Traceback" not in everything
    assert at.get("file_uploader"), "the Build page lost its uploader"
