"""When a reply is looping: one rule for the reply parser (``kgviz.facts.parse``) and the stream
guard (``kgviz.providers.loop_guard``), so a reply cut while streaming parses exactly as the
whole reply would.

Two kinds of loop, each caught at its (``max_repeats`` + 1)-th line:

* a repeated line: the same line (whitespace collapsed, case folded) again;
* a counting loop (issue 23): the same line with a running number, each one more than the last
  (``((Ossel Marine Institute; was director for; twenty-six years); in year; 1921)``, ``1922``,
  ... ``1926``: a 1.5B model counting instead of stopping), or a repeated fact under a running
  list number (``1. (s; r; o)``, ``2. (s; r; o)``, ...). Lines are compared with their numbers
  masked; a line holding no letter (``17``) is never part of one, so a plain list of numbers
  is not cut.

The first ``max_repeats`` lines of a loop are kept (a fact listed for 1921, 1922 and 1923 may be
stated); the grounding check (``kgviz.index.ground``) then drops those not in the text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_LINE_REPEATS = 3  # ours: a line written this often means the model is looping; stop reading

_NUMBER = re.compile(r"\d+")
_LETTER = re.compile(r"[^\W\d_]")


def line_key(line: str) -> str:
    """How lines are compared: whitespace collapsed, case folded."""
    return " ".join(line.split()).lower()


@dataclass
class LoopCounter:
    """Feed a reply's lines in order; ``see`` returns why the line is a loop ("" if it is not)."""

    max_repeats: int = MAX_LINE_REPEATS
    _counts: dict[str, int] = field(default_factory=dict)
    _runs: dict[str, tuple[tuple[int, ...], int]] = field(default_factory=dict)  # masked -> (numbers, run)

    def see(self, line: str) -> str:
        key = line_key(line)
        if not key:
            return ""
        self._counts[key] = self._counts.get(key, 0) + 1
        if self._counts[key] > self.max_repeats:
            return "repeats"
        numbers = tuple(int(n) for n in _NUMBER.findall(key))
        if not numbers or not _LETTER.search(key):
            return ""
        masked = _NUMBER.sub("#", key)
        last = self._runs.get(masked)
        run = 1
        if last is not None:
            if last[0] == numbers:
                return ""  # the same line again: the repeat count above decides
            run = last[1] + 1 if _counts_on(last[0], numbers) else 1
        self._runs[masked] = (numbers, run)
        return "counts" if run > self.max_repeats else ""


def _counts_on(before: tuple[int, ...], now: tuple[int, ...]) -> bool:
    """``now`` is ``before`` with exactly one number one higher."""
    diff = [b - a for a, b in zip(before, now) if a != b]
    return len(before) == len(now) and diff == [1]
