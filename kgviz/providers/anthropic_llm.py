"""Anthropic Messages API adapter (the real ``anthropic`` SDK, 2.x).

Notes on the 2.x SDK that shaped this file:
* ``system`` is a top-level parameter, not a message role.
* ``temperature`` was removed; nothing sampling-related is sent.
* JSON output: ``output_config={"format": {"type": "json_schema", "schema": ...}}`` (structured
  outputs). The schema is also restated in the system prompt so that gateways which drop
  ``output_config`` still ask for JSON, and a fenced / wrapped JSON reply is unwrapped.
* Retries (429 / 5xx / timeouts, honouring ``retry-after``) are the SDK's own.
"""
from __future__ import annotations

import copy
import json
import time
from typing import Any, Sequence

from kgviz.errors import MissingKeyError
from kgviz.providers.base import LLMBase, api_completion, json_instruction
from kgviz.providers.retry import CallPolicy, ErrorContext, malformed, map_sdk_error, no_text, not_an_object
from kgviz.types import Completion, Message

KEY_VAR = "ANTHROPIC_API_KEY"


def closed_objects(schema: dict[str, Any]) -> dict[str, Any]:
    """Copy of ``schema`` where every object without an explicit ``additionalProperties`` gets
    ``false``: Anthropic's structured outputs reject open objects."""
    out = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    visit(out)
    return out


def _get(obj: Any, name: str) -> Any:
    """Attribute or key access: the SDK builds models leniently, so a field may be a plain dict
    (or absent) when the server sent something unexpected."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


class AnthropicLLM(LLMBase):
    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None = None,
        policy: CallPolicy = CallPolicy(),
        structured_output: bool = True,
    ) -> None:
        if not api_key:
            raise MissingKeyError(
                f"no API key for Anthropic: set {KEY_VAR}",
                hint="export it before starting kgviz, enter a key in the app for this session, or choose the offline mode",
            )
        import anthropic  # imported here so offline use never pays for the SDK

        self._sdk = anthropic
        self.model = model
        self.base_url = base_url
        self.structured_output = structured_output
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=policy.timeout_s, max_retries=policy.max_retries
        )
        self._ctx = ErrorContext(f"Anthropic ({model})", KEY_VAR, policy, secret=api_key, base_url=base_url)

    def __repr__(self) -> str:
        return f"AnthropicLLM(model={self.model!r}, base_url={self.base_url!r})"

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        kwargs = self.request_body(messages, system, max_tokens, json_schema)
        t0 = time.perf_counter()
        try:
            reply = self._client.messages.create(**kwargs)
        except (self._sdk.APIError, json.JSONDecodeError) as exc:
            raise map_sdk_error(exc, self._sdk, self._ctx) from exc
        latency = time.perf_counter() - t0
        return self.read_reply(reply, latency, json_schema is not None)

    def request_body(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                     json_schema: dict[str, Any] | None) -> dict[str, Any]:
        """The Messages API request for one call: what ``_complete`` sends, and the ``params`` of
        a Message Batches request (kgviz.providers.batch_api)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
        }
        system_parts = [system] if system else []
        if json_schema is not None:
            system_parts.append(json_instruction(json_schema))
            if self.structured_output:
                kwargs["output_config"] = {"format": {"type": "json_schema", "schema": closed_objects(json_schema)}}
        if system_parts:
            kwargs["system"] = "\n\n".join(system_parts)
        return kwargs

    def read_reply(self, reply: Any, latency: float, want_json: bool) -> Completion:
        """One Messages API reply (an SDK Message, or a batch result's message) as a Completion."""
        wrong = not_an_object(self._ctx, reply)
        if wrong is not None:
            raise wrong
        content = _get(reply, "content")
        if not isinstance(content, list):
            raise malformed(self._ctx, "no content blocks")
        text = "".join(str(_get(b, "text") or "") for b in content if _get(b, "type") == "text")
        if not text.strip():
            raise no_text(self._ctx, f"{len(content)} content block(s), stop_reason {_get(reply, 'stop_reason')}")
        usage = _get(reply, "usage")
        tokens_in, tokens_out = _get(usage, "input_tokens"), _get(usage, "output_tokens")
        if not isinstance(tokens_in, int) or not isinstance(tokens_out, int):
            raise malformed(self._ctx, "no token usage")
        # prompt-cache reads/writes are billed input tokens reported outside input_tokens
        for extra in ("cache_creation_input_tokens", "cache_read_input_tokens"):
            value = _get(usage, extra)
            tokens_in += value if isinstance(value, int) else 0
        raw: dict[str, Any] = {"id": _get(reply, "id"), "stop_reason": _get(reply, "stop_reason")}
        return api_completion(text, (tokens_in, tokens_out), latency, model=str(_get(reply, "model") or self.model),
                              provider=self.provider, raw=raw, want_json=want_json, secret=self._ctx.secret)
