"""Recorded LLM replies: record once against a real model, replay forever without it.

A *recording* is one JSONL file, or a folder of them. Line 1 of a file is a header naming the
model that answered (``provider``, ``model``, ``base_url``: the identity the LLM cache keys on)
plus when, from which kgviz commit and how it was recorded. Every further line is one reply, in
the LLM cache's own row format (``kgviz.providers.cache``: ``key``, ``provider``, ``model``,
``text``, ``reply_model``, ``input_tokens``, ``output_tokens``, ``latency_s``, ``raw``,
``created``), so a reply is found by the same key the cache would compute for the request.

* ``RecordedLLM`` (spec ``recorded:<file or folder>``) answers only from the recording. A request
  it has no reply for raises ``RecordingMissError``: a replay never falls back to anything else.
  Its usage is the recorded usage (tokens, latency), so costs show what the real call cost.
* ``RecordingLLM`` wraps a live LLM: a request already in the recording is replayed, anything
  else goes to the model and is appended to the file at once (a killed recording keeps every
  reply it paid for, and a re-run resumes). Every reply is kept, including ones a task later
  fails to parse, so a replay reproduces failures too (unlike the cache, which must not keep a
  failure: a recording is a log of what the model said, not a store of accepted facts).

Several files may come from different models (say extraction by one, methods by another): a
request is looked up under each file's identity in folder order. The same key can hold several
replies (a repeated request, e.g. a retry): the n-th request of a key in one LLM instance gets the
n-th reply, and the last one after that. So a replay that repeats a recording session's requests
in the same order, through one instance, gets exactly the replies that session got.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from kgviz.errors import ConfigError, RecordingMissError
from kgviz.providers.base import LLM, LLMBase
from kgviz.providers.cache import cache_key
from kgviz.types import Completion, Message, Usage

FORMAT_VERSION = 1
HEADER_FIELD = "kgviz_recording"  # its value is FORMAT_VERSION; marks line 1 as the header
ROW_FIELDS = ("key", "provider", "model", "text", "reply_model", "input_tokens", "output_tokens",
              "latency_s", "raw", "created")
PROVIDER = "recorded"


@dataclass(frozen=True)
class Source:
    """The identity a file's replies are keyed under (what the live model was called as)."""

    provider: str
    model: str
    base_url: str | None


@dataclass(frozen=True)
class Reply:
    key: str
    text: str
    reply_model: str
    input_tokens: int
    output_tokens: int
    latency_s: float
    raw: dict[str, Any]
    file: str


@dataclass
class Recording:
    """Every reply of a file or folder, grouped by cache key."""

    path: Path
    headers: list[dict[str, Any]] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    replies: dict[str, list[Reply]] = field(default_factory=dict)

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(s.model for s in self.sources))

    def __len__(self) -> int:
        return sum(len(v) for v in self.replies.values())


def _bad(path: Path, line_no: int, reason: str) -> ConfigError:
    return ConfigError(f"{path}, line {line_no}: {reason}",
                       hint="re-export the recording (scripts/record_real_model.py) or point at another one")


def read_file(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, rows) of one recording file; ConfigError naming the line when it is malformed."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read the recording {path}: {exc}") from exc
    if not lines:
        raise _bad(path, 1, "the file is empty (a recording starts with a header line)")
    try:
        header = json.loads(lines[0])
    except ValueError as exc:
        raise _bad(path, 1, f"the header is not JSON ({exc})") from exc
    if not isinstance(header, dict) or header.get(HEADER_FIELD) != FORMAT_VERSION:
        raise _bad(path, 1, f"not a kgviz recording header (needs \"{HEADER_FIELD}\": {FORMAT_VERSION})")
    for name in ("provider", "model"):
        if not isinstance(header.get(name), str) or not header[name]:
            raise _bad(path, 1, f"the header names no {name}")
    rows = []
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise _bad(path, n, f"not JSON ({exc})") from exc
        missing = [f for f in ROW_FIELDS if f not in row] if isinstance(row, dict) else list(ROW_FIELDS)
        if missing:
            raise _bad(path, n, f"a reply row lacks {', '.join(missing)}")
        rows.append(row)
    return header, rows


def _is_recording(path: Path) -> bool:
    """A folder may hold other JSONL files (the recorded runs list): only files whose first line
    is a recording header are reply files."""
    try:
        with path.open(encoding="utf-8") as fh:
            return f'"{HEADER_FIELD}"' in fh.readline()
    except (OSError, UnicodeDecodeError):
        return False


def recording_files(path: Path) -> list[Path]:
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.glob("*.jsonl") if p.is_file() and _is_recording(p))
    if path.is_file():
        return [path]
    raise ConfigError(f"no recording at {path}",
                      hint="give a recording file (.jsonl) or a folder of them, e.g. recorded:sample_recorded")


def load_recording(path: str | Path) -> Recording:
    rec = Recording(Path(path))
    files = recording_files(rec.path)
    if not files:
        raise ConfigError(f"the folder {path} holds no recording (*.jsonl)")
    for f in files:
        header, rows = read_file(f)
        rec.headers.append({**header, "file": f.name})
        src = Source(header["provider"], header["model"], header.get("base_url"))
        if src not in rec.sources:
            rec.sources.append(src)
        for r in rows:
            raw = r["raw"] if isinstance(r["raw"], dict) else json.loads(r["raw"] or "{}")
            rec.replies.setdefault(r["key"], []).append(Reply(
                r["key"], str(r["text"]), str(r["reply_model"]), int(r["input_tokens"]),
                int(r["output_tokens"]), float(r["latency_s"]), raw, f.name))
    return rec


_LOADED: dict[tuple[str, tuple[tuple[str, int, int], ...]], Recording] = {}
_LOADED_LOCK = threading.Lock()


def cached_recording(path: str | Path) -> Recording:
    """load_recording, memoised per process until a file changes (the app builds an LLM per action)."""
    files = recording_files(Path(path))
    stamp = tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    key = (str(Path(path).resolve()), stamp)
    with _LOADED_LOCK:
        if key not in _LOADED:
            _LOADED[key] = load_recording(path)
        return _LOADED[key]


class _Replayer:
    """The n-th request of a key gets the n-th recorded reply (then the last one)."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def find(self, messages: Sequence[Message], system: str | None, max_tokens: int,
             json_schema: dict[str, Any] | None, *, repeat_last: bool = True) -> Reply | None:
        """``repeat_last=False`` (recording): a key whose replies are used up is a miss, so the
        live model is asked again, as it would have been."""
        for src in self.recording.sources:
            key = cache_key(provider=src.provider, model=src.model, base_url=src.base_url, system=system,
                            messages=messages, max_tokens=max_tokens, json_schema=json_schema)
            replies = self.recording.replies.get(key)
            if not replies:
                continue
            with self._lock:
                n = self._seen.get(key, 0)
                if n >= len(replies) and not repeat_last:
                    break
                self._seen[key] = n + 1
                self.hits += 1
            return replies[min(n, len(replies) - 1)]
        with self._lock:
            self.misses += 1
        return None

    def add(self, reply: Reply) -> None:
        """A reply just recorded: later identical requests in this session come after it."""
        with self._lock:
            replies = self.recording.replies.setdefault(reply.key, [])
            replies.append(reply)
            self._seen[reply.key] = len(replies)


def _describe(system: str | None, messages: Sequence[Message]) -> str:
    first = (messages[-1].content if messages else "").strip().splitlines()
    head = first[0][:80] if first else ""
    return f"a prompt starting {head!r}" if head else "this prompt"


class RecordedLLM(LLMBase):
    """Spec ``recorded:<path>``: replay only. ``hits`` / ``misses`` count lookups."""

    provider = PROVIDER

    def __init__(self, path: str | Path, recording: Recording | None = None) -> None:
        self.path = Path(path)
        self.recording = recording if recording is not None else cached_recording(self.path)
        self.model = "+".join(self.recording.models)
        self._replay = _Replayer(self.recording)

    @property
    def hits(self) -> int:
        return self._replay.hits

    @property
    def misses(self) -> int:
        return self._replay.misses

    def __repr__(self) -> str:
        return f"RecordedLLM({str(self.path)!r}, model={self.model!r}, replies={len(self.recording)})"

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        reply = self._replay.find(messages, system, max_tokens, json_schema)
        if reply is None:
            raise RecordingMissError(
                f"the recording {self.path} has no reply for {_describe(system, messages)} "
                f"(recorded with {self.model})",
                hint="a recording replays exactly what was recorded: the same documents, build options, "
                     "embedder, questions and prompts; use the offline mode or a live model for anything else",
            )
        usage = Usage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, calls=1,
                      latency_s=reply.latency_s)
        return Completion(text=reply.text, usage=usage, model=reply.reply_model, provider=self.provider,
                          latency_s=reply.latency_s,
                          raw={**reply.raw, "recorded": True, "recording_file": reply.file, "cache_key": reply.key})


class RecordingWriter:
    """Appends reply rows to one file, header first; each row is flushed as it is written."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        if self.path.exists() and self.path.stat().st_size:
            old, _ = read_file(self.path)
            same = all(old.get(k) == header.get(k) for k in ("provider", "model", "base_url"))
            if not same:
                raise ConfigError(f"{self.path} was recorded from {old.get('provider')}:{old.get('model')}, "
                                  f"not {header.get('provider')}:{header.get('model')}",
                                  hint="record into another file or folder")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({HEADER_FIELD: FORMAT_VERSION, **header}, sort_keys=True) + "\n",
                                 encoding="utf-8")

    def append(self, key: str, provider: str, model: str, completion: Completion) -> None:
        row = {"key": key, "provider": provider, "model": model, "text": completion.text,
               "reply_model": completion.model, "input_tokens": completion.usage.input_tokens,
               "output_tokens": completion.usage.output_tokens, "latency_s": round(completion.latency_s, 3),
               "raw": completion.raw, "created": round(time.time(), 3)}
        line = json.dumps(row, ensure_ascii=False, sort_keys=True, default=str) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)


class RecordingLLM(LLMBase):
    """A live LLM whose every reply is appended to a recording; requests already recorded (in
    ``folder``, any file) are replayed instead of sent, so an interrupted recording resumes."""

    def __init__(self, inner: LLM, folder: Path, file_name: str, header: dict[str, Any]) -> None:
        if inner.is_offline:
            raise ConfigError("the offline mode has no replies to record")
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model
        self.base_url: str | None = getattr(inner, "base_url", None)
        ident = {"provider": self.provider, "model": self.model, "base_url": self.base_url}
        self.writer = RecordingWriter(Path(folder) / file_name, {**header, **ident})
        self._replay = _Replayer(load_recording(folder))
        self.recorded = 0  # replies this instance fetched from the model

    @property
    def replayed(self) -> int:
        return self._replay.hits

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        reply = self._replay.find(messages, system, max_tokens, json_schema, repeat_last=False)
        if reply is not None:
            usage = Usage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, calls=1,
                          latency_s=reply.latency_s)
            return Completion(reply.text, usage, reply.reply_model, self.provider, latency_s=reply.latency_s,
                              raw={**reply.raw, "recorded": True})
        completion = self.inner.complete(messages, system=system, max_tokens=max_tokens, json_schema=json_schema)
        key = cache_key(provider=self.provider, model=self.model, base_url=self.base_url, system=system,
                        messages=messages, max_tokens=max_tokens, json_schema=json_schema)
        self.writer.append(key, self.provider, self.model, completion)
        self._replay.add(Reply(key, completion.text, completion.model, completion.usage.input_tokens,
                               completion.usage.output_tokens, completion.latency_s, completion.raw,
                               self.writer.path.name))
        self.recorded += 1
        return completion


def header_summary(headers: Iterable[dict[str, Any]]) -> str:
    """One line per file for the UI: which model recorded what, when."""
    parts = []
    for h in headers:
        when = str(h.get("recorded_at", ""))[:10]
        parts.append(f"{h.get('phase', h.get('file', '?'))}: {h.get('model')}" + (f" ({when})" if when else ""))
    return "; ".join(parts)
