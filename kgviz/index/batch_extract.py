"""Batch extraction (``BuildParams.batch``, ``kgviz build --batch``): the chunks' extraction
requests go to the provider's batch endpoint (kgviz.providers.batch_api) at half the price, and the
replies are then read by the ordinary extraction pool (kgviz.index.extract) — same prompt, same
cache, same parser and grounding check — through ``BatchReplies``, an LLM that answers each request
with its batch reply.

1. One request per distinct prompt; its custom id is the LLM cache key of that exact request,
   so a reply lands in the cache where an interactive call would have put it. Prompts whose
   reply is already accepted in the cache are not sent (the pool replays them).
2. Before anything is sent, the workspace's batch journal (``JOURNAL_FILE``, beside the graph) is
   read: a batch that an earlier, stopped build submitted is waited for and collected, never
   submitted again. A new batch is written to the journal as soon as the provider returns its id.
3. While a batch runs, progress says submitted / in progress (finished of total) / done.
4. When it ends, every reply is stored in the LLM cache *pending* (kgviz.providers.cache): a build
   stopped after that finds it there and does not fetch or pay again. The requests that errored,
   expired or were cancelled — and those only — go into a new batch, up to ``MAX_ROUNDS``
   batches per build; what still has no reply is a failed chunk (re-asked by the next build).

Never paid twice, with one window left (documented, ours): a build killed between the provider
accepting a batch and the journal write (one local file write) does not know that batch.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from kgviz.errors import BuildCancelled, ConfigError, ProviderError
from kgviz.graph.store import GraphStore
from kgviz.index.params import BuildParams, ExtractProgress
from kgviz.prompts.extraction import EXTRACT_TRIPLES_TASK_NAME
from kgviz.providers.base import LLMBase
from kgviz.providers.batch_api import BATCH_PRICE_FACTOR, ENDED, BatchRequest, BatchStatus, batch_client, wait_seconds
from kgviz.providers.cache import CachedLLM, cache_key
from kgviz.reasoning import Reasoner, get_task
from kgviz.types import Chunk, Completion, Message, Usage

JOURNAL_FILE = "extract_batches.json"
MAX_ROUNDS = 3  # ours: batches one build submits (the first + two for what failed or expired)


@dataclass
class _Request:
    key: str
    body: dict[str, Any]


@dataclass
class Collected:
    """What the batches gave: a reply (stored pending in the cache) or the last failure reason."""

    replies: dict[str, Completion] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    batches: list[str] = field(default_factory=list)  # ids waited for or submitted by this build


class Journal:
    """The workspace's batches: [{"id", "llm", "keys", "submitted", "ended"}], one JSON file,
    replaced whole on each change (a kill leaves the old or the new file, never half of one)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.batches: list[dict[str, Any]] = json.loads(path.read_text("utf-8"))["batches"] if path.exists() else []

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"batches": self.batches}), "utf-8")
        os.replace(tmp, self.path)

    def open_batches(self, llm_id: str, keys: set[str]) -> list[dict[str, Any]]:
        return [b for b in self.batches if b["llm"] == llm_id and not b["ended"] and keys.intersection(b["keys"])]

    def add(self, batch_id: str, llm_id: str, keys: list[str]) -> dict[str, Any]:
        record = {"id": batch_id, "llm": llm_id, "keys": keys, "submitted": time.time(), "ended": False}
        self.batches.append(record)
        self.save()
        return record


class _HalfPrice:
    """The price table, with every call billed at the batch price (the Reasoner asks it)."""

    def __init__(self, prices: Any) -> None:
        self._prices = prices

    def cost(self, provider: str, model: str, input_tokens: int, output_tokens: int) -> float:
        return BATCH_PRICE_FACTOR * self._prices.cost(provider, model, input_tokens, output_tokens)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._prices, name)


class BatchReplies(LLMBase):
    """Answers a request with its batch reply; a request whose batch failed raises the failure (the
    pool records a failed chunk); any other request goes to the cached LLM (an accepted reply)."""

    def __init__(self, cached: CachedLLM, collected: Collected) -> None:
        self.cached = cached
        self.collected = collected
        self.provider, self.model, self.base_url = cached.provider, cached.model, cached.base_url

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        key = cache_key(provider=self.provider, model=self.model, base_url=self.base_url, system=system,
                        messages=messages, max_tokens=max_tokens, json_schema=json_schema)
        reply = self.collected.replies.get(key)
        if reply is not None:
            return reply
        if key in self.collected.errors:
            raise ProviderError(f"batch request failed: {self.collected.errors[key]}",
                                hint="run the build again: the chunk is asked in a new batch")
        return self.cached.complete(messages, system=system, max_tokens=max_tokens, json_schema=json_schema)

    def accept(self, completion: Completion) -> None:
        self.cached.accept(completion)

    def reject(self, completion: Completion, reason: str) -> None:
        self.cached.reject(completion, reason)


def batch_reasoner(
    store: GraphStore,
    reasoner: Reasoner,
    chunks: Sequence[Chunk],
    params: BuildParams,
    progress: ExtractProgress,
    cancel: threading.Event | None,
    titles: dict[str, str],
    done_before: int = 0,
) -> Reasoner:
    """Run ``chunks``' extraction requests through the provider's batches (module docstring) and
    return the reasoner the extraction pool reads the replies with."""
    llm = reasoner.llm
    client = batch_client(getattr(llm, "inner", llm))  # ConfigError: offline, local, recorded ...
    if not isinstance(llm, CachedLLM):
        raise ConfigError("batch extraction keeps its replies in the LLM cache, which is off for this build",
                          hint="build with the cache on (no --no-cache) to use --batch")
    task = get_task(EXTRACT_TRIPLES_TASK_NAME)
    requests: dict[str, _Request] = {}
    for c in chunks:
        prompt = task.render({"text": c.text, "max_triples": params.max_triples_per_chunk,
                              "title": titles.get(c.doc_id, "")})
        messages = [Message("user", prompt)]
        key = cache_key(provider=llm.provider, model=llm.model, base_url=llm.base_url, system=task.system,
                        messages=messages, max_tokens=task.max_tokens, json_schema=task.json_schema)
        if key not in requests and (llm.refresh or llm.cache.get(key) is None):
            body = client.llm.request_body(messages, task.system, task.max_tokens, task.json_schema)  # the adapter batch_client took
            requests[key] = _Request(key, body)
    collected = Collected()
    if requests:
        _collect(store, llm, client, requests, task.json_schema is not None, params, progress, cancel,
                 done_before, len(chunks) + done_before, collected)
    return Reasoner(BatchReplies(llm, collected), reasoner.embedder, reasoner.ledger,
                    _HalfPrice(reasoner.prices) if reasoner.prices is not None else None)


def _llm_id(llm: CachedLLM) -> str:
    return f"{llm.provider}:{llm.model}@{llm.base_url or ''}"


def _collect(store: GraphStore, llm: CachedLLM, client: Any, requests: dict[str, _Request], want_json: bool,
             params: BuildParams, progress: ExtractProgress,
             cancel: threading.Event | None, done_before: int, total: int, collected: Collected) -> None:
    journal = Journal(Path(store.path) / JOURNAL_FILE)
    llm_id = _llm_id(llm)

    def unread() -> set[str]:
        """Requests with no reply yet: a reply stored by an earlier collection counts (pending)."""
        for key in set(requests) - set(collected.replies):
            stored = llm.cache.unjudged(key)
            if stored is not None:
                text, reply_model, usage, raw = stored
                collected.replies[key] = Completion(text=text, usage=usage, model=reply_model, provider=llm.provider,
                                                    latency_s=0.0, raw={**raw, "cache_key": key})
                collected.errors.pop(key, None)
        return set(requests) - set(collected.replies)

    def report(message: str, status: BatchStatus | None = None) -> None:
        done = done_before + len(collected.replies) + (status.finished if status else 0)
        progress(min(done, total), total, message, Usage())

    for record in journal.open_batches(llm_id, unread()):  # an earlier build's batch: wait, never resubmit
        report(f"batch {record['id']} submitted by an earlier build: resuming")
        _wait_and_read(client, record, journal, llm, want_json, params, cancel, report, collected)
    rounds = 0
    while (todo := sorted(unread())) and rounds < MAX_ROUNDS:
        rounds += 1
        batch_id = client.submit([BatchRequest(k, requests[k].body) for k in todo])
        record = journal.add(batch_id, llm_id, todo)  # at once: a build stopped from here on resumes it
        report(f"batch {batch_id} submitted: {len(todo)} requests (round {rounds} of at most {MAX_ROUNDS})")
        _wait_and_read(client, record, journal, llm, want_json, params, cancel, report, collected)
    unread()


def _wait_and_read(client: Any, record: dict[str, Any], journal: Journal, llm: CachedLLM, want_json: bool,
                   params: BuildParams, cancel: threading.Event | None, report: Callable[..., None],
                   collected: Collected) -> None:
    batch_id = record["id"]
    collected.batches.append(batch_id)
    started = time.monotonic()
    while True:
        status = client.status(batch_id)
        if status.state == ENDED:
            break
        report(f"batch {batch_id} {status.provider_status}: {status.finished} of {status.total} requests finished", status)
        if cancel is not None and cancel.is_set():
            raise BuildCancelled(f"build stopped while batch {batch_id} runs at the provider",
                                 hint="run the build again: it waits for the same batch and pays nothing twice")
        time.sleep(wait_seconds(started, params.batch_poll_s))
    outcome = client.outcome(batch_id, record["keys"], want_json)
    for key, completion in outcome.replies.items():
        if key in record["keys"]:
            llm.cache.put(key, llm.provider, llm.model, completion, accepted=False)
            completion.raw["cache_key"] = key
            collected.replies[key] = completion
            collected.errors.pop(key, None)
    for key, why in outcome.errors.items():
        if key in record["keys"] and key not in collected.replies:
            collected.errors[key] = why
    record["ended"] = True
    journal.save()
    report(f"batch {batch_id} done ({status.provider_status}): {len(outcome.replies)} replies, "
           f"{len(outcome.errors)} failed")
