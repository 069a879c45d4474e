"""A disk cache of LLM completions (sqlite), so replaying a build or a question is free and
deterministic.

Key: sha256 over (provider, model, base_url, system, messages, max_tokens, json_schema), as
canonical JSON. The API key is not part of the key and is never written: a completion does not
depend on who paid for it.

Accounting of a hit (documented choice): ``Usage(calls=0, cached_calls=1, tokens 0, latency =
the lookup time)``. ``calls`` counts requests that reached a provider, so ledger totals and $ stay
honest when a run is replayed; ``cached_calls`` says how many answers came from disk. The tokens
the original call used are kept in ``Completion.raw["cached_usage"]`` for display.

Thread-safe: extraction calls ``complete`` from a thread pool. One connection is shared under a
lock (only the short sqlite reads/writes are serialised, never the provider call). WAL mode and
a busy timeout let the Streamlit server and a CLI process share the file.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from kgviz.errors import ProviderError
from kgviz.providers.base import LLM
from kgviz.types import Completion, Message, Usage

CACHE_FILE = "llm_cache.sqlite3"
KEY_VERSION = 1  # bump when the key recipe changes, so old entries are simply never hit

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    reply_model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    raw TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(
    *,
    provider: str,
    model: str,
    base_url: str | None,
    system: str | None,
    messages: Sequence[Message],
    max_tokens: int,
    json_schema: dict[str, Any] | None,
) -> str:
    payload = {
        "v": KEY_VERSION,
        "provider": provider,
        "model": model,
        "base_url": base_url,
        "system": system,
        "messages": [[m.role, m.content] for m in messages],
        "max_tokens": max_tokens,
        "json_schema": json_schema,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CompletionCache:
    """The sqlite file. Rows hold the request's provider/model and the reply, nothing else."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)
            self._conn.commit()
        except sqlite3.Error as exc:
            raise ProviderError(
                f"cannot open the LLM cache at {self.path}: {exc}",
                hint="check that the folder is writable (KGVIZ_HOME), or delete a corrupt cache file",
            ) from exc
        self._lock = threading.Lock()

    def _failed(self, exc: sqlite3.Error) -> ProviderError:
        return ProviderError(
            f"the LLM cache at {self.path} failed: {exc}",
            hint="check free disk space and permissions; deleting the file only loses cached replies",
        )

    def get(self, key: str) -> tuple[str, str, Usage, dict[str, Any]] | None:
        try:
            with self._lock:
                row = self._conn.execute(
                    "SELECT text, reply_model, input_tokens, output_tokens, latency_s, raw FROM completions WHERE key = ?",
                    (key,),
                ).fetchone()
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc
        if row is None:
            return None
        text, reply_model, tin, tout, latency, raw = row
        return text, reply_model, Usage(input_tokens=tin, output_tokens=tout, calls=1, latency_s=latency), json.loads(raw)

    def put(self, key: str, provider: str, model: str, completion: Completion) -> None:
        row = (
            key,
            provider,
            model,
            completion.text,
            completion.model,
            completion.usage.input_tokens,
            completion.usage.output_tokens,
            completion.latency_s,
            json.dumps(completion.raw, default=str),
            time.time(),
        )
        try:
            with self._lock:
                self._conn.execute("INSERT OR REPLACE INTO completions VALUES (?,?,?,?,?,?,?,?,?,?)", row)
                self._conn.commit()
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc

    def stats(self) -> dict[str, int]:
        with self._lock:
            n, tin, tout = self._conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(input_tokens),0), COALESCE(SUM(output_tokens),0) FROM completions"
            ).fetchone()
        return {"entries": n, "input_tokens": tin, "output_tokens": tout}

    def clear(self) -> int:
        with self._lock:
            n = self._conn.execute("DELETE FROM completions").rowcount
            self._conn.commit()
        return n

    def close(self) -> None:
        with _OPEN_LOCK:
            if _OPEN.get(self.path.resolve()) is self:
                del _OPEN[self.path.resolve()]
        with self._lock:
            self._conn.close()


class CachedLLM:
    """Wraps any online LLM; same protocol. Errors are never cached."""

    def __init__(self, inner: LLM, cache: CompletionCache) -> None:
        if inner.is_offline:
            raise ValueError("the offline LLM produces no completions to cache")
        self.inner = inner
        self.cache = cache
        self.provider = inner.provider
        self.model = inner.model
        self.base_url: str | None = getattr(inner, "base_url", None)

    @property
    def is_offline(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CachedLLM({self.inner!r}, cache={str(self.cache.path)!r})"

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int = 1024,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        t0 = time.perf_counter()
        key = cache_key(
            provider=self.provider,
            model=self.model,
            base_url=self.base_url,
            system=system,
            messages=messages,
            max_tokens=max_tokens,
            json_schema=json_schema,
        )
        hit = self.cache.get(key)
        if hit is not None:
            text, reply_model, original, raw = hit
            latency = time.perf_counter() - t0
            raw = {**raw, "cache_key": key, "cached_usage": original.to_dict()}
            return Completion(
                text=text,
                usage=Usage(calls=0, cached_calls=1, latency_s=latency),
                model=reply_model,
                provider=self.provider,
                cached=True,
                latency_s=latency,
                raw=raw,
            )
        completion = self.inner.complete(messages, system=system, max_tokens=max_tokens, json_schema=json_schema)
        self.cache.put(key, self.provider, self.model, completion)
        return completion


def open_cache(cache_dir: Path) -> CompletionCache:
    """One CompletionCache per file per process, so every CachedLLM shares its connection."""
    path = (Path(cache_dir) / CACHE_FILE).resolve()
    with _OPEN_LOCK:
        cache = _OPEN.get(path)
        if cache is None:
            cache = _OPEN[path] = CompletionCache(path)
        return cache


_OPEN: dict[Path, CompletionCache] = {}
_OPEN_LOCK = threading.Lock()
