"""Keep API keys out of everything a reply reaches.

A server can echo the key it was sent (a misconfigured proxy, a model quoting its request). The
reply then flows into the LLM cache, the trace, and, through extraction, into the graph as a
fact. Both API adapters build their Completion in ``kgviz.providers.base.api_completion``, which
scrubs the key from the text and the raw metadata there, before any cache or task sees it; error
messages are scrubbed separately (kgviz.providers.retry.ErrorContext).
"""
from __future__ import annotations

from typing import Any

REDACTED = "[redacted key]"
# Shorter "keys" are test placeholders: replacing them would garble replies and protect nothing
# (the adapters pass no secret for the placeholder an openai-compatible server gets without a key).
MIN_SECRET_CHARS = 8


def scrub(value: Any, secret: str | None) -> Any:
    """``value`` with every occurrence of ``secret`` replaced, inside strings, lists and dicts."""
    if not secret or len(secret) < MIN_SECRET_CHARS:
        return value
    if isinstance(value, str):
        return value.replace(secret, REDACTED)
    if isinstance(value, dict):
        return {scrub(k, secret): scrub(v, secret) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub(v, secret) for v in value)
    return value
