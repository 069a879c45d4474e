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

A recording is read as untrusted input (a file can be tampered with or truncated): every line is
checked for encoding, size, nesting depth and each field's type before it is used, and a bad line
is a RecordingError naming the file and the line (the CLI exits 2; the app shows the message).

Several files may come from different models (say extraction by one, methods by another): a
request is looked up under each file's identity in folder order. The same key can hold several
replies (a repeated request, e.g. a retry): the n-th request of a key in one LLM instance gets the
n-th reply, and the last one after that. So a replay that repeats a recording session's requests
in the same order, through one instance, gets exactly the replies that session got.
"""
from __future__ import annotations

import json
import math
import re
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from kgviz.errors import ConfigError, RecordingError, RecordingMissError
from kgviz.ingest.collect import file_kind, not_regular
from kgviz.ingest.jsonl import iter_lines
from kgviz.ingest.limits import json_depth_exceeds
from kgviz.providers.base import LLM, LLMBase
from kgviz.providers.cache import cache_key
from kgviz.types import Completion, Message, Usage

FORMAT_VERSION = 1
HEADER_FIELD = "kgviz_recording"  # its value is FORMAT_VERSION; marks line 1 as the header
ROW_FIELDS = ("key", "provider", "model", "text", "reply_model", "input_tokens", "output_tokens",
              "latency_s", "raw", "created")
PROVIDER = "recorded"
# Limits of a recording read as untrusted input (ours): a reply line holds one reply (the sample's
# longest is 3.5k characters), nests a few levels (raw provider metadata), counts tokens and seconds.
MAX_LINE_CHARS = 2_000_000
MAX_DEPTH = 32
MAX_FILE_BYTES = 512 * 1024 * 1024
MAX_NUMBER = 10**12
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


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


def _bad(path: Path, line_no: int, reason: str) -> RecordingError:
    return RecordingError(f"{path}, line {line_no}: {reason}",
                          hint="re-export the recording (scripts/record_real_model.py) or point at another one")


def _shown(value: Any) -> str:
    kind = {str: "a string", bool: "a boolean", int: "a number", float: "a number", list: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)
    text = json.dumps(value, ensure_ascii=True, default=str)
    return f"{kind} ({text[:40] + '…' if len(text) > 40 else text})"


def _binary(line: str) -> str | None:
    """Why ``line`` looks binary: JSON never holds a raw control character (strings escape them)."""
    m = _CONTROL_RE.search(line)
    return None if m is None else (f"holds the control byte 0x{ord(m.group()):02x} at column {m.start() + 1} "
                                   "(is this a binary file? a recording is UTF-8 text)")


def _parse_line(path: Path, n: int, line: str) -> Any:
    """One line's JSON, its size and depth checked before parsing (a line nested 100k deep
    overflowed json's parser with RecursionError)."""
    if len(line) > MAX_LINE_CHARS:
        raise _bad(path, n, f"the line is {len(line):,} characters, over the limit of {MAX_LINE_CHARS:,}")
    binary = _binary(line)
    if binary:
        raise _bad(path, n, binary)
    if json_depth_exceeds(line, MAX_DEPTH):
        raise _bad(path, n, f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(line)
    except (ValueError, RecursionError) as exc:  # ValueError: bad JSON, or an integer of 4,300+ digits
        raise _bad(path, n, f"not JSON ({str(exc)[:120]})") from None


def _check_header(path: Path, header: Any) -> dict[str, Any]:
    if not isinstance(header, dict) or header.get(HEADER_FIELD) != FORMAT_VERSION \
            or isinstance(header.get(HEADER_FIELD), bool):
        raise _bad(path, 1, f"not a kgviz recording header (needs \"{HEADER_FIELD}\": {FORMAT_VERSION})")
    for name in ("provider", "model"):
        if not isinstance(header.get(name), str) or not header[name]:
            raise _bad(path, 1, f"the header names no {name}")
    if header.get("base_url") is not None and not isinstance(header["base_url"], str):
        raise _bad(path, 1, f"\"base_url\" must be text or null, not {_shown(header['base_url'])}")
    return header


def _number(value: Any, *, whole: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float) if not whole else int):
        return False
    return math.isfinite(value) and 0 <= value <= MAX_NUMBER


def _check_row(path: Path, n: int, row: Any) -> dict[str, Any]:
    """A reply row with every field of the type ``load_recording`` reads; ``raw`` as a dict."""
    if not isinstance(row, dict):
        raise _bad(path, n, f"a reply row is a JSON object, not {_shown(row)}")
    missing = [f for f in ROW_FIELDS if f not in row]
    if missing:
        raise _bad(path, n, f"a reply row lacks {', '.join(missing)}")
    for name in ("key", "provider", "model", "text", "reply_model"):
        if not isinstance(row[name], str):
            raise _bad(path, n, f"\"{name}\" must be text, not {_shown(row[name])}")
    if not row["key"]:
        raise _bad(path, n, "\"key\" is empty")
    for name in ("input_tokens", "output_tokens"):
        if not _number(row[name], whole=True):
            raise _bad(path, n, f"\"{name}\" must be a whole number of tokens (0 to {MAX_NUMBER:,}), "
                                f"not {_shown(row[name])}")
    for name in ("latency_s", "created"):
        if not _number(row[name], whole=False):
            raise _bad(path, n, f"\"{name}\" must be a number of seconds (0 to {MAX_NUMBER:,}), "
                                f"not {_shown(row[name])}")
    raw = row["raw"]
    if isinstance(raw, str):  # older rows kept the provider's JSON as text
        raw = _parse_line(path, n, raw) if raw.strip() else {}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _bad(path, n, f"\"raw\" must be a JSON object, not {_shown(raw)}")
    return {**row, "raw": raw}


def _read_bytes(path: Path) -> bytes:
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # never opened: a FIFO would wait for a writer
            raise RecordingError(f"the recording {path} is {file_kind(info.st_mode)}, not a file")
        if info.st_size > MAX_FILE_BYTES:
            raise RecordingError(f"the recording {path} is {info.st_size:,} bytes, over the limit of "
                                 f"{MAX_FILE_BYTES:,}", hint="split it into several files in one folder")
        with path.open("rb") as fh:
            return fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise RecordingError(f"cannot read the recording {path}: {exc.strerror or exc}") from exc


def read_file(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, rows) of one recording file, read as untrusted input: every line is checked
    (UTF-8, size, nesting depth, JSON, each field's type) before it is used, and anything wrong
    is a RecordingError naming the file and the line."""
    path = Path(path)
    data = _read_bytes(path)
    if not data.strip():
        raise _bad(path, 1, "the file is empty (a recording starts with a header line)")
    header: dict[str, Any] | None = None
    rows = []
    for n, line, why in iter_lines(data):
        if line is None:
            raise _bad(path, n, f"{why}: a recording is UTF-8 text (is this a binary file?)")
        if header is None:
            header = _check_header(path, _parse_line(path, n, line))
        elif line.strip():
            rows.append(_check_row(path, n, _parse_line(path, n, line)))
    assert header is not None
    return header, rows


def header_problem(path: Path, folder: Path) -> str | None:
    """Why ``path`` in a recording folder is not a reply file (None: it is one). A folder may hold
    other JSONL files (the recorded runs list); only files whose first line is a recording header
    are reply files. Decided from the first line only, read without following the file further."""
    odd = not_regular(path, folder)
    if odd is not None:
        return odd
    try:
        with path.open("rb") as fh:
            first = fh.readline(MAX_LINE_CHARS + 1)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not first.strip():
        return "empty" if not first else "line 1 is blank, not a recording header"
    try:
        text = first.decode("utf-8-sig")
    except UnicodeDecodeError:
        return "line 1 is not UTF-8 text (is this a binary file?)"
    binary = _binary(text.rstrip("\r\n"))
    if binary:
        return f"line 1 {binary}"
    if f'"{HEADER_FIELD}"' not in text:
        return f"line 1 is not a recording header (needs \"{HEADER_FIELD}\": {FORMAT_VERSION})"
    return None


def scan_folder(folder: Path) -> tuple[list[Path], list[tuple[str, str]]]:
    """The reply files of a recording folder, and every other .jsonl file there with the reason."""
    files, others = [], []
    for p in sorted(Path(folder).glob("*.jsonl")):
        why = header_problem(p, Path(folder))
        if why is None:
            files.append(p)
        else:
            others.append((p.name, why))
    return files, others


def recording_files(path: Path) -> list[Path]:
    path = Path(path)
    if path.is_dir():
        return scan_folder(path)[0]
    if path.exists():
        return [path]  # named: read_file says what is wrong with it, if anything
    raise ConfigError(f"no recording at {path}",
                      hint="give a recording file (.jsonl) or a folder of them, e.g. recorded:sample_recorded")


def load_recording(path: str | Path) -> Recording:
    rec = Recording(Path(path))
    files = recording_files(rec.path)
    if not files:
        _, others = scan_folder(rec.path)
        found = "; ".join(f"{name}: {why}" for name, why in others[:5]) + (" ..." if len(others) > 5 else "")
        raise RecordingError(f"the folder {path} holds no recording: " + (found or "no .jsonl file"),
                             hint="a recording file starts with a header line written by scripts/record_real_model.py")
    for f in files:
        header, rows = read_file(f)
        rec.headers.append({**header, "file": f.name})
        src = Source(header["provider"], header["model"], header.get("base_url"))
        if src not in rec.sources:
            rec.sources.append(src)
        for r in rows:  # checked by read_file: every field has its type
            rec.replies.setdefault(r["key"], []).append(Reply(
                r["key"], r["text"], r["reply_model"], r["input_tokens"], r["output_tokens"],
                float(r["latency_s"]), r["raw"], f.name))
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
