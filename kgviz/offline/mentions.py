"""Mention detection for the offline extractor (kgviz.offline.extract): names, titles, dates,
numbers and pronouns in one sentence, as character spans, plus the chunk-level context that
resolves pronouns. The rules are listed in heuristic.py's docstring."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from kgviz.facts.triples import Mention
from kgviz.offline.lexicon import HEAD_NOUNS, HONORIFICS, MONTHS, NAME_CONNECTORS, ORG_HEADS, PLACE_HEADS, STOP_CAPS

_DATE = re.compile(
    rf"\b(?:(?:{MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{3,4}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{MONTHS})\.?,?\s+\d{{3,4}}"
    rf"|(?:{MONTHS})\s+\d{{4}}"
    rf"|(?:{MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?(?!\d|,?\s+\d))\b"  # "June 6": a day without a year
)
_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b")
_NUMBER = re.compile(
    r"\b\d(?:[\d,]*\d)?(?:\.\d+)?(?:\s+(?:percent|per cent|million|billion|thousand|hundred|km|kilometres"
    r"|kilometers|metres|meters|miles|feet|tons|tonnes|people|crowns|dollars|pounds|euros|marks"
    r"|florins|years|days|storeys|floors|arches|pupils|students|members|workers|employees|copies"
    r"|pages|books|ships|rooms|acres|hectares"
    # any other plural noun counted by the number ("35 stores", "6.8 inches"; not "1921 was")
    r"|(?!(?:is|was|has|as|its|this|his|us|yes|does|goes|plus|whereas|ones)\b)[a-z]{2,}s))?\b"
    r"|\b\d{1,3}(?:st|nd|rd|th)\b"  # ordinals: "the 12th"
    r"|\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|"
    r"dozen)\s+(?!(?:is|was|has|as|its|this|his|us|does|goes|ones)\b)[a-z]{3,}s\b"  # "seven members"
)
_TITLE = re.compile(r"[\"“]([A-Z0-9][^\"“”();]{0,80}?)[\"”]")  # no ( ; ): they would break the text form
_WORD = re.compile(r"[^\W\d_][\w'’\-]*|&")
_PRONOUN = re.compile(r"\b(?:[Hh]e|[Ss]he|[Tt]hey)\b|^It\b")
_ABBREV_TOKENS = frozenset("st dr mr mrs ms prof mt jr sr".split())


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str
    kind: str  # name | value | title | pron
    type: str = ""
    possessive: bool = False


@dataclass
class Context:
    """What pronouns refer to, carried from sentence to sentence within one chunk."""

    last_subject: Mention | None = None
    last_agent: Mention | None = None  # what "he/she/they" refer to: no place/organisation/value
    last_thing: Mention | None = None  # the last name seen that is not known to be a person
    people: set[str] = field(default_factory=set)  # subjects of born/died/married/... so far

    def set_subject(self, m: Mention) -> None:
        self.last_subject = m
        if m.type in ("", "person"):
            self.last_agent = m

    def it(self) -> Mention | None:
        """ "It": the last subject unless that is a person, else the last non-person name."""
        if self.last_subject is not None and self.last_subject.text not in self.people:
            return self.last_subject
        return self.last_thing


def as_mention(span: Span, ctx: Context) -> Mention:
    """The mention a span stands for (a pronoun becomes its antecedent)."""
    if span.kind == "pron":
        target = ctx.it() if span.text == "It" else ctx.last_agent
        if target is not None:
            return target
    return Mention(span.text, span.type)


def find_mentions(s: str, ctx: Context) -> list[Span]:
    """Non-overlapping mention spans of sentence ``s``, left to right."""
    found = list(_text_mentions(s))  # (priority, span): lower priority wins overlaps
    for m in _PRONOUN.finditer(s):
        target = ctx.it() if m.group(0) == "It" else ctx.last_agent
        if target is not None:
            found.append((5, Span(m.start(), m.end(), m.group(0), "pron", target.type)))
    found.sort(key=lambda p: (p[1].start, p[0], -(p[1].end - p[1].start)))
    out: list[Span] = []
    for _, sp in found:
        if out and sp.start < out[-1].end:
            continue
        out.append(sp)
    return out


@lru_cache(maxsize=4096)
def _text_mentions(s: str) -> tuple[tuple[int, Span], ...]:
    """The candidate spans of ``s`` that do not depend on the context (all but pronouns), with
    their priorities, in the order ``find_mentions`` sorts them from. Remembered: the extractor
    reads most sentences two or three times (whole, then its appositive and clause patterns ask
    again; 12,374 calls for 5,249 sentences on 1,000 passages), and this was 60% of its time
    (issue 29). Spans are frozen, so a remembered tuple is never changed by a caller."""
    found: list[tuple[int, Span]] = []
    for m in _TITLE.finditer(s):
        body = m.group(1).strip()
        if body and body[-1] not in ".!?," and len(body.split()) <= 8:
            found.append((0, Span(m.start(), m.end(), body, "title", "work")))
    for m in _DATE.finditer(s):
        found.append((1, Span(m.start(), m.end(), m.group(0), "value", "date")))
    for m in _YEAR.finditer(s):
        found.append((2, Span(m.start(), m.end(), m.group(0), "value", "date")))
    for m in _NUMBER.finditer(s):
        found.append((3, Span(m.start(), m.end(), m.group(0), "value", "number")))
    dates = [sp for p, sp in found if sp.type == "date"]
    found.extend((4, _before_date(sp, dates, s)) for sp in _names(s))
    return tuple(found)


def _before_date(name: Span, dates: list[Span], s: str) -> Span:
    """A name run that swallowed the month of a date ("Recorded August" in "Recorded August 16,
    1967") ends before the date, so the date wins the overlap and stays a mention."""
    inside = [d.start for d in dates if name.start < d.start < name.end]
    if not inside:
        return name
    end = name.start + len(s[name.start : min(inside)].rstrip())
    return Span(name.start, end, s[name.start : end], name.kind, name.type, False)


def _names(s: str) -> list[Span]:
    tokens = [(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(s)]
    spans: list[Span] = []
    i = 0
    while i < len(tokens):
        if not _is_cap(tokens[i][2]):
            i += 1
            continue
        run = [i]
        j = i
        while j + 1 < len(tokens) and not _possessive_token(tokens[j][2]) and _adjacent(s, tokens[j], tokens[j + 1]):
            nxt = tokens[j + 1][2]
            if _is_cap(nxt):
                j += 1
            elif j + 2 < len(tokens) and _adjacent(s, tokens[j + 1], tokens[j + 2]) and _is_cap(tokens[j + 2][2]) and (
                nxt.lower() in NAME_CONNECTORS or nxt == "of" and (tokens[j][2].lower() in HEAD_NOUNS or j == i)
            ):  # "of" joins after a head noun, or after one word: "Journal of Physics", "John of Gaunt"
                j += 2
            else:
                break
            run.append(j)
        i = j + 1
        while run and tokens[run[0]][2].lower().strip(".") in STOP_CAPS:
            run.pop(0)
        if not run:
            continue
        first, last = tokens[run[0]], tokens[run[-1]]
        text = s[first[0] : last[1]]
        possessive = _possessive_token(last[2])
        end = last[1]
        if possessive:
            text = text[:-2]
        elif end < len(s) and s[end] == "." and last[2].lower() in _ABBREV_TOKENS | {c.lower() for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}:
            end += 1
            text += "."
        if len(run) == 1 and (re.fullmatch(MONTHS, text) or text.lower().strip(".") in HONORIFICS):
            continue
        spans.append(Span(first[0], end, text, "name", _name_type(text), possessive))
    return spans


def _is_cap(tok: str) -> bool:
    return tok[:1].isupper()


def _possessive_token(tok: str) -> bool:
    return tok.endswith(("'s", "’s")) and len(tok) > 2


def _adjacent(s: str, a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    between = s[a[1] : b[0]]
    return between.strip() in ("", ".") and (between.strip() == "" or a[2].lower() in _ABBREV_TOKENS or len(a[2]) == 1)


def _name_type(text: str) -> str:
    words = text.lower().replace(".", "").split()
    if not words:
        return ""
    if words[0] in HONORIFICS:
        return "person"
    for w in (words[-1], words[0]):
        if w in ORG_HEADS:
            return "organisation"
        if w in PLACE_HEADS:
            return "place"
    return ""
