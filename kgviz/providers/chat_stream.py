"""Chat Completions read as a stream (SSE), for local OpenAI-compatible servers.

Why streaming, and why only there (``kgviz.providers.factory`` turns it on for loopback
``openai-compatible`` servers, i.e. llama.cpp, Ollama, LM Studio, vLLM on this machine):

* a small local model that loops one line keeps a CPU core busy for minutes; reading the reply
  as it is written lets ``LoopGuard`` stop at the parser's loop rule, and closing the stream
  makes the server stop generating;
* the time to the first token separates prompt processing from generation, which is what the
  build estimate needs to predict a local model's time (``kgviz.providers.speed``).
Hosted APIs bill by token and do not loop like a 1.5B model; their non-streamed path is the one
already tested against each API's wire format, so it stays as it is.

Retries and timeouts: the SDK still retries the request itself (connection errors, 408/429/5xx
before the first byte) and applies the client timeout to every read, i.e. between two streamed
pieces. A connection that breaks or stalls *mid-stream* is not retried by the SDK, so it is
retried here, up to the same ``max_retries``.

A server that answers a streamed request with a plain JSON body (some proxies do) is read like a
non-streamed reply, so errors such as an HTML page keep their usual messages.
"""
from __future__ import annotations

import json
import time
from typing import Any

from kgviz.errors import ProviderError, ProviderTimeoutError
from kgviz.providers.loop_guard import LoopGuard
from kgviz.providers.retry import map_sdk_error, no_text, not_an_object
from kgviz.text import count_tokens
from kgviz.types import Completion

_TIMINGS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms")  # llama.cpp's own, kept for display


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None) or {}
        value = extra.get(name)
    return value


class _MidStream(Exception):
    """The stream broke after it started (the SDK does not retry that)."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(str(error))
        self.error = error


def complete_streaming(llm: Any, kwargs: dict[str, Any], max_tokens: int, want_json: bool) -> Completion:
    """One streamed chat completion for ``llm`` (an ``OpenAIChatLLM``)."""
    import httpx  # the openai SDK's transport; imported here like the SDK itself

    attempts = llm._ctx.policy.max_retries + 1
    for attempt in range(1, attempts + 1):
        try:
            return _once(llm, kwargs, max_tokens, want_json, httpx)
        except _MidStream as exc:
            if attempt == attempts:
                raise exc.error from exc
    raise AssertionError("unreachable")  # pragma: no cover


def _once(llm: Any, kwargs: dict[str, Any], max_tokens: int, want_json: bool, httpx: Any) -> Completion:
    sdk, ctx = llm._sdk, llm._ctx
    t0 = time.perf_counter()
    try:
        raw_reply = llm._client.chat.completions.with_raw_response.create(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
    except (sdk.APIError, json.JSONDecodeError) as exc:
        raise map_sdk_error(exc, sdk, ctx) from exc
    if "text/event-stream" not in raw_reply.headers.get("content-type", ""):
        return _plain_body(llm, raw_reply, t0, want_json)
    stream = raw_reply.parse()
    guard = LoopGuard(max_tokens)
    first: float | None = None
    usage: Any = None
    timings: dict[str, Any] = {}
    model: Any = None
    finish: Any = None
    try:
        for chunk in stream:
            model = _get(chunk, "model") or model
            usage = _get(chunk, "usage") or usage
            t = _get(chunk, "timings")
            if isinstance(t, dict):
                timings = {k: t[k] for k in _TIMINGS if k in t}
            for choice in _get(chunk, "choices") or []:
                finish = _get(choice, "finish_reason") or finish
                piece = _get(_get(choice, "delta"), "content")
                if piece:
                    if first is None:
                        first = time.perf_counter()
                    if not guard.feed(str(piece)):
                        break
            if guard.cut:
                break
    except (sdk.APITimeoutError, httpx.TimeoutException) as exc:  # the SDK wraps some, not all
        # before the first token the server is still reading the prompt (minutes for a long one on
        # a CPU model): "in the middle of a reply" would send the user looking for a broken server
        where = ("in the middle of a reply" if first is not None
                 else "before the first token of its reply (it may still be reading the prompt)")
        raise _MidStream(ProviderTimeoutError(
            f"{ctx.label} sent nothing for {ctx.policy.timeout_s:g} s {where}",
            hint="raise KGVIZ_TIMEOUT_S for slow local models, or check the server's log")) from exc
    except (sdk.APIConnectionError, httpx.HTTPError) as exc:
        raise _MidStream(ProviderError(
            f"the connection to {ctx.label} broke in the middle of a reply ({type(exc).__name__})",
            hint="check that the server is still running")) from exc
    except (sdk.APIError, json.JSONDecodeError) as exc:  # an error event, a garbled event
        raise map_sdk_error(exc, sdk, ctx) from exc
    finally:
        stream.close()  # after a cut this is what tells the server to stop generating
    end = time.perf_counter()
    if not guard.cut and finish is None:
        # the body ended without a finish reason: the server died or a proxy cut it mid-reply
        raise _MidStream(ProviderError(
            f"the reply from {ctx.label} ended before it was finished (no finish_reason)",
            hint="check that the server is still running"))
    text = guard.text
    if not text.strip():
        raise no_text(ctx, f"finish_reason {finish}")
    raw: dict[str, Any] = {"finish_reason": "cut" if guard.cut else finish, "streamed": True}
    if first is not None:  # time to the first token = prompt processing (+ any queueing)
        raw["prompt_s"], raw["gen_s"] = round(first - t0, 6), round(end - first, 6)
    if timings:
        raw["timings"] = timings
    tokens = (_get(usage, "prompt_tokens"), _get(usage, "completion_tokens"))
    if guard.cut:
        raw["cut"] = guard.cut
    if not all(isinstance(n, int) for n in tokens):
        # a cut stream never reaches the usage chunk: count what was sent and received instead
        prompt = "\n".join(str(m.get("content", "")) for m in kwargs.get("messages", []))
        tokens = (count_tokens(prompt), guard.pieces)
        raw["usage_estimated"] = True
    return llm._completion(text, tokens, end - t0, model, raw, want_json)


def _plain_body(llm: Any, raw_reply: Any, t0: float, want_json: bool) -> Completion:
    sdk, ctx = llm._sdk, llm._ctx
    body = raw_reply.http_response.read().decode("utf-8", "replace")
    try:
        reply: Any = json.loads(body)
    except json.JSONDecodeError:
        reply = body
    wrong = not_an_object(ctx, reply)
    if wrong is not None:
        raise wrong
    if isinstance(reply, dict) and reply.get("error"):
        raise map_sdk_error(sdk.APIError(str(reply["error"]), raw_reply.http_response.request, body=reply), sdk, ctx)
    return llm._read_reply(reply, time.perf_counter() - t0, want_json)
