"""Recording and replaying LLM replies (kgviz.providers.recorded), with a scripted in-process model."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import pytest

from kgviz.config import Settings
from kgviz.errors import ConfigError, RecordingError, RecordingMissError
from kgviz.providers.base import LLMBase
from kgviz.providers.cache import cache_key
from kgviz.providers.factory import make_llm, parse_llm_spec
from kgviz.providers.recorded import (
    HEADER_FIELD,
    RecordedLLM,
    RecordingLLM,
    load_recording,
    read_file,
    recording_files,
)
from kgviz.types import Completion, Message, Usage


class Scripted(LLMBase):
    """A live-model stand-in: numbered replies, every request kept."""

    provider = "openai-compatible"

    def __init__(self, model: str = "tiny", base_url: str = "http://127.0.0.1:9/v1") -> None:
        self.model, self.base_url = model, base_url
        self.requests: list[tuple[str | None, str]] = []

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        self.requests.append((system, messages[-1].content))
        n = len(self.requests)
        return Completion(f"reply {n} from {self.model}", Usage(input_tokens=10 * n, output_tokens=n, calls=1,
                                                                latency_s=0.5 * n),
                          self.model, self.provider, latency_s=0.5 * n, raw={"id": f"r{n}"})


def ask(llm: Any, text: str, system: str | None = "sys") -> Completion:
    return llm.complete([Message("user", text)], system=system, max_tokens=64)


def test_recording_replays_same_text_and_usage_without_the_model(tmp_path: Path) -> None:
    live = Scripted()
    rec = RecordingLLM(live, tmp_path, "a.jsonl", {"phase": "test"})
    first, second = ask(rec, "one"), ask(rec, "two")
    assert rec.recorded == 2 and len(live.requests) == 2

    replay = RecordedLLM(tmp_path)
    assert replay.provider == "recorded" and replay.model == "tiny"
    again = ask(replay, "two")
    assert again.text == second.text == "reply 2 from tiny"
    # costs are shown as recorded: the tokens and seconds of the real call
    assert (again.usage.input_tokens, again.usage.output_tokens, again.usage.latency_s) == (20, 2, 1.0)
    assert again.raw["recorded"] is True and again.raw["recording_file"] == "a.jsonl"
    assert ask(replay, "one").text == first.text
    assert (replay.hits, replay.misses) == (2, 0)


def test_rows_use_the_cache_key_and_columns(tmp_path: Path) -> None:
    rec = RecordingLLM(Scripted(), tmp_path, "a.jsonl", {"phase": "test", "kgviz_commit": "abc"})
    ask(rec, "hello")
    header, rows = read_file(tmp_path / "a.jsonl")
    assert header[HEADER_FIELD] == 1 and header["model"] == "tiny" and header["kgviz_commit"] == "abc"
    assert header["base_url"] == "http://127.0.0.1:9/v1"
    expected = cache_key(provider="openai-compatible", model="tiny", base_url="http://127.0.0.1:9/v1", system="sys",
                         messages=[Message("user", "hello")], max_tokens=64, json_schema=None)
    assert rows[0]["key"] == expected
    assert rows[0]["text"] == "reply 1 from tiny" and rows[0]["input_tokens"] == 10


def test_a_miss_raises_a_typed_error_and_is_counted(tmp_path: Path) -> None:
    ask(RecordingLLM(Scripted(), tmp_path, "a.jsonl", {}), "known")
    replay = RecordedLLM(tmp_path)
    with pytest.raises(RecordingMissError, match="no reply for a prompt starting 'unknown'") as err:
        ask(replay, "unknown")
    assert "live model" in err.value.hint
    # the same words under another system prompt or output limit are another request
    with pytest.raises(RecordingMissError):
        ask(replay, "known", system="other")
    assert (replay.hits, replay.misses) == (0, 2)
    assert isinstance(err.value, ConfigError)  # stops a build instead of failing chunk by chunk


def test_repeated_requests_get_the_replies_in_recorded_order(tmp_path: Path) -> None:
    live = Scripted()
    rec = RecordingLLM(live, tmp_path, "a.jsonl", {})
    texts = [ask(rec, "same").text for _ in range(2)]
    assert texts == ["reply 1 from tiny", "reply 2 from tiny"]  # a retry reaches the model again

    replay = RecordedLLM(tmp_path)
    assert [ask(replay, "same").text for _ in range(3)] == [*texts, texts[-1]]


def test_recording_resumes_by_replaying_what_is_recorded(tmp_path: Path) -> None:
    ask(RecordingLLM(Scripted(), tmp_path, "a.jsonl", {}), "paid for")
    live = Scripted()
    rec = RecordingLLM(live, tmp_path, "a.jsonl", {})
    assert ask(rec, "paid for").text == "reply 1 from tiny"
    ask(rec, "new")
    assert live.requests == [("sys", "new")] and (rec.replayed, rec.recorded) == (1, 1)
    assert len(load_recording(tmp_path)) == 2


def test_files_from_two_models_replay_together(tmp_path: Path) -> None:
    ask(RecordingLLM(Scripted("big"), tmp_path, "extraction.big.jsonl", {"phase": "extraction"}), "extract")
    ask(RecordingLLM(Scripted("small"), tmp_path, "methods.small.jsonl", {"phase": "methods"}), "answer")
    replay = RecordedLLM(tmp_path)
    assert replay.model == "big+small"
    assert ask(replay, "extract").text == "reply 1 from big"
    assert ask(replay, "answer").text == "reply 1 from small"
    assert ask(replay, "answer").model == "small"


def test_a_file_keeps_one_model(tmp_path: Path) -> None:
    RecordingLLM(Scripted("big"), tmp_path, "a.jsonl", {})
    with pytest.raises(ConfigError, match="recorded from openai-compatible:big"):
        RecordingLLM(Scripted("small"), tmp_path, "a.jsonl", {})


@pytest.mark.parametrize("content, message", [
    ("", "empty"),
    ('{"model": "x"}\n', "not a kgviz recording header"),
    ('{"kgviz_recording": 1, "provider": "p", "model": "m"}\n{"key": "k"}\n', "line 2: a reply row lacks"),
    ('{"kgviz_recording": 1, "provider": "p", "model": "m"}\nnot json\n', "line 2: not JSON"),
])
def test_malformed_recordings_name_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "r.jsonl").write_text(content)
    with pytest.raises(ConfigError, match=message):
        RecordedLLM(tmp_path / "r.jsonl")


HEADER = '{"kgviz_recording": 1, "provider": "p", "model": "m"}'
ROW = {"key": "k", "provider": "p", "model": "m", "text": "t", "reply_model": "m", "input_tokens": 1,
       "output_tokens": 2, "latency_s": 0.5, "raw": {}, "created": 1.0}


def row_line(**change: Any) -> str:
    return json.dumps({**ROW, **change})


@pytest.mark.parametrize("body, message", [
    # a field of the wrong type: each was a ValueError / TypeError traceback (exit 1) before
    (row_line(input_tokens="many"), 'line 3: "input_tokens" must be a whole number of tokens .* not a string \\("many"\\)'),
    (row_line(output_tokens=True), '"output_tokens" must be a whole number .* not a boolean'),
    (row_line(output_tokens=-3), '"output_tokens" must be a whole number'),
    (row_line(input_tokens=1.5), '"input_tokens" must be a whole number'),
    (row_line(latency_s="fast"), '"latency_s" must be a number of seconds'),
    (row_line(created=None), '"created" must be a number of seconds .* not null'),
    (row_line(text=["a"]), '"text" must be text, not a list'),
    (row_line(key=7), '"key" must be text, not a number'),
    (row_line(key=""), '"key" is empty'),
    (row_line(raw=[1, 2]), '"raw" must be a JSON object, not a list'),
    (row_line(raw="[1]"), '"raw" must be a JSON object'),
    (row_line(raw="{nope"), "line 3: not JSON"),
    ('{"latency_s": NaN}', "lacks key"),
    (row_line(latency_s=float("nan")), '"latency_s" must be a number of seconds'),
    ("[1, 2]", "a reply row is a JSON object, not a list"),
    ('{"key": ' + "[" * 100_000 + "]" * 100_000 + "}", "line 3: JSON nested deeper than 32 levels"),  # RecursionError before
    ('{"key": "' + "x" * 2_000_001 + '"}', "line 3: the line is 2,000,012 characters, over the limit of 2,000,000"),
    ('{"key": ' + "9" * 5000 + "}", "line 3: not JSON"),  # int() refuses 4,300+ digits
])
def test_every_field_of_a_reply_row_is_checked(tmp_path: Path, body: str, message: str) -> None:
    (tmp_path / "r.jsonl").write_text(f"{HEADER}\n{row_line()}\n{body}\n", encoding="utf-8")  # line 3 is bad
    with pytest.raises(RecordingError, match=message):
        RecordedLLM(tmp_path / "r.jsonl")


@pytest.mark.parametrize("data, message", [
    (HEADER.encode() + b"\n" + bytes(range(256)) * 4, "line 2: holds the control byte 0x00 at column 1"),
    (HEADER.encode() + b"\n" + row_line(text="caf\u00e9").encode()[:-5] + b"\xe9\xff\"}\n", "line 2: not valid UTF-8"),
    (b"\xff\xfe\x00binary", "line 1: not valid UTF-8"),
    (b'{"kgviz_recording": true, "provider": "p", "model": "m"}\n', "line 1: not a kgviz recording header"),
    (b'{"kgviz_recording": 1, "provider": "p", "model": "m", "base_url": 5}\n', '"base_url" must be text or null'),
])
def test_binary_and_undecodable_recordings_name_the_line(tmp_path: Path, data: bytes, message: str) -> None:
    (tmp_path / "r.jsonl").write_bytes(data)
    with pytest.raises(RecordingError, match=message):
        RecordedLLM(tmp_path / "r.jsonl")


@pytest.mark.parametrize("data, reason", [
    (b"", "r.jsonl: empty"),
    (b'{"key": "k"}\n', 'r.jsonl: line 1 is not a recording header \\(needs "kgviz_recording": 1\\)'),
    (bytes(range(256)) * 4, "r.jsonl: line 1 holds the control byte 0x00 at column 1"),
    (b"\xff\xfe\x80\n", "r.jsonl: line 1 is not UTF-8 text"),
])
def test_a_folder_without_a_recording_says_what_is_wrong_with_each_file(tmp_path: Path, data: bytes,
                                                                      reason: str) -> None:
    (tmp_path / "r.jsonl").write_bytes(data)
    with pytest.raises(RecordingError, match=f"holds no recording: {reason}"):
        RecordedLLM(tmp_path)


@pytest.mark.timeout(60)  # opening the FIFO would wait for a writer
def test_a_fifo_is_never_opened_as_a_recording(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "r.jsonl")
    with pytest.raises(RecordingError, match=r"holds no recording: r.jsonl: a named pipe \(FIFO\), not a regular file"):
        RecordedLLM(tmp_path)
    with pytest.raises(RecordingError, match=r"is a named pipe \(FIFO\), not a file"):
        RecordedLLM(tmp_path / "r.jsonl")


def test_missing_recording_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no recording at"):
        RecordedLLM(tmp_path / "nope")
    with pytest.raises(ConfigError, match="holds no recording"):
        RecordedLLM(tmp_path)


def test_spec_and_factory(tmp_path: Path) -> None:
    ask(RecordingLLM(Scripted(), tmp_path, "a.jsonl", {}), "x")
    assert parse_llm_spec(f"recorded:{tmp_path}") == ("recorded", str(tmp_path), None)
    with pytest.raises(ConfigError, match="names no recording"):
        parse_llm_spec("recorded:")
    llm = make_llm(f"recorded:{tmp_path}", Settings(home=tmp_path / "home", db_dir=tmp_path / "db"))
    assert isinstance(llm, RecordedLLM)  # never wrapped in the disk cache: the recording is the cassette
    assert ask(llm, "x").text == "reply 1 from tiny"
    assert not (tmp_path / "home" / "cache").exists()


def test_rows_are_one_json_object_per_line(tmp_path: Path) -> None:
    rec = RecordingLLM(Scripted(), tmp_path, "a.jsonl", {})
    ask(rec, "line one\nline two")
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["raw"] == {"id": "r1"}


def test_other_jsonl_files_in_the_folder_are_not_replies(tmp_path: Path) -> None:
    ask(RecordingLLM(Scripted(), tmp_path, "a.jsonl", {}), "x")
    (tmp_path / "runs.jsonl").write_text('{"id": "s01", "method": "text-rag"}\n')
    assert [f.name for f in recording_files(tmp_path)] == ["a.jsonl"]
    assert ask(RecordedLLM(tmp_path), "x").text == "reply 1 from tiny"
