"""The offline judge's readers for comparison questions (issue 22.3; all rules ours).

A choice question names two options ("Which film came out first, A or B?"); the answer is
supported when the evidence gives both options' values and the comparative word picks the answer,
contradicted when it picks the other option, and not_found when a value is missing, ambiguous or
the two cannot be told apart. Nothing is guessed: a missing fact is never filled in.

What is read, from the sentences that name an entity:

* dates (``read_dates``): a parenthesis right after the name, "X (12 May 1930 – 3 June 2000)",
  "X (born July 23, 1968)", "X( 1903–1980)"; a definition, "X is a 1965 film"; a verb and the date
  after it in a sentence about X, "born on 5 May 1930", "died in 1987", "released in 1958",
  "founded in 1850" (a sentence with "He", "It" ... speaks of its passage's first name). A date
  keeps its precision: "1930" is the whole year, so 1930 against "12 May 1930" decides nothing.
* numbers (``read_measure``): a population ("a population of 12,500", "2.1 million inhabitants"),
  a length or height with its unit, in metres ("1,250 km long", "800 miles long").
* what is compared (``asked``): "older/younger" and "born" -> birth, "died" -> death, "lived
  longer" -> life span (death minus birth), "more <role>s" -> how many names follow "<role verb>
  by", "population" / "more populous" -> population, "longer/shorter" -> length, "taller/higher"
  -> height, other time words ("first", "earlier", "more recently") -> the entity's own date
  (release, publication, founding). "Larger" or "bigger" alone names no measure: no verdict.
* a holder ("Which film whose director is younger, A or B?"): the names after "directed by" in a
  sentence about the option, then the holder's value from a sentence about the holder.

When the sentences about one entity disagree, the reading that names it most exactly wins (with
its leading article: "The Little Shop of Horrors" over "Little Shop of Horrors", another film);
a disagreement among equally exact readings is "ambiguous", which decides nothing.

Every reading keeps its sentence verbatim and the words of it that were read, as written there.
"""
from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass
from typing import Sequence

from kgviz.offline.support import Sentence, Support, fold, mentions

_MONTH_NAMES = {m.lower(): n for n, m in enumerate(calendar.month_name) if m}
_MONTH_NAMES.update({m.lower(): n for n, m in enumerate(calendar.month_abbr) if m})
_MONTH_NAMES["sept"] = 9
_MON = r"(?:" + "|".join(sorted(_MONTH_NAMES, key=len, reverse=True)) + r")\.?"
_DATE_RE = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m1>{_MON})\s*,?\s*(?P<y1>\d{{3,4}})"
    rf"|(?P<m2>{_MON})\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s*(?P<y2>\d{{3,4}})"
    rf"|(?P<m3>{_MON})\s+(?P<y3>\d{{4}})"
    r"|(?P<y4>1\d{3}|20\d{2}))\b", re.IGNORECASE)
_ARTICLES = frozenset("the a an".split())
_SMALLER = frozenset("first earlier earliest older oldest before sooner fewer less least shorter smaller lower".split())
_LARGER = frozenset("later latest last younger youngest after newer recent recently longer more greater taller "
                    "higher larger bigger populous".split())
_TIME_WORDS = frozenset("first earlier earliest older oldest before sooner later latest last younger youngest after "
                        "newer recent recently".split())
# a measure the question compares: its cue words in a sentence, and the units it is read in (to metres)
_UNITS = {"km": 1000.0, "kilometre": 1000.0, "kilometer": 1000.0, "mi": 1609.344, "mile": 1609.344, "m": 1.0,
          "metre": 1.0, "meter": 1.0, "ft": 0.3048, "feet": 0.3048, "foot": 0.3048}
_MEASURE_RE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(km|kilomet(?:re|er)s?|mi|miles?|m|met(?:re|er)s?|ft|feet|foot)\b")
_POPULATION_RE = re.compile(r"\b(?:population|inhabitants|residents)\b")
_POPULATION_NUM_RE = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(\s+million)?")
MEASURES = {"length": r"long|length|lengths", "height": r"tall|height|high|elevation"}
_AGE = frozenset("older oldest younger youngest".split())
# the verbs that date an entity of its own ("released in 1958"), and birth / death
_DATE_VERBS = (r"released|premiered|published|founded|established|formed|opened|launched|aired|issued|"
               r"incorporated|created|built|debuted|began|started|inaugurated|completed|broadcast")
_VERBS = {"birth": r"born", "death": r"died|killed|executed|murdered", "date": _DATE_VERBS}
# a holder noun and the verb that names it in a sentence about the option ("directed by Y")
HOLDER_VERBS = {"director": "directed", "directors": "directed", "composer": "composed", "author": "written",
                "writer": "written", "producer": "produced", "producers": "produced", "creator": "created",
                "founder": "founded", "performer": "performed", "screenwriter": "written",
                "writers": "written", "composers": "composed"}
_NAME = r"[A-Z\u00C0-\u017F][\w'\u2019\-\.]*(?:\s+(?:(?:of|the|de|von|van|la|le|du|del|der|da|di|y|bin|ibn)\s+)?[A-Z\u00C0-\u017F][\w'\u2019\-\.]*)*"
_NAME_LIST_RE = re.compile(rf"\s+(?P<list>{_NAME}(?:\s*,\s*{_NAME})*(?:\s*,?\s+and\s+{_NAME})?)")


@dataclass(frozen=True)
class Date:
    """A date with its precision: the first and the last day it may be."""

    lo: int  # proleptic ordinal of the earliest day
    hi: int  # ... of the latest day
    shown: str  # as written

    @staticmethod
    def parse(m: re.Match[str]) -> "Date":
        g = m.groupdict()
        y = int(g["y1"] or g["y2"] or g["y3"] or g["y4"])
        month = g["m1"] or g["m2"] or g["m3"]
        day = g["d1"] or g["d2"]
        mo = _MONTH_NAMES[month.lower().rstrip(".")] if month else 0
        if mo and day and 1 <= int(day) <= calendar.monthrange(y, mo)[1]:
            d = dt.date(y, mo, int(day)).toordinal()
            return Date(d, d, m.group())
        if mo:
            return Date(dt.date(y, mo, 1).toordinal(), dt.date(y, mo, calendar.monthrange(y, mo)[1]).toordinal(),
                        m.group())
        return Date(dt.date(y, 1, 1).toordinal(), dt.date(y, 12, 31).toordinal(), m.group())


def dates_in(text: str) -> list[Date]:
    return [Date.parse(m) for m in _DATE_RE.finditer(text) if 100 <= int(next(
        v for k, v in m.groupdict().items() if k.startswith("y") and v)) <= 2099]


@dataclass(frozen=True)
class Reading:
    """One value read for one entity: (lo, hi) bounds (a date's days, a span's days, a count), the
    sentence and the words of it that were read."""

    entity: str
    lo: float
    hi: float
    shown: str  # the value as written ("12 May 1930", "1903–1980", "2 names")
    sent: Sentence
    words: tuple[str, ...]  # words of ``sent`` (as written) that were read
    exact: int  # how exactly ``sent`` names the entity (higher wins)


# --- where an entity is named in a sentence --------------------------------------------------
_TOK_RE = re.compile(r"[^\W_][\w'\u2019\-\.]*[^\W_]|[^\W_]")


def _tokens(text: str) -> list[tuple[int, int, list[str]]]:
    """(start, end, folded words) of each token of ``text`` that is not an article or punctuation."""
    out = []
    for m in _TOK_RE.finditer(text):
        f = fold(m.group()).split()
        if f:
            out.append((m.start(), m.end(), f))
    return out


def name_words(name: str) -> list[str]:
    """``name``'s folded words, token by token as a text would be read ("88:88" -> 88, 88)."""
    return [w for t in _TOK_RE.findall(name) for w in fold(t).split()]


def locate(text: str, name: str) -> list[tuple[int, int, int]]:
    """(start, end, exactness) of each place ``text`` writes ``name`` (its words in a row, not inside a
    longer name: "Love & War" is not in "The Love & War MasterPeace"). Exactness: 2 when a leading
    article of ``name`` is written too (or ``name`` has none), 1 when ``text`` drops it ("Little
    Shop of Horrors" for "The Little Shop Of Horrors")."""
    want = name_words(name)
    if not want:
        return []
    lead = name.split()[0].lower() in _ARTICLES
    toks = _tokens(text)
    flat = [(i, w) for i, (_, _, ws) in enumerate(toks) for w in ws]
    out = []
    for k in range(len(flat) - len(want) + 1):
        got = [w for _, w in flat[k:k + len(want)]]
        # a possessive also names its owner: "Kellhaven's population" holds "Kellhaven"
        owner = got[:-1] + [got[-1][:-1]] if got and got[-1].endswith("s") and re.search(
            r"['\u2019]s$", text[toks[flat[k + len(want) - 1][0]][0]: toks[flat[k + len(want) - 1][0]][1]]) else got
        if want not in (got, owner) or (k and flat[k - 1][0] == flat[k][0]):
            continue
        a, b = toks[flat[k][0]][0], toks[flat[k + len(want) - 1][0]][1]
        if re.match(r"[ \t]+[A-Z]", text[b:]) or re.search(r"(?<![.!?:;,(\"\u201c])\s(?!(?:The|A|An)\s)[A-Z][\w'\u2019]*\s+$", text[:a]):
            continue  # a longer name goes on before or after it
        before = text[:a].split()[-1:] if a else []
        written_lead = bool(before) and before[0].lower().strip("\"'(\u201c") in _ARTICLES
        out.append((a, b, 2 if lead == written_lead or not lead else 1))
    return out


def _words_of(sent: Sentence, span: str) -> tuple[str, ...]:
    """The tokens of ``span`` (a piece of ``sent.text``) as written: whole words of the sentence."""
    return tuple(m.group() for m in _TOK_RE.finditer(span))


# --- dates ------------------------------------------------------------------------------------
_PAREN_RE = re.compile(r"\.?\s*\(([^()]*)\)")  # (the dot of a name's "Jr." may follow it)
# "X is a 1965 film", "X is a lost 1920 film", "X is 1993 Telugu film" (not "X is based on 1948")
_DEFINITION_RE = re.compile(r"[.?!\"'\u201d]*\s*(?:\([^()]*\)\s*)?,?\s*(?:is|was|are|were)\s+"
                            r"(?:(?:an?|the)\s+(?:[\w\-]+\s+){0,2}?)?(1\d{3}|20\d{2})\b")
# "Eedara Veera Venkata Satyanarayana (10 June 1956 – 21 January 2011), better known as E. V. V. Satyanarayana"
_KNOWN_AS_RE = re.compile(r"^[^()]{1,80}?(\([^()]*\)).*\b(?:known|credited|born) as\s+$")
_RANGE_SPLIT = re.compile(r"\s*[\u2013\u2014]\s*|\s+-\s+|(?<=\d)\s*-\s*(?=\w)|\s+to\s+")


def _paren_dates(inner: str) -> dict[str, Date]:
    """Birth / death dates in the parenthesis after a name: "born ...", "died ...", "A – B"."""
    parts = [p for p in _RANGE_SPLIT.split(inner) if p.strip()]
    low = inner.lower()
    if len(parts) >= 2:
        a, b = dates_in(parts[0]), dates_in(parts[1])
        out = {}
        if a:
            out["birth"] = a[0]
        if b:
            out["death"] = b[0]
        return out
    ds = dates_in(inner)
    if not ds:
        return {}
    if re.match(r"\s*(?:born|b\.)", low):
        return {"birth": ds[0]}
    if re.match(r"\s*(?:died|d\.)", low):
        return {"death": ds[0]}
    return {}


def read_dates(sent: Sentence, entity: str, kind: str) -> list[Reading]:
    """Readings of ``kind`` ("birth", "death", "date") for ``entity`` in ``sent`` (see the module
    docstring); the sentence must name the entity or refer back to a sentence that does."""
    out: list[Reading] = []
    text = sent.text
    spots = locate(text, entity)
    for a, b, exact in spots:
        rest = text[b:]
        paren = _PAREN_RE.match(rest)
        if paren and kind in ("birth", "death"):
            got = _paren_dates(paren.group(1)).get(kind)
            if got:
                out.append(Reading(entity, got.lo, got.hi, got.shown, sent,
                                   _words_of(sent, text[a:b]) + _words_of(sent, got.shown), exact + 2))
        known = _KNOWN_AS_RE.match(text[:a]) if kind in ("birth", "death") and not paren else None
        if known:  # the opening name's parenthesis belongs to the name it is "known as"
            got = _paren_dates(known.group(1)[1:-1]).get(kind)
            if got:
                out.append(Reading(entity, got.lo, got.hi, got.shown, sent,
                                   _words_of(sent, text[a:b]) + _words_of(sent, got.shown), exact + 1))
        if kind == "date":
            m = _DEFINITION_RE.match(rest)
            if m:
                d = dates_in(m.group(1))[0]
                out.append(Reading(entity, d.lo, d.hi, d.shown, sent,
                                   _words_of(sent, text[a:b]) + (m.group(1),), exact + 2))
    about = bool(spots) or bool(mentions(sent, entity))
    if about:
        exact = max((e for *_, e in spots), default=0)
        for m in re.finditer(rf"\b(?:{_VERBS[kind]})\b", text, re.IGNORECASE):
            window = re.split(r"[;]|\.\s", text[m.end(): m.end() + 45])[0]
            ds = list(_DATE_RE.finditer(window))
            if not ds:
                continue
            if kind == "birth" and re.search(r"\b(?:died|death)\b", window[: ds[0].start()], re.IGNORECASE):
                continue
            d = Date.parse(ds[0])
            if not 100 <= dt.date.fromordinal(d.lo).year <= 2099:
                continue
            # a verb about someone else ("his son was born in 1950") is no reading of the entity:
            # the entity must be the nearest name before the verb, or the sentence's opening one
            if spots and not any(b2 <= m.start() and ":" not in text[b2: m.start()] for _, b2, _ in spots):
                continue  # (a colon starts another statement: "X in same sentence as Y: it was ...")
            out.append(Reading(entity, d.lo, d.hi, d.shown, sent, (m.group(),) + _words_of(sent, d.shown), exact))
    return out


def _lifespans(sent: Sentence, entity: str) -> list[Reading]:
    births = {(r.sent.text, r.shown): r for r in read_dates(sent, entity, "birth")}
    deaths = read_dates(sent, entity, "death")
    out = []
    for b in births.values():
        for d in deaths:
            if d.lo < b.hi:
                continue
            out.append(Reading(entity, d.lo - b.hi, d.hi - b.lo, f"{b.shown} – {d.shown}", sent,
                               tuple(dict.fromkeys(b.words + d.words)), min(b.exact, d.exact)))
    return out


_SUFFIX_RE = re.compile(r"^(?:Jr|Sr|II|III|IV)\.?$")


def split_names(listed: str) -> list[str]:
    """"A, B and C" -> [A, B, C]; a suffix stays with its name ("George Nicholls, Jr." is one)."""
    out: list[str] = []
    for n in re.split(r"\s*,\s*(?:and\s+)?|\s+and\s+", listed):
        n = n.strip()
        if not n:
            continue
        if out and _SUFFIX_RE.match(n):
            out[-1] = f"{out[-1]}, {n}"
        else:
            out.append(n)
    return out


def _count(sent: Sentence, entity: str, verb: str) -> list[Reading]:
    """How many names follow "<verb> by" in a sentence about ``entity`` ("directed by A and B")."""
    if not (locate(sent.text, entity) or mentions(sent, entity)):
        return []
    out = []
    for m in re.finditer(rf"\b{verb}\s+by\b", sent.text):
        lst = _NAME_LIST_RE.match(sent.text, m.end())
        if not lst:
            continue
        names = split_names(lst.group("list"))
        exact = max((e for *_, e in locate(sent.text, entity)), default=0)
        out.append(Reading(entity, len(names), len(names), f"{len(names)} name(s)", sent,
                           (m.group(),) + tuple(w for n in names for w in _words_of(sent, n)), exact))
        break
    return out


def read_measure(sent: Sentence, entity: str, kind: str) -> list[Reading]:
    """A population ("a population of 12,500", "2.1 million inhabitants") or a length / height in
    metres ("1,250 km long", "a height of 830 m") in a sentence about ``entity`` that has the cue word."""
    spots = locate(sent.text, entity)
    if not (spots or mentions(sent, entity)):
        return []
    exact = max((e for *_, e in spots), default=0)
    text = sent.text
    if kind == "population":
        cue = _POPULATION_RE.search(text)
        if not cue:
            return []
        near = text[max(0, cue.start() - 40): cue.end() + 40]
        for m in _POPULATION_NUM_RE.finditer(near):
            digits = m.group(1).replace(",", "")
            if re.fullmatch(r"1\d{3}|20\d{2}", digits) and not m.group(2):
                continue  # a year ("at the 2006 census"), not a count
            v = float(digits) * (1e6 if m.group(2) else 1)
            return [Reading(entity, v, v, m.group().strip(), sent, (cue.group(),) + tuple(m.group().split()), exact)]
        return []
    cue = re.search(rf"\b(?:{MEASURES[kind]})\b", text)
    if not cue:
        return []
    got = [m for m in _MEASURE_RE.finditer(text)]
    if not got:
        return []
    m = min(got, key=lambda x: abs(x.start() - cue.start()))  # the measure nearest its cue word
    unit = m.group(2).lower().rstrip("s") if m.group(2).lower() not in ("feet",) else "feet"
    v = float(m.group(1).replace(",", "")) * _UNITS[unit]
    return [Reading(entity, v, v, m.group(), sent, (cue.group(),) + tuple(m.group().split()), exact)]


def holders(sent: Sentence, option: str, verb: str) -> list[str]:
    """The names after "<verb> by" in a sentence about ``option`` ("directed by Pál Gábor")."""
    out = []
    for m in re.finditer(rf"\b{verb}\s+by\b", sent.text):
        lst = _NAME_LIST_RE.match(sent.text, m.end())
        if lst:
            out += [n.rstrip(" ") for n in split_names(lst.group("list"))]
    return out


# --- what the question compares ---------------------------------------------------------------
def direction(question: str) -> tuple[str, str]:
    """("smaller" | "larger" | "", the comparative word) of a choice question."""
    for w in re.findall(r"[a-z]+", question.lower()):
        if w in _SMALLER:
            return "smaller", w
        if w in _LARGER:
            return "larger", w
    return "", ""


@dataclass(frozen=True)
class Asked:
    way: str  # smaller | larger
    word: str  # the comparative word as written in the question
    kind: str  # birth | death | lifespan | date | count | population | length | height
    holder: str  # "director" when the options' holders are compared, else ""
    verb: str  # the verb that names the holder or the counted role ("directed")


_HOLDER_RE = re.compile(r"\b(?:whose|the|has|have|had)\s+(\w+?)s?\b(?=\s+(?:who|born|died|that|is|was|were|of))"
                        r"|\bwhose\s+(\w+)\b", re.IGNORECASE)
_COUNT_RE = re.compile(r"\bmore\s+(\w+)\b", re.IGNORECASE)


def asked(question: str) -> Asked | None:
    way, word = direction(question)
    if not way:
        return None
    low = question.lower()
    if word == "more":
        m = _COUNT_RE.search(question)
        role = m.group(1).lower() if m else ""
        if role in HOLDER_VERBS:
            return Asked(way, word, "count", "", HOLDER_VERBS[role])
        if role != "recently":
            return None
        word = "recently"
    lived = re.search(r"\blived? longer\b|\blonger life", low)
    if re.search(r"\bpopulation\b|\bpopulous\b", low):
        return Asked(way, word, "population", "", "")
    if word not in _TIME_WORDS and not lived:
        if word in ("longer", "shorter") or re.search(r"\blength\b", low):
            return Asked(way, word, "length", "", "")
        if word in ("taller", "higher") or re.search(r"\bheight\b|\belevation\b", low):
            return Asked(way, word, "height", "", "")
        return None  # "larger", "bigger": of what? no measure it can read, so no verdict
    if word in _AGE or re.search(r"\bborn\b", low):
        kind = "birth"
    elif lived:
        kind = "lifespan"
    elif re.search(r"\bdied?\b|\bdeath\b", low):
        kind = "death"
    else:
        kind = "date"
    holder = ""
    for m in _HOLDER_RE.finditer(question):
        h = (m.group(1) or m.group(2) or "").lower()
        if h in HOLDER_VERBS:
            holder = h
            break
    return Asked(way, word, kind, holder, HOLDER_VERBS.get(holder, ""))


# --- one option's value -----------------------------------------------------------------------
def _readings(sents: Sequence[Sentence], entity: str, kind: str, verb: str, avoid: str) -> list[Reading]:
    out: list[Reading] = []
    for s in sents:
        if avoid and (locate(s.text, avoid) or s.has(avoid)):
            continue
        if kind == "lifespan":
            out += _lifespans(s, entity)
        elif kind == "count":
            out += _count(s, entity, verb)
        elif kind in ("population", "length", "height"):
            out += read_measure(s, entity, kind)
        else:
            out += read_dates(s, entity, kind)
    return out


def best(readings: Sequence[Reading]) -> tuple[Reading | None, str]:
    """The most exact reading, or (None, why) when there is none or equally exact ones disagree."""
    if not readings:
        return None, "missing"
    top = max(r.exact for r in readings)
    tops = [r for r in readings if r.exact == top]
    first = tops[0]
    for r in tops[1:]:
        if r.hi < first.lo or r.lo > first.hi:
            return None, (f"ambiguous: \"{first.sent.text}\" ({first.sent.item}) gives {first.shown}, "
                          f"\"{r.sent.text}\" ({r.sent.item}) gives {r.shown}")
    return first, ""


@dataclass(frozen=True)
class Value:
    reading: Reading
    via: tuple[Sentence, str] | None = None  # (sentence naming the holder, the holder's name)


def about(sents: Sequence[Sentence], entity: str, other: str) -> list[tuple[Sentence, int]]:
    """The sentences about ``entity`` and not ``other``, with how exactly they name it: written in
    the sentence (see ``locate``), or 0 for a sentence that refers back to one that names it ("It
    was directed by Y." after "X is a 1935 film.")."""
    out = []
    for s in sents:
        if locate(s.text, other):
            continue
        spots = locate(s.text, entity)
        if spots:
            out.append((s, max(e for *_, e in spots)))
        elif s.refers_back and mentions(s, entity) and not any(locate(r.text, other) for r in s.referents):
            out.append((s, 0))
    return out


def value_of(option: str, other: str, ask: Asked, sents: Sequence[Sentence]) -> tuple[Value | None, str]:
    """The option's value (or its holder's), or (None, why)."""
    if not ask.holder:
        got, why = best(_readings(sents, option, ask.kind, ask.verb, other))
        return (Value(got) if got else None), why
    links = []
    for s, exact in about(sents, option, other):
        for h in holders(s, option, ask.verb):
            links.append((exact, s, h))
    if not links:
        return None, f"missing: no sentence says who the {ask.holder} of '{option}' is"
    top = max(e for e, _, _ in links)
    names = list(dict.fromkeys(h for e, _, h in links if e == top))
    if len(names) > 1:
        return None, f"ambiguous: '{option}' has several {ask.holder}s ({', '.join(names)})"
    link = next((s, h) for e, s, h in links if e == top)
    got, why = best(_readings(sents, names[0], ask.kind, ask.verb, option))
    return (Value(got, link) if got else None), why


def _what(ask: Asked) -> str:
    return {"birth": "birth date", "death": "death date", "lifespan": "life span", "population": "population",
            "length": "length", "height": "height",
            "count": f"number of names after '{ask.verb} by'"}.get(ask.kind, "date")


def compare_options(answer: str, options: Sequence[str], question: str, sents: Sequence[Sentence]) -> Support:
    """Judge the answer to a choice question (the module docstring's rules)."""
    # a title's disambiguation is not part of the name a text uses: "Love In A Fallen City (Film)"
    options = [re.sub(r"\s*\([^)]*\)\s*$", "", o).strip() or o for o in options]
    chosen = [o for o in options if fold(o) == fold(answer) or fold(answer) in fold(o) or fold(o) in fold(answer)]
    if len(chosen) != 1:
        return Support("not_found", f"'{answer}' is not one of the question's options ({' or '.join(options)})")
    ask = asked(question)
    if ask is None:
        return Support("not_found", "the offline check cannot tell which value the question's comparison reads")
    mine, other = chosen[0], next(o for o in options if o != chosen[0])
    values: dict[str, Value] = {}
    for o, x in ((mine, other), (other, mine)):
        got, why = value_of(o, x, ask, sents)
        if got is None:
            of = f"the {ask.holder} of '{o}'" if ask.holder else f"'{o}'"
            if why.startswith("ambiguous"):
                return Support("not_found", f"the {_what(ask)} of {of} is {why}, so the comparison cannot be checked")
            return Support("not_found", f"no sentence of the evidence states the {_what(ask)} of {of}"
                                        + (f" ({why[len('missing: '):]})" if why.startswith("missing: ") else "")
                                        + ", so the comparison cannot be checked")
        values[o] = got
    a, b = values[mine].reading, values[other].reading
    if ask.way == "smaller":
        wins, loses = a.hi < b.lo, a.lo > b.hi
    else:
        wins, loses = a.lo > b.hi, a.hi < b.lo
    parts = []
    for o in (mine, other):
        v = values[o]
        via = f"\"{v.via[0].text}\" ({v.via[0].item}) names {v.via[1]}; " if v.via else ""
        parts.append(f"{via}\"{v.reading.sent.text}\" ({v.reading.sent.item}) gives {v.reading.entity} {v.reading.shown}")
    told = "; ".join(parts)
    if not wins and not loses:
        return Support("not_found", f"{told}: the values are too close to tell which is {ask.word}")
    label = "supported" if wins else "contradicted"
    reason = f"{told}: '{ask.word}' picks {mine if wins else other}"
    chain = []
    for v in (values[mine], values[other]):
        if v.via and v.via[0] is not a.sent:
            chain.append((v.via[0].item, v.via[0].text))
    chain.append((b.sent.item, b.sent.text))
    return Support(label, reason, a.sent.text, tuple(dict.fromkeys(a.words)), a.sent.item, tuple(dict.fromkeys(chain)))
