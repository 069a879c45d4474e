"""The offline toolkit's one question classifier: what kind of answer a question asks for.

``answer_type`` is the classifier; ``question_type`` is its coarse view (number, date, yesno,
person, place, entity), kept for the callers that only need that much: the answer step's
item-number guard (a bare number may be a real answer to a number or date question) and kg-rag's
offline evaluate (do the facts hold an answer of this type yet?). The extractive answer and the
offline judge read the full ``AnswerType`` (kgviz.offline.answer_types types the candidate spans).

Rules, first match wins (ours, no paper defines them):

1. number: "how many/much/old/long/far/tall/big/large/high", "what number/percentage/amount",
   "what (is|was) the population". Checked before date, so "How old was X when Y opened?" asks for
   an age, not a date: the "when" clause only says at which moment the age is taken.
   "how tall/long/far/high/big/large/deep/wide" asks for a measurement, answered with its unit;
   "how many members" names the counted noun (``unit``), which picks among several numbers.
2. date: "when", "what/which year/date/decade/century/month/day", "date of birth/death",
   "birthday".
3. yesno: the question opens with an auxiliary ("Is", "Did", "Has" ...).
4. an opening "who/whom/whose" (person) or "where" (place), see 6 and 7.
5. the wh-phrase's own noun: "which Canadian rock band" -> organisation, "what English
   essayist" -> person, "which 1932 film" -> title, "which town" / "the place of birth" -> place.
   It beats a "who" later in the question ("Which band had a drummer who ...").
6. person: "who/whom/whose" opening or closing the question ("Who ...", "... by whom?"), not a
   relative "who" after a noun ("a footballer who plays for ..."). An organisation is accepted
   too ("Who released the album?" may be a band), a person preferred.
7. place: "where" opening or closing the question; an organisation is accepted ("Where did he
   study?" -> a university).
8. entity: anything else (no type is checked).

A question that names its options ("..., A or B?", "Is A or B public?") expects one of them:
``options`` holds them, whatever the wh-word says.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

QuestionType = Literal["number", "date", "yesno", "person", "place", "entity"]
AnswerKind = Literal["number", "date", "yesno", "person", "organisation", "place", "title", "entity"]

_LEAD = r"^\W*(?:(?:and|so|then|in|on|at|for|from|to|by|with|of|until|till|since|during|after|before)\s+)?"
_NUMBER = re.compile(r"\bhow (?:many|much|old|long|far|tall|big|large|high|deep|wide)\b"
                     r"|\bwhat (?:number|percentage|amount)\b|\bwhat (?:is|was) the population\b")
_MEASURE = re.compile(r"\bhow (tall|long|far|high|big|large|deep|wide)\b")
_COUNTED = re.compile(r"\b(?i:how many)\s+(?:[A-Z][\w-]*\s+){0,3}([a-z][a-z-]+)")
_DATE = re.compile(r"\b(?:what|which) (?:year|date|decade|century|month|day)\b|\bdate of (?:birth|death)\b"
                   r"|\bbirth ?(?:day|date)\b")
_YESNO = re.compile(r"(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b")
# a wh-word that asks the question: at its start (after a preposition) or at its end ("... born where?")
_OPENING_WH = re.compile(_LEAD + r"(who|whom|whose|where|when)\b")
_CLOSING_WH = re.compile(r"\b(who|whom|where|when)(?:\s+(?:is|was|are|were)\s+(?:he|she|it|they))?\s*\W*$")
_BY_WHOM = re.compile(r"\b(?:by|to|with|for|from) whom\b")
_NOT_NOUN = frozenset("is was are were be been do does did has have had can could will would should may might "
                      "of in on at by for to from with kind type sort part".split())
_PLACE_OF = re.compile(r"\bplace of (?:birth|death|burial)\b|\bbirthplace\b|\bburial place\b")

# the noun of "which/what <noun>" -> the kind of answer it asks for (ours; plural forms by "s")
PLACE_NOUNS = frozenset("""city town village country state county place region continent island province
    district suburb neighbourhood neighborhood location area river mountain lake sea ocean peak
    capital municipality borough parish territory nation street square peninsula valley""".split())
ORG_NOUNS = frozenset("""company band team club university college school organization organisation
    label airline league party corporation firm brand network studio publisher
    agency institution institute academy museum orchestra army navy""".split())
TITLE_NOUNS = frozenset("""film movie book novel album song play show series opera poem single
    documentary sitcom musical episode game magazine painting sculpture telenovela comic""".split())
PERSON_NOUNS = frozenset("""person man woman boy girl actor actress singer director writer author
    player footballer painter composer musician poet novelist politician president king queen
    prince princess emperor leader founder architect engineer scientist physicist chemist
    philosopher artist guitarist drummer bassist vocalist rapper producer champion
    essayist playwright journalist coach manager wife husband son daughter father mother brother
    sister child cyclist boxer wrestler fighter driver pilot astronaut inventor designer explorer
    economist historian comedian entertainer model dancer businessman entrepreneur executive
    officer general saint pope bishop monarch ruler nobleman behaviorist""".split())


@dataclass(frozen=True)
class AnswerType:
    """What a question asks for. ``accepts`` are the span kinds that count as the right type
    (the first one preferred); ``cue`` is the question text that decided it, for reasons shown
    to the user; ``unit`` is the counted noun or measured dimension of a number question;
    ``options`` the named options of a choice question."""

    kind: AnswerKind
    cue: str = ""
    unit: str = ""
    measure: bool = False
    options: tuple[str, ...] = ()
    noun: str = ""  # the wh-phrase's noun, singular ("river" for "Which river ..."), when it named the kind

    @property
    def accepts(self) -> tuple[str, ...]:
        if self.kind in ("person", "place") and self.cue in ("who", "where"):
            return (self.kind, "organisation")  # "Who released it?" a band; "Where did he study?" a school
        return {"person": ("person",), "place": ("place",), "organisation": ("organisation",),
                "title": ("title",), "date": ("date",), "number": ("number",), "yesno": ("yesno",)
                }.get(self.kind, ())

    @property
    def coarse(self) -> QuestionType:
        return "entity" if self.kind in ("organisation", "title") else self.kind  # type: ignore[return-value]

    @property
    def label(self) -> str:
        """How a reason names it: "a place ('which town')"."""
        what = {"organisation": "an organisation", "entity": "an entity", "yesno": "yes or no"}.get(
            self.kind, f"a {self.kind}")
        return f"{what} ('{self.cue}')" if self.cue else what


def _singular(word: str) -> str:
    w = word.lower()
    for suffix, repl in (("ies", "y"), ("es", ""), ("s", "")):
        if w.endswith(suffix) and (w[: len(w) - len(suffix)] + repl) in _ALL_NOUNS:
            return w[: len(w) - len(suffix)] + repl
    return w


def _noun_kind(noun: str) -> AnswerKind | None:
    n = _singular(noun)
    for kind, nouns in (("place", PLACE_NOUNS), ("organisation", ORG_NOUNS), ("title", TITLE_NOUNS),
                        ("person", PERSON_NOUNS)):
        if n in nouns:
            return kind  # type: ignore[return-value]
    return None


_ALL_NOUNS = PLACE_NOUNS | ORG_NOUNS | TITLE_NOUNS | PERSON_NOUNS


_TOKEN = re.compile(r"[\w'\-]+")
_WH_WORD = re.compile(r"\b(?:which|what)\b(?:\s+(?:is|was|were|are)\s+(?:the\s+)?(?:name|title)\s+of)?", re.I)


def _wh_noun(question: str) -> tuple[AnswerKind, str, str] | None:
    """The kind named by "which/what [modifiers] <noun>" ("which Canadian rock band", "what is the
    name of the executive producer"): the first lowercase word of the phrase that names a kind,
    within five words and before any auxiliary or preposition ("what kind of musician" names none)."""
    if m := _PLACE_OF.search(question.lower()):
        return "place", m.group(), ""
    for m in _WH_WORD.finditer(question):
        rest = question[m.end():]
        for n, t in enumerate(_TOKEN.finditer(rest)):
            word = t.group()
            if n >= 5 or word.lower() in _NOT_NOUN:
                break
            kind = _noun_kind(word) if word[0].islower() else None
            if kind is not None:
                return kind, f"{m.group()} {rest[: t.end()].strip()}", _singular(word)
    return None


def choice_options(question: str) -> tuple[str, ...]:
    """The two options of a choice question: "..., A or B?" (or "...: A or B?"), else the
    capitalised runs on both sides of " or " ("Is Rutgers University or Brown University public?",
    "Who was born first Iain Pears or Richard Llewellyn ?")."""
    m = re.search(r"[,:]\s*([^,:?]+?)\s+or\s+([^,?]+?)\s*\?*\s*$", question) or \
        re.search(r",\s*([^,:]+?\?)\s+or\s+([^,?]+?)\s*\?*\s*$", question)  # "..., What Will You Do? or B?"
    if m:
        return m.group(1).strip(), m.group(2).strip()
    m = re.search(r"((?:[A-Z][\w.'\u2019\-]*\s+)*[A-Z][\w.'\u2019\-]*),?\s+or\s+((?:[A-Z][\w.'\u2019\-]*)"
                  r"(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][\w.'\u2019\-]*)*)", question)
    if not m:
        return ()
    left = m.group(1).split()
    while left and left[0].lower() in _LEAD_CAPS:  # "Is Baiyin" -> "Baiyin"
        left = left[1:]
    return (" ".join(left), m.group(2)) if left else ()


_LEAD_CAPS = frozenset("is are was were do does did which who what when where how has have had".split())


def answer_type(question: str) -> AnswerType:
    """What ``question`` asks for (see the module docstring for the rules)."""
    q = " ".join(question.strip().split())
    low = q.lower()
    options = choice_options(q) if " or " in q else ()
    if m := _NUMBER.search(low):
        measure = _MEASURE.search(low)
        counted = _COUNTED.search(q)
        unit = measure.group(1) if measure else (counted.group(1).lower() if counted else "")
        return AnswerType("number", m.group(), unit=unit, measure=bool(measure), options=options)
    opening = _OPENING_WH.match(low)
    closing = _CLOSING_WH.search(low)
    wh = {g for g in ((opening.group(1) if opening else ""), (closing.group(1) if closing else "")) if g}
    if m := _DATE.search(low):
        return AnswerType("date", m.group(), options=options)
    if "when" in wh:
        return AnswerType("date", "when", options=options)
    if _YESNO.match(low):
        return AnswerType("yesno", low.split()[0], options=options)
    # an opening "who/where" asks the question; a "which <noun>" elsewhere is then a relative
    if opening and opening.group(1) in ("who", "whom", "whose"):
        return AnswerType("person", "who", options=options)
    if opening and opening.group(1) == "where":
        return AnswerType("place", "where", options=options)
    if noun := _wh_noun(q):
        return AnswerType(noun[0], noun[1], options=options, noun=noun[2])
    if wh & {"who", "whom", "whose"} or _BY_WHOM.search(low):
        return AnswerType("person", "who", options=options)
    if "where" in wh:
        return AnswerType("place", "where", options=options)
    return AnswerType("entity", options=options)


def question_type(question: str) -> QuestionType:
    """The coarse kind of answer ``question`` asks for (``answer_type(question).coarse``)."""
    return answer_type(question).coarse
