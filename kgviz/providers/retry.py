"""Retries, timeouts and error translation shared by the SDK adapters.

Retrying is left to the SDKs themselves (both anthropic and openai retry 408/409/429/5xx and
connection errors with exponential backoff and honour ``retry-after`` / ``retry-after-ms``); kgviz
only passes ``max_retries`` and ``timeout`` from Settings and turns whatever escapes those retries
into a typed kgviz error whose message a user can act on. The API key is scrubbed from every
message built here, because some servers echo part of a rejected key back.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from kgviz.errors import (
    AuthenticationError,
    ProviderError,
    ProviderResponseError,
    ProviderTimeoutError,
    RateLimitError,
)

_MAX_DETAIL = 300  # characters of a provider's error message worth showing a user


@dataclass(frozen=True)
class CallPolicy:
    """What the SDK client is told about patience. Both fields come from Settings."""

    timeout_s: float = 60.0  # per attempt (KGVIZ_TIMEOUT_S)
    max_retries: int = 3  # retries after the first attempt (KGVIZ_MAX_RETRIES)

    @property
    def attempts(self) -> int:
        return self.max_retries + 1


@dataclass(frozen=True)
class ErrorContext:
    label: str  # how the provider is named to the user, e.g. "Anthropic (claude-haiku-4-5)"
    key_var: str  # environment variable holding the key, named in messages
    policy: CallPolicy
    secret: str = field(default="", repr=False)  # only so it can be scrubbed from messages
    base_url: str | None = None

    def scrub(self, text: str) -> str:
        if self.secret and len(self.secret) >= 4:
            text = text.replace(self.secret, "***")
        return text


def api_detail(exc: BaseException, ctx: ErrorContext) -> str:
    """The provider's own explanation from an error body, shortened and scrubbed."""
    body = getattr(exc, "body", None)
    msg: Any = None
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else err
        if msg is None and isinstance(body.get("detail"), str):  # FastAPI-style servers (vLLM)
            msg = body["detail"]
    elif isinstance(body, str):
        msg = body
    if not isinstance(msg, str) or not msg.strip():
        return ""
    msg = " ".join(msg.split())
    if len(msg) > _MAX_DETAIL:
        msg = msg[: _MAX_DETAIL - 1] + "…"
    return ctx.scrub(msg)


def map_sdk_error(exc: BaseException, sdk: ModuleType, ctx: ErrorContext) -> ProviderError:
    """Translate an exception from the anthropic or openai SDK (same class names in both) into
    a kgviz ProviderError. Adapters pass only ``sdk.APIError`` and ``json.JSONDecodeError`` here
    (both SDKs let a non-JSON success body escape as the latter); anything else is a bug and
    propagates untouched."""
    p = ctx.policy
    detail = api_detail(exc, ctx)
    suffix = f": {detail}" if detail else ""
    where = f" at {ctx.base_url}" if ctx.base_url else ""
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderTimeoutError(
            f"{ctx.label}{where} did not answer within {p.timeout_s:g} s "
            f"({p.attempts} attempt{'s' if p.attempts != 1 else ''})",
            hint="try again later, or raise KGVIZ_TIMEOUT_S for slow (e.g. local) models",
        )
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderError(
            f"could not connect to {ctx.label}{where} ({p.attempts} attempt{'s' if p.attempts != 1 else ''})",
            hint="check the network connection, or that the server is running at that address",
        )
    if isinstance(exc, (sdk.AuthenticationError, sdk.PermissionDeniedError)):
        status = getattr(exc, "status_code", "?")
        return AuthenticationError(
            f"{ctx.label} rejected the API key (HTTP {status}){suffix}",
            hint=f"check the key in {ctx.key_var} (or the key entered in the app) and that it may use this model",
        )
    if isinstance(exc, sdk.RateLimitError):
        return RateLimitError(
            f"{ctx.label} is still rate-limiting after {p.max_retries} retr{'y' if p.max_retries == 1 else 'ies'}{suffix}",
            hint="wait a minute and retry; lowering KGVIZ_WORKERS or raising KGVIZ_MAX_RETRIES also helps",
        )
    if isinstance(exc, sdk.APIResponseValidationError):
        return ProviderResponseError(f"{ctx.label} sent a response kgviz cannot read{suffix}")
    if isinstance(exc, sdk.APIStatusError):
        status = int(getattr(exc, "status_code", 0) or 0)
        if status >= 500:
            return ProviderResponseError(
                f"{ctx.label} answered with a server error (HTTP {status}) after {p.attempts} "
                f"attempt{'s' if p.attempts != 1 else ''}{suffix}",
                hint="the service may be overloaded or down; try again later",
            )
        return ProviderError(
            f"{ctx.label} refused the request (HTTP {status}){suffix}",
            hint="check the model name and that this model supports the request (e.g. JSON output)",
        )
    if isinstance(exc, json.JSONDecodeError):
        if looks_like_html(exc.doc):
            return html_reply(ctx)
        return ProviderResponseError(
            f"{ctx.label} sent a response body that is not valid JSON",
            hint="if this is a proxy or local server, check that its base URL points at the API (often ending in /v1)",
        )
    return ProviderError(f"{ctx.label} failed: {ctx.scrub(str(exc))[:_MAX_DETAIL]}")


_HTML = re.compile(r"^\s*(?:<!doctype\s+html|<html|<head|<body|<\?xml|<h1|<title|<p>|<pre>)", re.IGNORECASE)


def looks_like_html(body: object) -> bool:
    return isinstance(body, (str, bytes)) and bool(_HTML.match(body if isinstance(body, str) else body.decode("utf-8", "replace")))


def html_reply(ctx: ErrorContext) -> ProviderResponseError:
    where = f" at {ctx.base_url}" if ctx.base_url else ""
    return ProviderResponseError(
        f"{ctx.label}{where}: the server returned HTML, not an API reply",
        hint="the base URL probably points at a web page or a proxy's error page: for llama.cpp and "
             "Ollama it ends in /v1 (e.g. http://127.0.0.1:8080/v1)",
    )


def not_an_object(ctx: ErrorContext, reply: object) -> ProviderResponseError | None:
    """The SDKs hand back the body as text when the server did not send JSON: name what came."""
    if isinstance(reply, (str, bytes)):
        if looks_like_html(reply):
            return html_reply(ctx)
        text = reply if isinstance(reply, str) else reply.decode("utf-8", "replace")
        return malformed(ctx, f"plain text instead of a JSON API reply ({' '.join(text.split())[:80]!r})")
    return None


def no_text(ctx: ErrorContext, why: str) -> ProviderResponseError:
    """A 200 reply without any text is a failure, never "the model had nothing to say"."""
    return ProviderResponseError(
        f"{ctx.label} sent a reply with no text ({why})",
        hint="the chunk or question is retried on the next run; check the server's log if it repeats",
    )


def malformed(ctx: ErrorContext, what: str) -> ProviderResponseError:
    return ProviderResponseError(
        f"{ctx.label} sent a response kgviz cannot read: {what}",
        hint="if this is a proxy or local server, check that it speaks this API",
    )
