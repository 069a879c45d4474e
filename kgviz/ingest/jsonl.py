"""Read one JSON object per line, safely: the shared line reader of the .jsonl corpus loader and
the curated-KG entities file (kgviz.index.import_kg).

Every way a line can fail is a reason string for that line, never an exception that escapes:
invalid JSON, invalid UTF-8, a line over the size limit, nesting over the depth limit (checked
before parsing: deep nesting overflows Python's parser with RecursionError), and numbers too long
for ``int`` (ValueError). Integers are kept as the digits written (``JsonInt``), so an ``"id"``
of 5,000 digits is a string id, not a crash.
"""
from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from typing import Any, Iterator

from kgviz.ingest.limits import LoadLimits, json_depth_exceeds


class JsonInt(str):
    """A JSON integer, kept as the digits it was written with."""


@dataclass(frozen=True)
class BadLine:
    """Why a line cannot be used; ``limit`` when it broke a LoadLimits limit rather than JSON."""

    reason: str
    limit: bool = False


def _json_error(exc: json.JSONDecodeError) -> str:
    # json's messages sometimes end in " at" ("Unterminated string starting at"), which it
    # completes with ": line 1 column 29"; do not write "at at column 29"
    msg = exc.msg.rstrip().rstrip(":")
    return f"{msg} column {exc.colno}" if msg.endswith(" at") else f"{msg} at column {exc.colno}"


def parse_object(line: str, limits: LoadLimits) -> dict[str, Any] | BadLine:
    """The JSON object on ``line``, or why it cannot be used (the reason has no "line N: ")."""
    if len(line) > limits.max_json_line_chars:
        return BadLine(f"line is {len(line):,} characters, over the limit of {limits.max_json_line_chars:,}", True)
    if json_depth_exceeds(line, limits.max_json_depth):
        return BadLine(f"JSON nested deeper than the limit of {limits.max_json_depth} levels", True)
    try:
        row = json.loads(line, parse_int=JsonInt)
    except json.JSONDecodeError as exc:
        return BadLine(f"invalid JSON ({_json_error(exc)})")
    except (ValueError, RecursionError) as exc:  # belt and braces: the checks above should prevent these
        return BadLine(f"invalid JSON ({type(exc).__name__}: {str(exc)[:120]})")
    if not isinstance(row, dict):
        kind = "integer" if isinstance(row, JsonInt) else type(row).__name__
        return BadLine(f"expected a JSON object, got {kind}")
    return row


def iter_lines(data: bytes) -> Iterator[tuple[int, str | None, str]]:
    """(line number, text or None, reason when None) for each line of ``data``. Lines are
    decoded one by one, so a line of invalid UTF-8 costs that line only. A UTF-8 byte-order mark
    on the first line is dropped."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    for n, raw in enumerate(data.split(b"\n"), start=1):
        try:
            yield n, raw.decode("utf-8").rstrip("\r"), ""
        except UnicodeDecodeError as exc:
            yield n, None, f"not valid UTF-8 at column {exc.start + 1}"


def id_text(value: object, limits: LoadLimits) -> str | None:
    """A record id as text (strings and integers; None when the type is not allowed). Raises
    ValueError naming the limit when it is too long."""
    if not isinstance(value, str):  # bool, float, list, dict, None
        return None
    text = str(value).strip()
    if len(text) > limits.max_id_chars:
        raise ValueError(f"'id' is {len(text):,} characters, over the limit of {limits.max_id_chars}")
    return text
