"""Provider protocols. Methods never call these with free text: they go through
``kgviz.reasoning.Reasoner.run(task, **inputs)``, the single choke point. The ``Embedder``
Protocol is defined in ``kgviz.embedding`` (so the offline heuristics can type with it without
importing providers) and re-exported here."""
from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

from kgviz.embedding import Embedder as Embedder  # re-exported: the protocol lives below providers
from kgviz.types import Completion, Message, Usage


@runtime_checkable
class LLM(Protocol):
    provider: str  # "anthropic" | "openai" | "openai-compatible" | "offline"
    model: str

    @property
    def is_offline(self) -> bool: ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int = 1024,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion: ...


class LLMBase:
    """The front every LLM class shares: the protocol's ``complete`` signature (keyword options
    and their defaults) is written here once, and a subclass implements ``_complete`` with the
    same options passed positionally. ``is_offline`` is False unless a subclass says otherwise.
    Subclassing is optional: ``LLM`` is a Protocol and anything of its shape is accepted."""

    provider: str
    model: str

    @property
    def is_offline(self) -> bool:
        return False

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int = 1024,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        return self._complete(messages, system, max_tokens, json_schema)

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        raise NotImplementedError(f"{type(self).__name__} does not implement _complete")


# --- helpers shared by the LLM adapters (added with the provider layer) ------------------------
def json_instruction(schema: dict[str, Any]) -> str:
    """A system-prompt line asking for JSON that fits ``schema``. Sent alongside each API's own
    structured-output parameter, so servers that ignore that parameter still get the request."""
    import json

    return (
        "Reply with a single JSON value and nothing else (no prose, no code fences). "
        "It must conform to this JSON Schema:\n" + json.dumps(schema, sort_keys=True, separators=(",", ":"))
    )


def extract_json_text(text: str) -> str | None:
    """The JSON value in a reply: the whole reply if it parses, else the body of a ```json fence
    or the outermost {...} / [...] span if that parses. None when there is no JSON to find."""
    import json

    def parses(candidate: str) -> bool:
        try:
            json.loads(candidate)
        except ValueError:
            return False
        return True

    stripped = text.strip()
    if parses(stripped):
        return stripped
    if "```" in stripped:
        body = stripped.split("```", 2)[1]
        if body.lower().startswith("json"):
            body = body[4:]
        if parses(body.strip()):
            return body.strip()
    for open_, close in (("{", "}"), ("[", "]")):
        start, end = stripped.find(open_), stripped.rfind(close)
        if 0 <= start < end and parses(stripped[start : end + 1]):
            return stripped[start : end + 1]
    return None


def api_completion(text: str, tokens: tuple[int, int], latency: float, *, model: str, provider: str,
                   raw: dict[str, Any], want_json: bool, secret: str | None = None) -> Completion:
    """One SDK reply as a Completion (both API adapters): for a JSON request the JSON is cut out of
    any prose or fence around it (``raw["json_extracted"]`` says it was). ``secret`` (the API key)
    is scrubbed from the text and the raw metadata: a server that echoes it must not put it in
    the cache, a trace or the graph (kgviz.providers.redact)."""
    from kgviz.providers.redact import scrub

    text, raw = scrub(text, secret), scrub(raw, secret)
    if want_json:
        extracted = extract_json_text(text)
        if extracted is not None and extracted != text:
            text, raw["json_extracted"] = extracted, True
    return Completion(text=text, usage=Usage(input_tokens=tokens[0], output_tokens=tokens[1], calls=1,
                                             latency_s=latency),
                      model=model, provider=provider, latency_s=latency, raw=raw)
