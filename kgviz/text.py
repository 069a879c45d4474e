"""Text utilities that need no downloads: an approximate tokenizer, a sentence splitter and the
text normalisation that document ids are computed from.

Token counts are an approximation (regex word pieces; long words count as several pieces) so that
budgets and chunk sizes work offline with no tokenizer files. Real providers report their own
token usage; this module is only used for chunking and context budgets.

The span functions (``token_spans``, ``sentence_spans``) return character offsets into the text
they were given, so callers can cut the original text (keeping its line breaks) instead of
re-joining pieces.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# A word of up to 8 characters is one token; a longer one is several pieces of 6 characters
# (the last one shorter), roughly how BPE tokenizers treat rare long words, numbers and
# identifiers. The first alternative only matches a whole short word; inside a long word the
# second one takes the next piece.
_TOKEN_RE = re.compile(r"(?<!\w)\w{1,8}(?!\w)|\w{1,6}|[^\w\s]", re.UNICODE)

# Candidate sentence boundaries, tried left to right:
#   end  - western end punctuation plus closing quotes/brackets, then whitespace
#   cjk  - full-width end punctuation, which is not followed by a space in CJK text
#   para - a blank line, always a boundary
_BOUNDARY_RE = re.compile(
    r"(?P<end>(?:[.!?\u2026]+)[\"'\u201d\u2019\u00bb)\]]*)(?P<ws>\s+)"
    r"|(?P<cjk>[\u3002\uff01\uff1f]+[\u300d\u300f\u201d\u2019\uff09)]*)\s*"
    r"|(?P<para>\n[ \t]*\n)\s*"
)
_OPENERS = "\"'\u201c\u2018\u00ab([{"

# Words that end with a period without ending the sentence. Case-sensitive on purpose: "No. 5" is
# an abbreviation, "He said no. Then" is not. Left out because they usually end the sentence when
# a capital follows: "etc.", and "Sen." (a common surname in Wikipedia text). Lowercase c/b/d/fl
# are circa/born/died/flourished, as in "(c. 1358 - 1422)".
_ABBREVIATIONS = frozenset(
    """Mr Mrs Ms Mx Dr Prof Sr Jr St Mt Messrs Rev Hon Gen Col Lt Sgt Capt Cmdr Gov Rep Pres
    vs v e.g i.e cf al approx c ca b d fl viz
    Inc Ltd Co Corp Bros Dept Univ Ave Blvd Rd
    No Nos Vol Vols vol Fig Figs fig Eq Eqs Sec Ch Ph.D pp Ed eds
    Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec""".split()
)
# "J." or "J.R.R." or "U.S." - initials and dotted acronyms rarely end a sentence.
_INITIALS_RE = re.compile(r"(?:[A-Z]\.)*[A-Z]")
# A list enumerator ("1." or "(a)." at the start of a line or after a colon) would otherwise end
# the sentence before its item.
_ENUMERATOR_RE = re.compile(r"(?:\A|[\n:])\s*\(?(?:\d{1,2}|[a-z])\)?\Z")

_BLANK_LINE_RE = re.compile(r"\n\s*\n")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_TRAILING_WS_RE = re.compile(r"[ \t\u00a0]+\n")
_MANY_NEWLINES_RE = re.compile(r"\n{3,}")


def token_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges of the tokens of ``text``: words (long ones in pieces) and punctuation."""
    return [m.span() for m in _TOKEN_RE.finditer(text)]


def tokenize(text: str) -> list[str]:
    """Word pieces: words (split every 6 characters for words over 8) and punctuation."""
    return _TOKEN_RE.findall(text)


@lru_cache(maxsize=65_536)
def count_tokens(text: str) -> int:
    """Tokens of ``text`` (``_TOKEN_RE``). Remembered per text: retrieval counts the same chunk,
    sub-chunk and fact texts question after question (KET-RAG's budget checks were 8-20% of a
    ket-rag retrieval at 10k passages)."""
    return len(_TOKEN_RE.findall(text))


def _starts_sentence(text: str, pos: int) -> bool:
    while pos < len(text) and text[pos] in _OPENERS:
        pos += 1
    if pos >= len(text):
        return False
    ch = text[pos]
    # Uncased scripts (CJK, Arabic, ...) have no capitals, so any letter may start a sentence.
    return ch.isdigit() or (ch.isalpha() and not ch.islower())


def _period_is_not_an_end(sentence_so_far: str) -> bool:
    """True when the final "." of ``sentence_so_far`` belongs to an abbreviation, an initial or a
    list enumerator rather than ending the sentence."""
    body = sentence_so_far[:-1]
    word = body.rsplit(None, 1)[-1] if body.split() else ""
    word = word.lstrip(_OPENERS)
    if word in _ABBREVIATIONS or _INITIALS_RE.fullmatch(word):
        return True
    return bool(_ENUMERATOR_RE.search(body))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges of the sentences of ``text`` (each stripped of surrounding whitespace).

    Rules: a sentence ends at ``.``, ``!``, ``?`` or an ellipsis (plus any closing quotes or
    brackets) when whitespace and then a capital letter or digit follow (an opening quote may come
    first); at full-width CJK end punctuation; and always at a blank line. A single "." does not
    end a sentence after a known abbreviation ("Dr.", "e.g."), an initial ("J.", "U.S.") or a bare
    list number ("1."). Decimals ("3.5") never match because no whitespace follows the point.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    n = len(text)

    def emit(a: int, b: int) -> None:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            spans.append((a, b))

    for m in _BOUNDARY_RE.finditer(text):
        if m.group("end") is not None:
            end = m.end("end")
            if not _BLANK_LINE_RE.search(m.group("ws")):
                if not _starts_sentence(text, m.end()):
                    continue
                punct = m.group("end").rstrip("\"'\u201d\u2019\u00bb)]")
                if punct == "." and _period_is_not_an_end(text[start : m.start("end") + 1]):
                    continue
            emit(start, end)
        elif m.group("cjk") is not None:
            emit(start, m.end("cjk"))
        else:
            emit(start, m.start())
        start = m.end()
    emit(start, n)
    return spans


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see ``sentence_spans`` for the rules)."""
    return [text[a:b] for a, b in sentence_spans(text)]


def normalize_text(text: str) -> str:
    """The canonical form documents are stored and hashed in: Unicode NFC, ``\\n`` line ends, no
    byte-order mark or stray control characters, no trailing spaces, at most one blank line in a
    row, no leading/trailing whitespace. Identical content in different encodings or line-ending
    conventions therefore gets the same document id."""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufeff", "")
    text = text.replace("\f", "\n\n")
    text = _CONTROL_RE.sub("", text)
    text = _TRAILING_WS_RE.sub("\n", text + "\n")
    text = _MANY_NEWLINES_RE.sub("\n\n", text)
    return text.strip()
