"""The providers' batch endpoints through their own SDKs: OpenAI's Batch API (a JSONL file of
requests uploaded with ``files.create(purpose="batch")``, ``batches.create`` on /v1/responses,
results in an output file and an error file) and Anthropic's Message Batches
(``messages.batches.create`` with the requests inline, results as JSONL from ``results``).

Both take up to 24 hours and bill the same tokens at half the interactive price
(``BATCH_PRICE_FACTOR``). A request's body is built by the interactive adapter itself
(``request_body``) and a result is read by it (``read_reply``), so a batch reply becomes the same
Completion an interactive call gives, and the same reply checks apply (no text, no usage, ...).

Three calls, the same for both providers: ``submit`` (requests -> batch id), ``status`` (how far
the batch is), ``outcome`` (once ended: a Completion per succeeded request, a reason per request
that errored, expired or was cancelled — or is simply missing from the results).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from kgviz.errors import ConfigError, KgvizError
from kgviz.providers.anthropic_llm import AnthropicLLM
from kgviz.providers.openai_llm import OpenAIResponsesLLM
from kgviz.providers.retry import map_sdk_error
from kgviz.types import Completion

# OpenAI Batch API and Anthropic Message Batches: "50% of the standard price" on both (their
# pricing pages); the tokens counted are the same.
BATCH_PRICE_FACTOR = 0.5
BATCH_PROVIDERS = ("openai", "anthropic")  # LLM spec kinds with a batch endpoint
OPENAI_ENDPOINT = "/v1/responses"
COMPLETION_WINDOW = "24h"  # the only window OpenAI offers; Anthropic's batches also end within 24 h
IN_PROGRESS, ENDED = "in_progress", "ended"
# OpenAI batch statuses that are over (nothing more will finish)
_OPENAI_OVER = {"completed", "expired", "cancelled", "failed"}


@dataclass(frozen=True)
class BatchRequest:
    custom_id: str  # <= 64 characters of [A-Za-z0-9_-] (Anthropic's rule; OpenAI's is looser)
    body: dict[str, Any]


@dataclass(frozen=True)
class BatchStatus:
    batch_id: str
    state: str  # IN_PROGRESS or ENDED
    provider_status: str  # the provider's own word: validating, in_progress, finalizing, completed, expired, ended ...
    total: int
    succeeded: int
    failed: int  # errored, expired or cancelled so far

    @property
    def finished(self) -> int:
        return self.succeeded + self.failed


@dataclass
class BatchOutcome:
    replies: dict[str, Completion] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # custom_id -> why it has no reply


def batch_client(llm: Any) -> "OpenAIBatches | AnthropicBatches":
    """The batch client for an interactive adapter (OpenAI Responses or Anthropic Messages)."""
    if isinstance(llm, AnthropicLLM):
        return AnthropicBatches(llm)
    if isinstance(llm, OpenAIResponsesLLM):
        return OpenAIBatches(llm)
    raise ConfigError(
        f"batch extraction needs an OpenAI (openai:<model>) or Anthropic (anthropic:<model>) model; "
        f"{getattr(llm, 'provider', type(llm).__name__)}:{getattr(llm, 'model', '?')} has no batch endpoint",
        hint="build without --batch (local and OpenAI-compatible servers are asked interactively)",
    )


class _Client:
    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self._sdk = llm._sdk
        self._client = llm._client
        self._ctx = llm._ctx

    def _sdk_call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (self._sdk.APIError, json.JSONDecodeError) as exc:
            raise map_sdk_error(exc, self._sdk, self._ctx) from exc

    def _read(self, custom_id: str, body: Any, want_json: bool, outcome: BatchOutcome) -> None:
        try:
            outcome.replies[custom_id] = self._reply(body, want_json)
        except KgvizError as exc:  # no text, no usage ...: that request failed, the others stand
            outcome.errors[custom_id] = exc.user_message()

    def _reply(self, body: Any, want_json: bool) -> Completion:
        raise NotImplementedError


class OpenAIBatches(_Client):
    """OpenAI's Batch API on /v1/responses."""

    def submit(self, requests: Sequence[BatchRequest]) -> str:
        lines = "".join(json.dumps({"custom_id": r.custom_id, "method": "POST", "url": OPENAI_ENDPOINT,
                                    "body": r.body}, ensure_ascii=False) + "\n" for r in requests)
        upload = self._sdk_call(self._client.files.create, file=("kgviz-extract.jsonl", lines.encode("utf-8")),
                                purpose="batch")
        batch = self._sdk_call(self._client.batches.create, input_file_id=upload.id, endpoint=OPENAI_ENDPOINT,
                               completion_window=COMPLETION_WINDOW)
        return str(batch.id)

    def status(self, batch_id: str) -> BatchStatus:
        batch = self._sdk_call(self._client.batches.retrieve, batch_id)
        counts = batch.request_counts
        total, done, failed = (int(getattr(counts, k, 0) or 0) for k in ("total", "completed", "failed"))
        state = ENDED if batch.status in _OPENAI_OVER else IN_PROGRESS
        return BatchStatus(batch_id, state, str(batch.status), total, done, failed)

    def outcome(self, batch_id: str, custom_ids: Iterable[str], want_json: bool) -> BatchOutcome:
        batch = self._sdk_call(self._client.batches.retrieve, batch_id)
        out = BatchOutcome()
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            text = self._sdk_call(self._client.files.content, file_id).text
            for line in text.splitlines():
                if line.strip():
                    self._line(json.loads(line), want_json, out)
        _missing(out, custom_ids, f"batch {batch_id} ended ({batch.status}) without a result for it")
        return out

    def _line(self, row: dict[str, Any], want_json: bool, out: BatchOutcome) -> None:
        custom_id = str(row.get("custom_id"))
        response, error = row.get("response") or {}, row.get("error")
        if error:
            out.errors[custom_id] = f"{error.get('code') or 'error'}: {error.get('message') or ''}".strip()
        elif int(response.get("status_code") or 0) != 200:
            message = ((response.get("body") or {}).get("error") or {}).get("message") or ""
            out.errors[custom_id] = f"HTTP {response.get('status_code')}: {message}".strip()
        else:
            self._read(custom_id, response.get("body"), want_json, out)

    def _reply(self, body: Any, want_json: bool) -> Completion:
        return self.llm.read_reply(body, 0.0, int((body or {}).get("max_output_tokens") or 0), want_json)


class AnthropicBatches(_Client):
    """Anthropic's Message Batches (/v1/messages/batches)."""

    def submit(self, requests: Sequence[BatchRequest]) -> str:
        batch = self._sdk_call(self._client.messages.batches.create,
                               requests=[{"custom_id": r.custom_id, "params": r.body} for r in requests])
        return str(batch.id)

    def status(self, batch_id: str) -> BatchStatus:
        batch = self._sdk_call(self._client.messages.batches.retrieve, batch_id)
        c = batch.request_counts
        failed = c.errored + c.expired + c.canceled
        total = c.processing + c.succeeded + failed
        state = ENDED if batch.processing_status == "ended" else IN_PROGRESS
        return BatchStatus(batch_id, state, str(batch.processing_status), total, c.succeeded, failed)

    def outcome(self, batch_id: str, custom_ids: Iterable[str], want_json: bool) -> BatchOutcome:
        out = BatchOutcome()
        for row in self._sdk_call(self._client.messages.batches.results, batch_id):
            result = row.result
            if result.type == "succeeded":
                self._read(row.custom_id, result.message, want_json, out)
            elif result.type == "errored":
                err = getattr(result.error, "error", None)
                out.errors[row.custom_id] = f"errored: {getattr(err, 'message', '') or getattr(err, 'type', '')}"
            else:  # expired, canceled
                out.errors[row.custom_id] = str(result.type)
        _missing(out, custom_ids, f"batch {batch_id} ended without a result for it")
        return out

    def _reply(self, body: Any, want_json: bool) -> Completion:
        return self.llm.read_reply(body, 0.0, want_json)


def _missing(out: BatchOutcome, custom_ids: Iterable[str], why: str) -> None:
    for cid in custom_ids:
        if cid not in out.replies and cid not in out.errors:
            out.errors[cid] = why


def wait_seconds(started: float, poll_s: float) -> float:
    """Seconds to sleep before the next status call (ours: ``poll_s``, but at least a tenth of the
    time waited so far, up to 5 minutes, so a day-long batch is not polled every few seconds)."""
    return max(poll_s, min(300.0, 0.1 * (time.monotonic() - started)))
