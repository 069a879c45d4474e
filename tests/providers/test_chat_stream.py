"""Streamed Chat Completions (local servers) against the loopback server speaking SSE: loops are
cut and the server is hung up on, timings recorded, broken streams retried, usage kept."""
from __future__ import annotations

import time

import pytest
from tests.support.fake_server import FakeServer, Reply, chat_stream

from kgviz.config import Settings
from kgviz.errors import ProviderError, ProviderTimeoutError
from kgviz.facts.parse import parse_triples
from kgviz.providers.factory import make_llm
from kgviz.providers.openai_llm import OpenAIChatLLM
from kgviz.providers.retry import CallPolicy
from kgviz.types import Message

USER = [Message("user", "Extract the facts.")]
LOOP = ["(Edda Lunn; designed; bridges)\n"] + ["(Edda Lunn; born in; Ventholm)\n"] * 300


def streamed(server: FakeServer, *, timeout_s: float = 5, retries: int = 0) -> OpenAIChatLLM:
    return OpenAIChatLLM("m", base_url=server.url, policy=CallPolicy(timeout_s=timeout_s, max_retries=retries), stream=True)


def test_a_looping_reply_is_cut_and_the_server_hung_up_on(server: FakeServer) -> None:
    server.script(chat_stream(LOOP, 50, piece_delay_s=0.01))
    c = streamed(server).complete(USER, max_tokens=1024)
    assert c.raw["cut"] == "reply cut: repetition after 5 tokens" and c.raw["finish_reason"] == "cut"
    assert c.text == LOOP[0] + LOOP[1] * 3 + LOOP[1].strip()
    # the parse of the cut text equals the parse of the whole looping reply
    whole = parse_triples("".join(LOOP))
    assert [t.render() for t in parse_triples(c.text).triples] == [t.render() for t in whole.triples]
    # no usage event arrives after a cut: tokens counted from what was sent and received
    assert c.usage.output_tokens == 5 and c.usage.input_tokens > 0 and c.raw["usage_estimated"] is True
    log = server.streams[0]
    for _ in range(500):  # the server thread notices the hang-up at its next write (0.01 s apart)
        if log.hung_up or log.events_sent > len(LOOP):
            break
        time.sleep(0.01)
    assert log.hung_up and log.events_sent < len(LOOP)


def test_a_whole_reply_keeps_usage_timings_and_finish_reason(server: FakeServer) -> None:
    timings = {"prompt_n": 40, "prompt_ms": 300.0, "predicted_n": 4, "predicted_ms": 200.0, "other": 1}
    server.script(chat_stream(["(a; r; b)\n", "(c; ", "r; d)"], 40, 4, delay_s=0.3, piece_delay_s=0.05, timings=timings))
    c = streamed(server).complete(USER)
    assert c.text == "(a; r; b)\n(c; r; d)" and "cut" not in c.raw
    assert (c.usage.input_tokens, c.usage.output_tokens) == (40, 4) and "usage_estimated" not in c.raw
    assert c.raw["finish_reason"] == "stop" and c.raw["streamed"] is True
    assert c.raw["timings"] == {k: timings[k] for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms")}
    # the server slept 0.3 s before the first piece and 0.05 s between pieces: lower bounds only
    assert c.raw["prompt_s"] >= 0.3 and c.raw["gen_s"] >= 0.1
    assert c.raw["prompt_s"] + c.raw["gen_s"] == pytest.approx(c.latency_s, abs=1e-3)
    assert server.requests[0].json["stream"] is True
    assert server.requests[0].json["stream_options"] == {"include_usage": True}


def test_a_server_ignoring_max_tokens_is_cut(server: FakeServer) -> None:
    server.script(chat_stream([f"w{i} " for i in range(100)], 10))
    c = streamed(server).complete(USER, max_tokens=8)
    assert c.raw["cut"] == "reply cut: longer than max_tokens=8 after 9 tokens"
    assert c.text == "".join(f"w{i} " for i in range(9))


def test_a_stream_that_breaks_mid_reply_is_retried(server: FakeServer) -> None:
    server.script(chat_stream(["half ", "a reply"], 10, finish=False), chat_stream(["whole ", "reply"], 10, 2))
    c = streamed(server, retries=1).complete(USER)
    assert c.text == "whole reply" and len(server.requests) == 2


def test_a_broken_stream_after_all_retries_is_a_provider_error(server: FakeServer) -> None:
    server.script(chat_stream(["half"], 10, finish=False))
    with pytest.raises(ProviderError, match="ended before it was finished"):
        streamed(server, retries=2).complete(USER)
    assert len(server.requests) == 3


def test_a_stream_that_stalls_mid_reply_times_out_and_is_retried(server: FakeServer) -> None:
    server.script(chat_stream(["a ", "b ", "c"], 10, piece_delay_s=1.0))
    with pytest.raises(ProviderTimeoutError, match="sent nothing for 0.2 s in the middle of a reply"):
        streamed(server, timeout_s=0.2, retries=1).complete(USER)
    assert len(server.requests) == 2


def test_a_stream_that_stalls_before_its_first_token_says_so(server: FakeServer) -> None:
    # headers and an empty first delta at once, then nothing: the server is still reading the prompt
    server.script(chat_stream(["", "a"], 10, piece_delay_s=1.0))
    with pytest.raises(ProviderTimeoutError) as err:
        streamed(server, timeout_s=0.2).complete(USER)
    assert "sent nothing for 0.2 s before the first token of its reply" in str(err.value)
    assert "middle of a reply" not in str(err.value)


def test_an_error_event_in_the_stream_is_a_provider_error(server: FakeServer) -> None:
    bad = Reply(200, None, stream=({"error": {"message": "the model crashed"}},))
    server.script(bad)
    with pytest.raises(ProviderError, match="the model crashed"):
        streamed(server).complete(USER)


def test_a_plain_json_reply_to_a_streamed_request_is_read(server: FakeServer) -> None:
    server.script(_plain())
    c = streamed(server).complete(USER)
    assert c.text == "plain answer" and (c.usage.input_tokens, c.usage.output_tokens) == (9, 2)


def _plain() -> Reply:
    # a proxy that ignores "stream": a JSON body, sent as text so the fake server does not stream it
    return Reply(200, '{"id": "x", "object": "chat.completion", "model": "m", "choices": [{"index": 0, '
                 '"message": {"role": "assistant", "content": "plain answer"}, "finish_reason": "stop"}], '
                 '"usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}}')


def test_the_factory_streams_only_for_loopback_servers(tmp_path) -> None:
    s = Settings(home=tmp_path, db_dir=tmp_path / "db")
    local = make_llm("openai-compatible:m@http://127.0.0.1:8080/v1", s, use_cache=False)
    remote = make_llm("openai-compatible:m@http://10.1.2.3:8080/v1", s, use_cache=False)
    assert isinstance(local, OpenAIChatLLM) and local.stream is True
    assert isinstance(remote, OpenAIChatLLM) and remote.stream is False


def test_the_cut_lands_in_the_trace_and_survives_a_cached_replay(server: FakeServer, tmp_path) -> None:
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.reasoning import LLMCall, Reasoner

    server.script(chat_stream(LOOP, 50))
    s = Settings(home=tmp_path, db_dir=tmp_path / "db")
    spec = f"openai-compatible:m@{server.url}"
    first = Reasoner(make_llm(spec, s), HashingEmbedder(64)).run("extract_triples", text="Edda Lunn was born in Ventholm.")
    assert [t.render() for t in first.value.triples] == [
        "(Edda Lunn; designed; bridges)", "(Edda Lunn; born in; Ventholm)"]
    assert first.call.note == "reply cut: repetition after 5 tokens"
    assert first.call.to_dict()["note"] == first.call.note
    assert LLMCall.from_dict(first.call.to_dict()).note == first.call.note
    again = Reasoner(make_llm(spec, s), HashingEmbedder(64)).run("extract_triples", text="Edda Lunn was born in Ventholm.")
    assert again.call.cached and again.call.note == first.call.note and len(server.requests) == 1
    assert "note" not in LLMCall("t", "p", "offline").to_dict()  # unset: absent, old traces compare equal


def test_a_plain_json_error_body_to_a_streamed_request_is_a_provider_error(server: FakeServer) -> None:
    server.script(Reply(200, '{"error": {"message": "model not loaded", "code": 503}}'))
    with pytest.raises(ProviderError, match="model not loaded"):
        streamed(server).complete(USER)
