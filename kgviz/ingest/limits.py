"""Limits that keep data that is not prose out of the graph, and the checks that apply them.

A fault probe found each case: a 15 MB file of one "word" became 8,754 junk chunks (and a cost
estimate of $12.78), a JSON line nested 100,000 deep crashed the parser with RecursionError, and
an ``"id"`` of 5,000 digits crashed it with ValueError. Each limit turns such input into a typed
LimitExceededError for that file (or that .jsonl line) only, so the other files still load.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from kgviz.errors import ConfigError, LimitExceededError
from kgviz.text import count_tokens

# Whitespace, and the CJK punctuation that separates clauses in scripts written without spaces,
# end a "word": a Chinese paragraph is many short runs, a base64 blob or a hex dump is one.
_WORD_BREAK = r"\s\u3001\u3002\uff0c\uff1b\uff1a\uff01\uff1f"


@dataclass(frozen=True)
class LoadLimits:
    """Per-document and per-line limits of the loaders (all ours; none is a paper parameter)."""

    max_word_chars: int = 1_000
    """Longest run of non-space characters a document may contain. Real words stay under 50
    characters and long URLs under a few hundred; a longer run is encoded data (base64, hex,
    minified code) that would be cut into meaningless chunks."""
    max_chunks_per_document: int = 2_000
    """Most chunks one document (a file, or one .jsonl record) may need at ``chunk_tokens`` per
    chunk: about 600k tokens, a 1,000-page book. A bigger file is more likely a dump than a text
    to study, and its extraction would cost real money; split it into parts instead."""
    chunk_tokens: int = 300
    """Chunk size the chunk count is estimated with (Settings.chunk_tokens)."""
    max_json_line_chars: int = 2_000_000
    """Longest .jsonl line (one record) in characters, checked before the line is parsed."""
    max_json_depth: int = 32
    """Deepest nesting of arrays/objects in a .jsonl line (a corpus record needs 1); checked
    before parsing, since Python's parser overflows its stack near 1,000 levels."""
    max_id_chars: int = 256
    """Longest .jsonl ``id``; ids are kept as strings, numbers included, never converted."""

    def __post_init__(self) -> None:
        for name in ("max_word_chars", "max_chunks_per_document", "chunk_tokens", "max_json_line_chars",
                     "max_json_depth", "max_id_chars"):
            if getattr(self, name) < 1:
                raise ConfigError(f"LoadLimits.{name} must be at least 1, got {getattr(self, name)}")


DEFAULT_LIMITS = LoadLimits()

_SPLIT_HINT = "Split the file into smaller documents, or leave it out."


def check_document(name: str, text: str, limits: LoadLimits, where: str = "") -> None:
    """Raise LimitExceededError when ``text`` (one document's normalised text) breaks a limit.
    ``where`` prefixes the reason, e.g. "line 7: " for one .jsonl record."""
    n = limits.max_word_chars
    # Anchored at the start of a word, so each word is scanned once (no quadratic backtracking).
    m = re.search(rf"(?<![^{_WORD_BREAK}])[^{_WORD_BREAK}]{{{n + 1}}}", text)
    if m:
        end = re.compile(rf"[{_WORD_BREAK}]").search(text, m.start())
        length = (end.start() if end else len(text)) - m.start()
        raise LimitExceededError(
            name,
            f"{where}a 'word' of {length:,} characters without a space at character {m.start():,} "
            f"(limit {n:,}): this looks like encoded data, not text",
            hint="Remove the encoded data (base64, hex, minified code) or leave the file out.",
        )
    per_chunk = limits.chunk_tokens
    if len(text) <= limits.max_chunks_per_document * per_chunk:  # a token is at least one character
        return
    tokens = count_tokens(text)
    chunks = math.ceil(tokens / per_chunk)
    if chunks > limits.max_chunks_per_document:
        raise LimitExceededError(
            name,
            f"{where}{tokens:,} tokens need at least {chunks:,} chunks of {per_chunk} tokens, over the limit "
            f"of {limits.max_chunks_per_document:,} chunks per document",
            hint=_SPLIT_HINT,
        )


# A JSON string, unrolled so long strings do not cost one regex step per alternative.
_JSON_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS_RE = re.compile(r"[\[\]{}]")


def json_depth_exceeds(line: str, limit: int) -> bool:
    """Whether ``line`` nests arrays/objects deeper than ``limit`` (brackets inside strings do
    not count). Cheap when the line has few brackets, which every corpus record has."""
    if line.count("[") + line.count("{") <= limit:
        return False
    depth = 0
    for ch in _BRACKETS_RE.findall(_JSON_STRING_RE.sub("", line)):
        depth += 1 if ch in "[{" else -1
        if depth > limit:
            return True
    return False
