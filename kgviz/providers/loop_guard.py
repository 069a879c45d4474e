"""Cut a streamed reply that loops, before the model spends minutes on it.

Issue 15: 3 of 15 extraction replies from a 1.5B model on a CPU server repeated one line until
max_tokens (5–8 minutes each). The triple parser already stops reading at the 4th copy of a line,
or at the 4th line of a counting loop (issue 23: the same fact with a running number); streaming
lets the client stop *receiving* there too, and closing the stream makes llama.cpp / Ollama stop
generating.

The rule is the parser's, on purpose: both use ``kgviz.facts.loops.LoopCounter`` (lines compared
whitespace-collapsed and lower-cased, numbers masked for counting), and the reply is cut right
after the line the counter calls a loop. The kept text ends with that line, so parsing the cut
reply gives exactly what parsing the whole looping reply would have given (the parser ignores
everything after it anyway).

The parser applies its loop rule only to line replies: a reply that is one JSON value (a list of
triple objects, a judge's verdict) is read whole, and pretty-printed JSON repeats lines such as
``"relation": "born in",`` legitimately. So once a reply starts with ``[`` or ``{`` (after an
optional code fence) the guard stops counting lines, like the parser.

A reply that grows past ``max_tokens`` streamed pieces is cut as well: servers honour max_tokens
themselves, so this only fires for one that does not. One streamed piece is one token on
llama.cpp, Ollama and vLLM; the count is an approximation elsewhere.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kgviz.facts.loops import MAX_LINE_REPEATS, LoopCounter

_FENCE = re.compile(r"^\s*(```|~~~)")  # the parser's fence rule (kgviz.facts.parse._FENCE)


@dataclass
class LoopGuard:
    """Feed streamed pieces in order; ``feed`` returns False once the reply should stop.

    ``text`` is what to keep (cut at the end of the looping line), ``pieces`` how many pieces
    were read, ``cut`` the reason ("" when the reply ended on its own)."""

    max_tokens: int
    max_repeats: int = MAX_LINE_REPEATS
    pieces: int = 0
    cut: str = ""
    _parts: list[str] = field(default_factory=list)
    _kept: int = -1  # characters of the joined text to keep once cut; -1 = all
    _line: str = ""  # the current, unfinished line
    _loops: LoopCounter | None = None
    _json: bool | None = None  # None until the first non-blank, non-fence text says which

    @property
    def text(self) -> str:
        whole = "".join(self._parts)
        return whole if self._kept < 0 else whole[: self._kept]

    def feed(self, piece: str) -> bool:
        if self.cut:
            return False
        offset = sum(len(p) for p in self._parts)
        self._parts.append(piece)
        self.pieces += 1
        if self._json is None:
            self._json = self._looks_like_json()
        start = 0 if not self._json else len(piece)  # a JSON reply: only the token limit applies
        while True:
            nl = piece.find("\n", start)
            if nl < 0:
                break
            line, self._line = self._line + piece[start:nl], ""
            start = nl + 1
            if self._loops is None:
                self._loops = LoopCounter(self.max_repeats)
            loop = self._loops.see(line)
            if loop:
                self._kept = offset + nl  # keep the looping line itself, not its newline
                what = "repetition" if loop == "repeats" else "counting loop"
                self.cut = f"reply cut: {what} after {self.pieces} tokens"
                return False
        if not self._json:
            self._line += piece[start:]
        if self.pieces > self.max_tokens:
            self.cut = f"reply cut: longer than max_tokens={self.max_tokens} after {self.pieces} tokens"
            return False
        return True

    def _looks_like_json(self) -> bool | None:
        body = "\n".join(ln for ln in "".join(self._parts).splitlines() if not _FENCE.match(ln)).lstrip()
        if not body or (body.startswith(("`", "~")) and "\n" not in body):
            return None  # nothing yet, or a fence line still arriving
        return body[0] in "[{"
