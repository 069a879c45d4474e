"""The three SDK adapters driven through the real anthropic / openai SDKs against a loopback
server speaking their wire format: success, JSON output, retries, errors, timeouts."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import pytest
from tests.support.fake_server import FakeServer, Reply, anthropic_ok, chat_ok, responses_ok

from kgviz.errors import (
    AuthenticationError,
    KgvizError,
    MissingKeyError,
    ProviderError,
    ProviderResponseError,
    ProviderTimeoutError,
    RateLimitError,
)
from kgviz.providers.anthropic_llm import AnthropicLLM
from kgviz.providers.base import LLM
from kgviz.providers.openai_llm import OpenAIChatLLM, OpenAIResponsesLLM
from kgviz.providers.retry import CallPolicy
from kgviz.types import Message

KEY = "sk-test-SECRET-0123456789"
FAST = {"retry-after-ms": "1"}  # both SDKs honour it, so retries cost ~1 ms instead of ~0.5 s
ERROR_BODY = {"type": "error", "error": {"type": "some_error", "message": f"nope, key {KEY} is bad"}}


@dataclass(frozen=True)
class Wire:
    name: str
    path: str
    ok: Callable[..., dict[str, Any]]
    make: Callable[[str, str | None, CallPolicy], LLM]


WIRES = [
    Wire("anthropic", "/v1/messages", anthropic_ok,
         lambda url, key, pol: AnthropicLLM("claude-test", api_key=key, base_url=url, policy=pol)),
    Wire("openai-responses", "/responses", responses_ok,
         lambda url, key, pol: OpenAIResponsesLLM("gpt-test", api_key=key, base_url=url, policy=pol)),
    Wire("openai-compatible", "/chat/completions", chat_ok,
         lambda url, key, pol: OpenAIChatLLM("llama-test", base_url=url, api_key=key, policy=pol)),
    # the same wire read as a stream (local servers): the fake server streams chat_ok bodies
    Wire("openai-compatible-streamed", "/chat/completions", chat_ok,
         lambda url, key, pol: OpenAIChatLLM("llama-test", base_url=url, api_key=key, policy=pol, stream=True)),
]
ids = [w.name for w in WIRES]
USER = [Message("user", "What is the capital of France?")]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def sent_key(req: Any) -> str:
    return req.headers.get("x-api-key") or req.headers.get("authorization", "").removeprefix("Bearer ")


@pytest.mark.parametrize("wire", WIRES, ids=ids)
def test_success_reads_text_and_usage(server: FakeServer, wire: Wire) -> None:
    server.script(Reply(200, wire.ok("Paris.", 123, 45)))
    llm = wire.make(server.url, KEY, CallPolicy(timeout_s=5, max_retries=0))
    assert isinstance(llm, LLM) and not llm.is_offline
    c = llm.complete(USER, system="Answer briefly.", max_tokens=64)
    assert c.text == "Paris."
    assert (c.usage.input_tokens, c.usage.output_tokens, c.usage.calls, c.usage.cached_calls) == (123, 45, 1, 0)
    assert c.cached is False and 0 < c.latency_s < 5 and c.usage.latency_s == c.latency_s
    assert c.provider == llm.provider
    [req] = server.requests
    assert req.method == "POST" and req.path == wire.path
    assert sent_key(req) == KEY
    assert "temperature" not in req.json
    assert KEY not in repr(llm)


@pytest.mark.parametrize("wire", WIRES, ids=ids)
def test_json_schema_reply_is_unwrapped(server: FakeServer, wire: Wire) -> None:
    server.script(Reply(200, wire.ok('Sure:\n```json\n{"answer": "Paris"}\n```')))
    llm = wire.make(server.url, KEY, CallPolicy(timeout_s=5, max_retries=0))
    c = llm.complete(USER, system="Answer briefly.", json_schema=SCHEMA)
    assert json.loads(c.text) == {"answer": "Paris"}
    assert c.raw.get("json_extracted") is True
    body = json.dumps(server.requests[0].json)
    assert '"answer"' in body  # the schema went out with the request


@pytest.mark.parametrize("wire", WIRES, ids=ids)
def test_429_then_success_is_retried_by_the_sdk(server: FakeServer, wire: Wire,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    server.script(Reply(429, ERROR_BODY, headers=FAST), Reply(429, ERROR_BODY, headers=FAST), Reply(200, wire.ok("ok")))
    llm = wire.make(server.url, KEY, CallPolicy(timeout_s=5, max_retries=3))
    # Both SDKs wait between retries with time.sleep in the calling thread: record the waits they
    # asked for (not wall time, which a busy machine stretches).
    real_sleep, caller, waits = time.sleep, threading.current_thread(), []

    def recording_sleep(seconds: float) -> None:
        if threading.current_thread() is caller:
            waits.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", recording_sleep)
    c = llm.complete(USER)
    assert c.text == "ok" and c.usage.calls == 1
    assert len(server.requests) == 3
    assert waits == [pytest.approx(0.001)] * 2  # retry-after-ms was honoured, not the default backoff


# a status that stays bad through every retry: (status, error type, what the message must say)
RETRIES_SPENT = [
    (429, RateLimitError, ("2 retries",)),
    (500, ProviderResponseError, ("HTTP 500", "3 attempts", "***")),
]


@pytest.mark.parametrize("status, error, says", RETRIES_SPENT, ids=[str(r[0]) for r in RETRIES_SPENT])
@pytest.mark.parametrize("wire", WIRES, ids=ids)
def test_a_status_bad_after_all_retries_is_a_typed_error(server: FakeServer, wire: Wire, status: int,
                                                         error: type[KgvizError], says: tuple[str, ...]) -> None:
    server.script(Reply(status, ERROR_BODY, headers=FAST))
    llm = wire.make(server.url, KEY, CallPolicy(timeout_s=5, max_retries=2))
    with pytest.raises(error) as info:
        llm.complete(USER)
    assert len(server.requests) == 3
    assert all(part in str(info.value) for part in says), str(info.value)
    assert KEY not in info.value.user_message()


@pytest.mark.parametrize("wire", WIRES, ids=ids)
def test_slow_server_is_provider_timeout_error(server: FakeServer, wire: Wire) -> None:
    server.script(Reply(200, wire.ok("late"), delay_s=1.5))
    llm = wire.make(server.url, KEY, CallPolicy(timeout_s=0.2, max_retries=0))
    with pytest.raises(ProviderTimeoutError) as info:  # the reply would come, 1.5 s later
        llm.complete(USER)
    assert "0.2 s" in str(info.value)
    assert len(server.requests) == 1  # max_retries=0: the timeout was not retried


@pytest.mark.parametrize("wire", WIRES, ids=ids)
@pytest.mark.parametrize("body", ["<html>502 Bad Gateway</html>", {}, {"unexpected": True}], ids=["not-json", "empty", "wrong-shape"])
def test_malformed_body_is_provider_response_error(server: FakeServer, wire: Wire, body: Any) -> None:
    server.script(Reply(200, body))
    llm = wire.make(server.url, KEY, CallPolicy(timeout_s=5, max_retries=0))
    with pytest.raises(ProviderResponseError):
        llm.complete(USER)


@pytest.mark.parametrize("wire", WIRES, ids=ids)
@pytest.mark.parametrize("status", [401, 403])
def test_rejected_key_is_authentication_error_without_retry(server: FakeServer, wire: Wire, status: int) -> None:
    server.script(Reply(status, ERROR_BODY, headers=FAST))
    llm = wire.make(server.url, KEY, CallPolicy(timeout_s=5, max_retries=3))
    with pytest.raises(AuthenticationError) as info:
        llm.complete(USER)
    assert len(server.requests) == 1
    msg = info.value.user_message()
    assert f"HTTP {status}" in msg and KEY not in msg
    assert "OPENAI_API_KEY" in msg if wire.name != "anthropic" else "ANTHROPIC_API_KEY" in msg


@pytest.mark.parametrize("wire", WIRES[:2], ids=ids[:2])
def test_missing_key_names_the_variable(wire: Wire) -> None:
    with pytest.raises(MissingKeyError) as info:
        wire.make("http://127.0.0.1:9", None, CallPolicy())
    var = "ANTHROPIC_API_KEY" if wire.name == "anthropic" else "OPENAI_API_KEY"
    assert var in str(info.value)


def test_unreachable_server_is_a_readable_provider_error() -> None:
    llm = OpenAIChatLLM("m", base_url="http://127.0.0.1:9/v1", policy=CallPolicy(timeout_s=1, max_retries=0))
    with pytest.raises(ProviderError) as info:
        llm.complete(USER)
    assert "could not connect" in str(info.value) and "127.0.0.1:9" in str(info.value)


def test_other_4xx_is_a_provider_error_with_the_server_detail(server: FakeServer) -> None:
    server.script(Reply(404, {"type": "error", "error": {"type": "not_found_error", "message": "model: nope"}}))
    llm = AnthropicLLM("nope", api_key=KEY, base_url=server.url, policy=CallPolicy(timeout_s=5, max_retries=1))
    with pytest.raises(ProviderError) as info:
        llm.complete(USER)
    assert not isinstance(info.value, (AuthenticationError, ProviderResponseError))
    assert "HTTP 404" in str(info.value) and "model: nope" in str(info.value)


# --- request shapes per API ------------------------------------------------------------------
def test_anthropic_request_shape(server: FakeServer) -> None:
    server.script(Reply(200, anthropic_ok("{}")))
    llm = AnthropicLLM("claude-test", api_key=KEY, base_url=server.url, policy=CallPolicy(timeout_s=5, max_retries=0))
    llm.complete([Message("user", "q1"), Message("assistant", "a1"), Message("user", "q2")],
                 system="You are terse.", max_tokens=77, json_schema=SCHEMA)
    body = server.requests[0].json
    assert body["system"].startswith("You are terse.")  # top level, not a message
    assert all(m["role"] in ("user", "assistant") for m in body["messages"])
    assert [m["content"] for m in body["messages"]] == ["q1", "a1", "q2"]
    assert body["max_tokens"] == 77 and body["model"] == "claude-test"
    assert "temperature" not in body
    fmt = body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"]["properties"] == SCHEMA["properties"]
    assert fmt["schema"]["additionalProperties"] is False  # structured outputs want closed objects
    assert "additionalProperties" not in SCHEMA  # the caller's schema was not mutated
    assert "anthropic-version" in server.requests[0].headers


def test_anthropic_without_schema_sends_no_output_config(server: FakeServer) -> None:
    server.script(Reply(200, anthropic_ok("hi")))
    llm = AnthropicLLM("claude-test", api_key=KEY, base_url=server.url, policy=CallPolicy(timeout_s=5, max_retries=0))
    llm.complete(USER)
    body = server.requests[0].json
    assert "output_config" not in body and "system" not in body


def test_openai_responses_request_shape(server: FakeServer) -> None:
    server.script(Reply(200, responses_ok('{"answer": "Paris"}')))
    llm = OpenAIResponsesLLM("gpt-test", api_key=KEY, base_url=server.url, policy=CallPolicy(timeout_s=5, max_retries=0))
    c = llm.complete(USER, system="Be exact.", max_tokens=99, json_schema=SCHEMA)
    assert c.text == '{"answer": "Paris"}' and "json_extracted" not in c.raw
    body = server.requests[0].json
    assert body["instructions"].startswith("Be exact.")
    assert body["input"] == [{"role": "user", "content": USER[0].content}]
    assert body["max_output_tokens"] == 99 and body["store"] is False
    fmt = body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["schema"] == SCHEMA and fmt["name"]


def test_openai_responses_incomplete_without_text_explains_the_budget(server: FakeServer) -> None:
    reply = responses_ok("", status="incomplete")
    reply["output"] = [{"type": "reasoning", "id": "rs_1", "summary": []}]
    reply["incomplete_details"] = {"reason": "max_output_tokens"}
    server.script(Reply(200, reply))
    llm = OpenAIResponsesLLM("gpt-test", api_key=KEY, base_url=server.url, policy=CallPolicy(timeout_s=5, max_retries=0))
    with pytest.raises(ProviderResponseError, match="max_output_tokens"):
        llm.complete(USER, max_tokens=16)


def test_openai_compatible_request_shape_and_placeholder_key(server: FakeServer) -> None:
    server.script(Reply(200, chat_ok('{"answer": "Paris"}')))
    llm = OpenAIChatLLM("llama3.1:8b", base_url=server.url, policy=CallPolicy(timeout_s=5, max_retries=0))
    llm.complete(USER, system="Be exact.", max_tokens=55, json_schema=SCHEMA)
    req = server.requests[0]
    assert sent_key(req) == "not-needed"
    body = req.json
    assert body["model"] == "llama3.1:8b" and body["max_tokens"] == 55
    assert body["messages"][0]["role"] == "system" and body["messages"][0]["content"].startswith("Be exact.")
    assert body["messages"][1] == {"role": "user", "content": USER[0].content}
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["schema"] == SCHEMA


def test_openai_compatible_tolerates_missing_usage(server: FakeServer) -> None:
    reply = chat_ok("hi")
    del reply["usage"]
    server.script(Reply(200, reply))
    llm = OpenAIChatLLM("m", base_url=server.url, policy=CallPolicy(timeout_s=5, max_retries=0))
    c = llm.complete(USER)
    assert c.text == "hi" and c.usage.calls == 1 and c.usage.total_tokens == 0
    assert c.raw["usage_missing"] is True


def test_timeouts_are_retried_before_giving_up(server: FakeServer) -> None:
    server.script(Reply(200, anthropic_ok("late"), delay_s=1.0))
    llm = AnthropicLLM("claude-test", api_key=KEY, base_url=server.url, policy=CallPolicy(timeout_s=0.15, max_retries=1))
    with pytest.raises(ProviderTimeoutError, match="2 attempts"):
        llm.complete(USER)
    assert len(server.requests) == 2
