"""What kind of thing a span of text names, from cheap cues (ours): the offline answer prefers
candidates of the asked type (``kgviz.offline.qtype.answer_type``) and the offline judge refuses
an answer of the wrong type.

``span_kind(span, text, start)`` reads the span and the words around it in ``text``:

- yesno / date / number: by pattern ("yes", "5 June 1965", "1986", "seven members", "38 metres");
- title: quoted ('the film "Love in the Ruins"') or right after a work noun ("the novel Dune",
  "the 1999 film The Ninth Gate");
- organisation: an organisation word in the span ("Duke University", "Tusker Breweries Ltd");
- event: a war, battle, election, cup ... word in the span ("Hundred Years' War");
- nationality: one capitalised word shaped like a demonym and used as an adjective ("an American
  director", "the Ottoman court");
- place: a place word in the span ("Tarrow River", "Knox County"), a country or continent name,
  "X, <place>" ("Springfield, Massachusetts"), or the span right after "in/at/from/near";
- person: an honorific or role noun before it ("Sir", "the engineer Mira Tesk"), "(born ..." or
  "(1889–1966)" after it, a cast list after "starring", an appositive role after it ("Anna Tesk,
  a weaver"), "directed by" and
  like participles before it, or a sentence subject whose next sentence goes on with "He/She".

Each answer comes with the cue that decided it (shown in reasons); a span with no cue is
``unknown``: neither right nor wrong. A span whose cues disagree takes the first rule that fires:
patterns, then title, then words inside the span (organisation before place, so "Ohio State
University" is an organisation; place before honorific, so "King County" is a place), then
nationality, then the words around it. The preposition cue is *weak*: it ranks candidates, but
only refuses an answer to a "who" question (see ``type_mismatch``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kgviz.offline.qtype import PERSON_NOUNS, AnswerType, TITLE_NOUNS

_MONTHS = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_DATE_RE = re.compile(rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTHS},?\s+\d{{3,4}}|{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+"
                      rf"\d{{3,4}}|{_MONTHS}\s+\d{{3,4}}|(?:c\.\s*|circa\s+)?\d{{3,4}}s?(?:\s*(?:AD|BC|BCE|CE))?)",
                      re.IGNORECASE)
_NUMBER_WORDS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
                 "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand "
                 "dozen").split()
_NUMBER_RE = re.compile(rf"(?:about |over |some |nearly |around |approximately |more than |almost )?(?:[$£€]\s?)?"
                        rf"(?:\d[\d,]*(?:\.\d+)?|{'|'.join(_NUMBER_WORDS)})(?:[\s-](?:{'|'.join(_NUMBER_WORDS)}|million|"
                        r"billion))*(?:\s+[a-z][a-z-]*){0,2}", re.IGNORECASE)
ORG_WORDS = frozenset("""company corporation corp inc ltd llc plc limited group records band club fc f.c. university
    college school academy institute team airlines airline airways studios studio pictures entertainment
    productions publishing publishers press society association league party council museum bank foundation
    orchestra army navy brewery breweries agency network broadcasting church ministry department
    committee commission federation union""".split())
PLACE_WORDS = frozenset("""city town village county river lake mountain mount mountains island islands province
    district state valley bay sea ocean street road park region kingdom republic peninsula desert forest
    harbour harbor port cape gulf strait creek falls borough parish township municipality prefecture
    canton oblast capital hills""".split())
# countries and continents most often answered in English QA sets; a cue, not a gazetteer
PLACE_NAMES = frozenset("""africa asia europe america australia antarctica oceania england scotland wales ireland
    britain france germany italy spain portugal russia china japan india canada mexico brazil argentina chile
    peru egypt iran iraq israel turkey greece poland sweden norway denmark finland iceland netherlands
    belgium switzerland austria hungary romania bulgaria ukraine belarus serbia croatia pakistan bangladesh
    indonesia philippines vietnam thailand korea singapore malaysia kenya nigeria ethiopia ghana morocco
    algeria cuba jamaica colombia venezuela california texas florida york london paris berlin rome tokyo
    moscow madrid vienna""".split())
HONORIFICS = frozenset("""mr mrs ms miss dr sir dame lord lady king queen prince princess saint pope emperor
    empress duke duchess count countess earl baron baroness general captain president senator""".split())
# "in Kellhaven" is a place far more often than anything else, but "at" also precedes schools and
# companies and "in" precedes works ("starred in Strange Interlude"): the cue is weak (see type_mismatch)
_WEAK_CUE = "after a place preposition"
EVENT_WORDS = frozenset("""war wars battle siege revolution rebellion uprising election elections championship
    championships cup olympics tournament festival treaty crusade massacre""".split())
# "American", "French", "Ottoman": an adjective of nationality, not a place or a person
_DEMONYM_RE = re.compile(r"[A-Z][a-z]+(?:an|ian|ese|ish|ic|i|ch)$")
_DEMONYMS = frozenset("american british english french german dutch greek swiss thai irish scottish welsh danish "
                      "swedish polish spanish finnish turkish chinese japanese ottoman roman western eastern "
                      "northern southern".split())
_PLACE_PREP = re.compile(r"\b(?:in|at|from|near|into|outside)\s+(?:the\s+)?$", re.IGNORECASE)
_PERSON_BY = re.compile(r"\b(?:\w+ed|written|drawn|sung|won|led|shot|known|sold|bought|beaten|taught)\s+by\s+$",
                        re.IGNORECASE)
_NAME_ITEM = r"[A-Z][\w'.\-]*(?:\s+[A-Z][\w'.\-]*)*"
_CAST_LIST = re.compile(rf"\b(?:starring|featuring|co-starring|starred|stars)\s+(?:{_NAME_ITEM},?\s+(?:and\s+)?)*$")
_BORN_AFTER = re.compile(r"^\s*\((?:born|b\.|n[ée]e|c\.\s*)?\s*(?:\d|" + _MONTHS + r")", re.IGNORECASE)
_APPOSITIVE = re.compile(r"^\s*,\s*(?:an?|the)\s+(?:[\w-]+\s+){0,3}?(\w+)")
_ROLE_BEFORE = re.compile(r"\b(\w+)\s+$")
_QUOTES = "\"\u201c\u201d'\u2018\u2019"


@dataclass(frozen=True)
class SpanKind:
    kind: str  # person | organisation | place | date | number | title | yesno | event | nationality | unknown
    cue: str = ""
    weak: bool = False  # decided by a preposition alone: enough to prefer, not to refuse (but see below)


def _words(span: str) -> list[str]:
    return [w.lower().strip(".,'\u2019") for w in span.split()]


def surface_kind(span: str) -> SpanKind:
    """What the span says by itself: yes/no, a date, a number (the pattern must cover it all)."""
    s = span.strip().strip(".").strip()
    if s.lower() in ("yes", "no"):
        return SpanKind("yesno", "yes/no")
    if _DATE_RE.fullmatch(s) or re.fullmatch(_MONTHS, s, re.IGNORECASE):
        return SpanKind("date", "a date/year pattern")
    if _NUMBER_RE.fullmatch(s) and not s[:1].isupper() or re.fullmatch(r"[$£€]?\d[\d,.]*\s*\w*", s):
        return SpanKind("number", "a number pattern")
    if s[:1].isupper() and s.split()[0].lower() in _NUMBER_WORDS and _NUMBER_RE.fullmatch(s):
        return SpanKind("number", "a number pattern")
    return SpanKind("unknown")


def _name_kind(span: str) -> SpanKind:
    """Cues inside the span itself."""
    words = _words(span)
    if org := next((w for w in words if w in ORG_WORDS), None):
        return SpanKind("organisation", f"'{org}' in the name")
    if place := next((w for w in words if w in PLACE_WORDS), None):  # "King County", "Prince Edward Island"
        return SpanKind("place", f"'{place}' in the name")
    if event := next((w for w in words if w in EVENT_WORDS), None):
        return SpanKind("event", f"'{event}' in the name")
    if words and words[0] in HONORIFICS and len(words) > 1:
        return SpanKind("person", f"honorific '{words[0]}'")
    if len(words) > 2 and words[0] in ("vice", "prime", "crown", "grand") and words[1] in HONORIFICS | {"minister"}:
        return SpanKind("person", f"title '{words[0]} {words[1]}'")
    if len(words) <= 2 and any(w in PLACE_NAMES for w in words):
        return SpanKind("place", "a country/region name")
    return SpanKind("unknown")


def span_kind(span: str, text: str = "", start: int = -1) -> SpanKind:
    """The kind of ``span``, read at ``text[start:]`` when given (see the module docstring)."""
    surface = surface_kind(span)
    if surface.kind != "unknown":
        return surface
    before = text[max(0, start - 60): start] if start >= 0 else ""
    after = text[start + len(span): start + len(span) + 80] if start >= 0 else ""
    if before[-1:] and after[:1] and before[-1] in _QUOTES and after[0] in _QUOTES:
        return SpanKind("title", "quoted")
    role = _ROLE_BEFORE.search(before)
    prev = role.group(1).lower() if role else ""
    prev2 = before.split()[-2:-1] if before else []
    if prev in TITLE_NOUNS or (prev.isdigit() and prev2 and prev2[0].lower() in TITLE_NOUNS):
        return SpanKind("title", f"after '{prev}'")
    inner = _name_kind(span)
    if inner.kind != "unknown":
        return inner
    if " " not in span.strip() and (span.lower() in _DEMONYMS or _DEMONYM_RE.fullmatch(span)) \
            and re.match(r"\s+[a-z]", after) and inner.kind == "unknown" and span.lower() not in PLACE_NAMES:
        return SpanKind("nationality", "an adjective before a noun")
    if prev in HONORIFICS:
        return SpanKind("person", f"honorific '{prev}'")
    if prev in PERSON_NOUNS:
        return SpanKind("person", f"after the role noun '{prev}'")
    if _BORN_AFTER.match(after) and prev not in ("of", "in", "at", "from"):  # not "count of Nájera (b. 1126)"
        return SpanKind("person", "life dates after the name")
    if (m := _APPOSITIVE.match(after)) and m.group(1).lower() in PERSON_NOUNS | _role_suffixed(m.group(1)):
        return SpanKind("person", f"appositive role '{m.group(1)}'")
    if m := re.match(r"\s*,\s*((?:[A-Z][\w'\-]*\s?){1,3})", after):
        if _name_kind(m.group(1)).kind == "place":
            return SpanKind("place", f"followed by the place '{m.group(1).strip()}'")
    if _CAST_LIST.search(before):
        return SpanKind("person", "in a cast list after 'starring'")
    if _PERSON_BY.search(before):
        return SpanKind("person", f"after '{' '.join(before.split()[-2:])}'")
    if m := _PLACE_PREP.search(before):
        return SpanKind("place", f"{_WEAK_CUE} '{m.group().strip()}'", weak=True)
    if start >= 0 and _subject_of_he_she(text, start, span):
        return SpanKind("person", "the next sentence refers to it as he/she")
    return SpanKind("unknown")


def _role_suffixed(word: str) -> frozenset[str]:
    """Role nouns the list misses, by their agent suffix (a weaver, an illustrator, a historian)."""
    w = word.lower()
    return frozenset({w}) if len(w) > 4 and w.endswith(("er", "or", "ist", "ian", "ess")) else frozenset()


def _subject_of_he_she(text: str, start: int, span: str) -> bool:
    """The span opens its sentence and the next sentence opens with a personal pronoun."""
    head = text[:start].rstrip()
    if head and head[-1] not in ".!?\n":
        return False
    rest = text[start + len(span):]
    m = re.search(r"[.!?]\s+(\w+)", rest)
    return m is not None and m.group(1) in ("He", "She", "His", "Her")


def names_noun(span: str, text: str, start: int, noun: str) -> bool:
    """Whether the text calls ``span`` a ``noun`` ("the Tagus is the longest river", "the river
    Tagus", "Holston River", "Giotto, an Italian painter"): the strongest sign of the asked kind."""
    if not noun:
        return False
    if noun in {w.rstrip("s") for w in _words(span)} | set(_words(span)):
        return True
    after = text[start + len(span): start + len(span) + 80]
    before = text[max(0, start - 40): start]
    said = re.match(rf"\s*(?:,\s*|\s+(?:is|was|are|were)\s+)(?:an?|the|one of the)\s+(?:[\w-]+\s+){{0,3}}?{noun}s?\b",
                    after, re.IGNORECASE)
    return bool(said) or bool(re.search(rf"\b{noun}\s+(?:of\s+)?$", before, re.IGNORECASE))


def occurrences(span: str, text: str) -> list[int]:
    """Start offsets of ``span`` in ``text`` as whole words (case-insensitive)."""
    if not span.strip():
        return []
    rx = re.compile(rf"(?<!\w){re.escape(span.strip())}(?!\w)", re.IGNORECASE)
    return [m.start() for m in rx.finditer(text)]


def kind_in_context(span: str, texts: list[str]) -> SpanKind:
    """The kind of ``span`` as the context uses it: the first occurrence whose cues decide,
    preferring a strong cue, then a weak one, over ``unknown``; by the span alone when it does not
    occur."""
    kinds = [span_kind(text[i: i + len(span.strip())], text, i) for text in texts for i in occurrences(span, text)]
    decided = sorted((k for k in kinds if k.kind != "unknown"), key=lambda k: k.weak)
    if not kinds:
        return span_kind(span)
    return decided[0] if decided else kinds[0]


def type_mismatch(expected: AnswerType, answer: str, texts: list[str]) -> str:
    """Why ``answer`` is of the wrong type for a question expecting ``expected`` ("" when it is
    not, or when no cue decides it). A choice question's answer must name one of its options."""
    a = answer.strip().strip(".").strip()
    if expected.options:
        low = a.lower()
        words = set(re.findall(r"\w+", low))
        if any(o.lower() in low or low in o.lower() or words & set(re.findall(r"\w+", o.lower())) - _FILLER
               for o in expected.options):
            return ""
        return f"the question asks to choose between {' and '.join(repr(o) for o in expected.options)}, " \
               f"and '{a}' is neither"
    accepts = expected.accepts
    if not accepts:
        return ""
    got = surface_kind(a)
    if expected.kind in ("date", "number", "yesno"):
        # these are read by pattern alone: a number inside a longer answer still counts
        if got.kind in accepts or (expected.kind == "date" and re.search(rf"\b\d{{3,4}}\b|{_MONTHS}", a)) \
                or (expected.kind == "number" and re.search(rf"\d|\b(?:{'|'.join(_NUMBER_WORDS)})\b", a, re.I)):
            return ""
        return f"the question asks for {expected.label}, and '{a}' is not one"
    if got.kind in ("date", "number", "yesno"):
        return f"the question asks for {expected.label}, and '{a}' is a {got.kind}"
    found = kind_in_context(a, texts)
    if found.kind in ("unknown",) or found.kind in accepts:
        return ""
    if found.kind == "event" and expected.kind == "title":
        return ""  # a series or a game may be named after one ("World Championship Boxing")
    if found.weak and expected.kind != "person":
        # "at/in X" says place only weakly; a person is the one thing it rules out ("in Kellhaven"
        # is not who designed the bridge), while a school or a film may well follow "at"/"in"
        return ""
    return f"the question asks for {expected.label}, and '{a}' is {_article(found.kind)} ({found.cue})"


_FILLER = frozenset("the a an of and or in film song album".split())


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
