"""Text made safe to show, on a terminal and in the app's labels.

Answers, entity names, file names and error messages carry text from documents and LLMs. On a
terminal, raw control bytes (ESC sequences) can recolour the screen, move the cursor, rewrite
earlier lines or set the window title; in a browser or a terminal, bidi override and isolate
characters make a name read backwards ("report\u202etxt.exe" displays as "reportexe.txt"). Such
characters are shown escaped (``\\x1b``, ``\\u202e``) rather than dropped, so a reader sees that
something was there and the text stays traceable to its source.

Newline and tab are kept: they only lay text out.
"""
from __future__ import annotations

import re

# Bidi embedding/override (U+202A-U+202E), isolates (U+2066-U+2069), the left-to-right and
# right-to-left marks and the Arabic letter mark: each can reorder what follows it.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")

# C0 except tab (\x09) and newline (\x0a), DEL, C1 (\x80-\x9f: \x9b alone starts a CSI sequence on
# some terminals), the Unicode line/paragraph separators (they break lines where no newline is
# seen), and the bidi controls above.
_UNSAFE_RE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029" + "".join(sorted(BIDI_CONTROLS)) + "]"
)


def _escaped(match: re.Match[str]) -> str:
    cp = ord(match.group())
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}"


def safe_text(text: object) -> str:
    """``text`` with every control, separator and bidi character replaced by its escape
    (``\\x1b``, ``\\u202e``); newline and tab are kept. Idempotent on its own output apart from
    the backslashes it adds, which are printable."""
    return _UNSAFE_RE.sub(_escaped, str(text))


def has_unsafe(text: str) -> bool:
    """True when ``safe_text`` would change ``text``."""
    return _UNSAFE_RE.search(text) is not None


def safe_strings(value: object) -> object:
    """``value`` (JSON-like data: dicts, lists, tuples, strings) with ``safe_text`` applied to every
    string in it, keys included: for data a page draws itself (the Trace player's labels and
    panel), where escaping the serialised JSON would be too late (``JSON.parse`` would turn an
    escaped ``\\u202e`` back into the character)."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_strings(k): safe_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [safe_strings(v) for v in value]
    return value
