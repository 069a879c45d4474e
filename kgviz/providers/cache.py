"""A disk cache of LLM completions (sqlite), so replaying a build or a question is free and
deterministic.

Key: sha256 over (provider, model, base_url, system, messages, max_tokens, json_schema), as
canonical JSON. The API key is not part of the key and is never written: a completion does not
depend on who paid for it.

Accounting of a hit (documented choice): ``Usage(calls=0, cached_calls=1, tokens 0, latency =
the lookup time)``. ``calls`` counts requests that reached a provider, so ledger totals and $ stay
honest when a run is replayed; ``cached_calls`` says how many answers came from disk. The tokens
the original call used are kept in ``Completion.raw["cached_usage"]`` for display.

Only accepted replies are replayed (issue 15: a cached failure is a lost fact, replayed forever).
A reply from the provider is written at once as a *pending* row (so a failed reply is never lost:
it stays on disk to inspect) and becomes replayable only when the caller, having parsed it, calls
``accept``; ``reject`` marks it unusable with a reason. Lookups ignore pending and rejected rows,
so the next run asks the model again. Rows written before this flag existed count as accepted
(their replies cost money); one that no longer parses is rejected on first replay
(``kgviz.reasoning`` then asks again). ``refresh=True`` skips lookups (re-ask everything, keep
the accepted answers).

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
from kgviz.providers.base import LLM, LLMBase
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
    created REAL NOT NULL,
    accepted INTEGER NOT NULL DEFAULT 1,
    rejection TEXT NOT NULL DEFAULT ''
)
"""
_COLUMNS = "key, provider, model, text, reply_model, input_tokens, output_tokens, latency_s, raw, created, accepted, rejection"
# (column, DDL) added to caches created before the column existed; old rows count as accepted
_MIGRATIONS = (
    ("accepted", "ALTER TABLE completions ADD COLUMN accepted INTEGER NOT NULL DEFAULT 1"),
    ("rejection", "ALTER TABLE completions ADD COLUMN rejection TEXT NOT NULL DEFAULT ''"),
)


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
            have = {r[1] for r in self._conn.execute("PRAGMA table_info(completions)")}
            for column, ddl in _MIGRATIONS:
                if column not in have:
                    self._conn.execute(ddl)
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
        return self._reply(key, "accepted = 1")

    def unjudged(self, key: str) -> tuple[str, str, Usage, dict[str, Any]] | None:
        """A reply stored pending and never rejected: it reached us but no task has read it yet (a
        batch reply collected by a build that was then stopped; kgviz.index.batch_extract)."""
        return self._reply(key, "accepted = 0 AND rejection = ''")

    def _reply(self, key: str, state: str) -> tuple[str, str, Usage, dict[str, Any]] | None:
        """The stored reply for ``key`` in ``state`` (a fixed SQL condition of this class, never input)."""
        try:
            with self._lock:
                row = self._conn.execute(
                    "SELECT text, reply_model, input_tokens, output_tokens, latency_s, raw FROM completions "
                    f"WHERE key = ? AND {state}",
                    (key,),
                ).fetchone()
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc
        if row is None:
            return None
        text, reply_model, tin, tout, latency, raw = row
        return text, reply_model, Usage(input_tokens=tin, output_tokens=tout, calls=1, latency_s=latency), json.loads(raw)

    def put(self, key: str, provider: str, model: str, completion: Completion, *, accepted: bool = True) -> None:
        """Store a reply. A pending (``accepted=False``) row never replaces an accepted one: a
        refreshed call whose new reply fails must not cost the good answer already on disk."""
        row = (
            key,
            provider,
            model,
            completion.text,
            completion.model,
            completion.usage.input_tokens,
            completion.usage.output_tokens,
            completion.latency_s,
            json.dumps({k: v for k, v in completion.raw.items() if k not in _EPHEMERAL}, default=str),
            time.time(),
            int(accepted),
            "",
        )
        sql = f"INSERT INTO completions ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(key) DO UPDATE SET " + ", ".join(
            f"{c} = excluded.{c}" for c in _COLUMNS.split(", ")[1:]
        )
        if not accepted:
            sql += " WHERE completions.accepted = 0"
        try:
            with self._lock:
                self._conn.execute(sql, row)
                self._conn.commit()
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc

    def reject(self, key: str, reason: str) -> None:
        """Mark a row unusable (kept on disk for inspection, never replayed)."""
        try:
            with self._lock:
                self._conn.execute("UPDATE completions SET accepted = 0, rejection = ? WHERE key = ?", (reason[:500], key))
                self._conn.commit()
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc

    def rejected(self) -> list[tuple[str, str, str]]:
        """(key, text, reason) of every pending or rejected row, oldest first."""
        with self._lock:
            return [tuple(r) for r in self._conn.execute(
                "SELECT key, text, rejection FROM completions WHERE accepted = 0 ORDER BY created, key")]

    def stats(self) -> dict[str, int]:
        with self._lock:
            n, tin, tout = self._conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(input_tokens),0), COALESCE(SUM(output_tokens),0) FROM completions "
                "WHERE accepted = 1"
            ).fetchone()
            bad = self._conn.execute("SELECT COUNT(*) FROM completions WHERE accepted = 0").fetchone()[0]
        return {"entries": n, "input_tokens": tin, "output_tokens": tout, "unaccepted": bad}

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


_EPHEMERAL = ("cache_key", "cached_usage")  # per-lookup annotations, not part of the stored reply


class CachedLLM(LLMBase):
    """Wraps any online LLM; same protocol. Provider errors are never stored; a reply is stored
    pending and replayed only after ``accept`` (see the module doc). ``refresh`` skips lookups."""

    def __init__(self, inner: LLM, cache: CompletionCache, *, refresh: bool = False) -> None:
        if inner.is_offline:
            raise ValueError("the offline LLM produces no completions to cache")
        self.inner = inner
        self.cache = cache
        self.provider = inner.provider
        self.model = inner.model
        self.base_url: str | None = getattr(inner, "base_url", None)
        self.refresh = refresh

    def __repr__(self) -> str:
        return f"CachedLLM({self.inner!r}, cache={str(self.cache.path)!r})"

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
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
        hit = None if self.refresh else self.cache.get(key)
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
        self.cache.put(key, self.provider, self.model, completion, accepted=False)
        completion.raw["cache_key"] = key
        return completion

    def accept(self, completion: Completion) -> None:
        """The caller parsed this reply: make it replayable. A replayed (cached) reply is already."""
        key = completion.raw.get("cache_key")
        if key and not completion.cached:
            self.cache.put(str(key), self.provider, self.model, completion, accepted=True)

    def reject(self, completion: Completion, reason: str) -> None:
        """The caller could not use this reply: never replay it (a replayed one included)."""
        key = completion.raw.get("cache_key")
        if key:
            self.cache.reject(str(key), reason)


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
