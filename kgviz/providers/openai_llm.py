"""OpenAI adapters (the real ``openai`` SDK, 3.x).

* ``OpenAIResponsesLLM`` — ``openai:<model>``: the Responses API (``client.responses.create``),
  ``instructions`` for the system prompt, ``text.format`` for JSON output, ``store=False`` so
  prompts are not kept server-side.
* ``OpenAIChatLLM`` — ``openai-compatible:<model>@<base_url>``: Chat Completions against a local
  or self-hosted server (Ollama, vLLM, LM Studio), ``response_format`` for JSON output. Those
  servers usually need no key; a placeholder is sent when none is given.

JSON schemas are sent non-strict: OpenAI's strict mode demands every property be required and
objects be closed, which the task schemas need not satisfy. The schema is also restated in the
system prompt and a wrapped JSON reply is unwrapped, because local servers vary in how well they
honour the format parameter. Retries are the SDK's own.
"""
from __future__ import annotations

import json
import time
from typing import Any, Sequence

from kgviz.errors import MissingKeyError
from kgviz.providers.base import LLMBase, api_completion, json_instruction
from kgviz.providers.retry import CallPolicy, ErrorContext, malformed, map_sdk_error, no_text, not_an_object
from kgviz.types import Completion, Message

KEY_VAR = "OPENAI_API_KEY"
NO_KEY_PLACEHOLDER = "not-needed"  # local servers ignore the key, but the SDK insists on one
SCHEMA_NAME = "kgviz_output"


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


class _OpenAIBase(LLMBase):
    provider = "openai"

    def __init__(self, model: str, *, api_key: str, base_url: str | None, policy: CallPolicy, label: str) -> None:
        import openai  # imported here so offline use never pays for the SDK

        self._sdk = openai
        self.model = model
        self.base_url = base_url
        self._client = openai.OpenAI(
            api_key=api_key, base_url=base_url, timeout=policy.timeout_s, max_retries=policy.max_retries
        )
        self._ctx = ErrorContext(label, KEY_VAR, policy, secret=api_key, base_url=base_url)

    @property
    def is_offline(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def _call(self, create: Any, kwargs: dict[str, Any]) -> tuple[Any, float]:
        t0 = time.perf_counter()
        try:
            reply = create(**kwargs)
        except (self._sdk.APIError, json.JSONDecodeError) as exc:
            raise map_sdk_error(exc, self._sdk, self._ctx) from exc
        wrong = not_an_object(self._ctx, reply)
        if wrong is not None:
            raise wrong
        return reply, time.perf_counter() - t0

    def _completion(
        self, text: str, tokens: tuple[int, int], latency: float, model: Any, raw: dict[str, Any], want_json: bool
    ) -> Completion:
        return api_completion(text, tokens, latency, model=str(model or self.model), provider=self.provider,
                              raw=raw, want_json=want_json,
                              secret=None if self._ctx.secret == NO_KEY_PLACEHOLDER else self._ctx.secret)


def _system_text(system: str | None, json_schema: dict[str, Any] | None) -> str | None:
    parts = [system] if system else []
    if json_schema is not None:
        parts.append(json_instruction(json_schema))
    return "\n\n".join(parts) if parts else None


class OpenAIResponsesLLM(_OpenAIBase):
    provider = "openai"

    def __init__(
        self, model: str, *, api_key: str | None, base_url: str | None = None, policy: CallPolicy = CallPolicy()
    ) -> None:
        if not api_key:
            raise MissingKeyError(
                f"no API key for OpenAI: set {KEY_VAR}",
                hint="export it before starting kgviz, enter a key in the app for this session, or choose the offline mode",
            )
        super().__init__(model, api_key=api_key, base_url=base_url, policy=policy, label=f"OpenAI ({model})")

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        kwargs = self.request_body(messages, system, max_tokens, json_schema)
        reply, latency = self._call(self._client.responses.create, kwargs)
        return self.read_reply(reply, latency, max_tokens, json_schema is not None)

    def request_body(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                     json_schema: dict[str, Any] | None) -> dict[str, Any]:
        """The Responses API request for one call: what ``_complete`` sends, and what a batch
        request line carries as its body (kgviz.providers.batch_api)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": [{"role": m.role, "content": m.content} for m in messages],
            "max_output_tokens": max_tokens,
            "store": False,
        }
        instructions = _system_text(system, json_schema)
        if instructions:
            kwargs["instructions"] = instructions
        if json_schema is not None:
            kwargs["text"] = {
                "format": {"type": "json_schema", "name": SCHEMA_NAME, "schema": json_schema, "strict": False}
            }
        return kwargs

    def read_reply(self, reply: Any, latency: float, max_tokens: int, want_json: bool) -> Completion:
        """One Responses API reply (an SDK object, or the JSON body of a batch result line) as a
        Completion; a reply with no usable text raises as an interactive one does."""
        wrong = not_an_object(self._ctx, reply)
        if wrong is not None:
            raise wrong
        output = _get(reply, "output")
        if not isinstance(output, list):
            raise malformed(self._ctx, "no output items")
        texts: list[str] = []
        refusals: list[str] = []
        for item in output:
            if _get(item, "type") != "message":
                continue  # reasoning summaries, tool calls: not part of the answer
            for part in _get(item, "content") or []:
                if _get(part, "type") == "output_text":
                    texts.append(str(_get(part, "text") or ""))
                elif _get(part, "type") == "refusal":
                    refusals.append(str(_get(part, "refusal") or ""))
        usage = _get(reply, "usage")
        tokens = (_get(usage, "input_tokens"), _get(usage, "output_tokens"))
        if not all(isinstance(t, int) for t in tokens):
            raise malformed(self._ctx, "no token usage")
        status = _get(reply, "status")
        raw: dict[str, Any] = {"id": _get(reply, "id"), "status": status}
        if refusals:
            raw["refusal"] = " ".join(refusals)
        if not texts and status == "incomplete":
            reason = _get(_get(reply, "incomplete_details"), "reason") or "unknown"
            raise malformed(
                self._ctx,
                f"the reply stopped before any text ({reason}); reasoning models spend part of "
                f"max_output_tokens={max_tokens} on reasoning",
            )
        text = "".join(texts) if texts else " ".join(refusals)
        if not text.strip():
            raise no_text(self._ctx, f"status {status}")
        return self._completion(text, tokens, latency, _get(reply, "model"), raw, want_json)


class OpenAIChatLLM(_OpenAIBase):
    provider = "openai-compatible"

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        policy: CallPolicy = CallPolicy(),
        frequency_penalty: float | None = None,
        temperature: float | None = None,
        stream: bool = False,
    ) -> None:
        # sent when set: llama.cpp, Ollama and vLLM read it; against a model looping one line
        self.frequency_penalty = frequency_penalty
        self.temperature = temperature  # sent when set (the server's own default otherwise)
        self.stream = stream  # read replies as SSE and cut loops early (kgviz.providers.chat_stream)
        super().__init__(
            model,
            api_key=api_key or NO_KEY_PLACEHOLDER,
            base_url=base_url,
            policy=policy,
            label=f"the OpenAI-compatible server ({model})",
        )

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        chat: list[dict[str, str]] = []
        system_text = _system_text(system, json_schema)
        if system_text:
            chat.append({"role": "system", "content": system_text})
        chat.extend({"role": m.role, "content": m.content} for m in messages)
        # max_tokens rather than max_completion_tokens: it is what Ollama, vLLM and LM Studio read
        kwargs: dict[str, Any] = {"model": self.model, "messages": chat, "max_tokens": max_tokens}
        if self.frequency_penalty is not None:
            kwargs["frequency_penalty"] = self.frequency_penalty
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "schema": json_schema, "strict": False},
            }
        if self.stream:
            from kgviz.providers.chat_stream import complete_streaming

            return complete_streaming(self, kwargs, max_tokens, json_schema is not None)
        reply, latency = self._call(self._client.chat.completions.create, kwargs)
        return self._read_reply(reply, latency, json_schema is not None)

    def _read_reply(self, reply: Any, latency: float, want_json: bool) -> Completion:
        choices = _get(reply, "choices")
        if not isinstance(choices, list) or not choices:
            raise malformed(self._ctx, "no choices")
        message = _get(choices[0], "message")
        if message is None:
            raise malformed(self._ctx, "the first choice has no message")
        text = str(_get(message, "content") or "")
        if not text.strip():
            raise no_text(self._ctx, f"finish_reason {_get(choices[0], 'finish_reason')}")
        usage = _get(reply, "usage")
        raw: dict[str, Any] = {"id": _get(reply, "id"), "finish_reason": _get(choices[0], "finish_reason")}
        tokens = (_get(usage, "prompt_tokens"), _get(usage, "completion_tokens"))
        if not all(isinstance(t, int) for t in tokens):
            # some local servers omit usage; the call still happened, its tokens are unknown
            tokens = (0, 0)
            raw["usage_missing"] = True
        return self._completion(text, tokens, latency, _get(reply, "model"), raw, want_json)
