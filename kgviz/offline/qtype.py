"""The offline toolkit's one question-type classifier: what kind of answer a question asks for.

Used by the extractive answer (which span to cut), by its item-number guard (a bare number may be
a real answer to a number or date question) and by kg-rag's offline evaluate (do the facts hold an
answer of this type yet?). Two copies used to disagree; the rules below are their union, with one
order deciding overlaps (ours, no paper defines it):

1. number: "how many/much/old/long/far/tall/big/large/high", "what number/percentage/amount".
   Checked before date, so "How old was X when Y opened?" asks for an age, not a date: the
   "when" clause only says at which moment the age is taken.
2. date: "when", "what/which year/date/decade/century/month/day".
3. yesno: the question opens with an auxiliary ("Is", "Did", "Has" ...).
4. person: "who/whom/whose".
5. place: "where", "what/which city/country/.../island".
6. entity: anything else.

Cues are searched anywhere in the question (lower-cased), so "In what year ..." and "The bridge
was designed by whom?" are typed as well as questions that open with the cue.
"""
from __future__ import annotations

import re
from typing import Literal

QuestionType = Literal["number", "date", "yesno", "person", "place", "entity"]

_NUMBER = re.compile(r"\bhow (?:many|much|old|long|far|tall|big|large|high)\b|\bwhat (?:number|percentage|amount)\b")
_DATE = re.compile(r"\bwhen\b|\b(?:what|which) (?:year|date|decade|century|month|day)\b")
_YESNO = re.compile(r"(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b")
_PERSON = re.compile(r"\b(?:who|whom|whose)\b")
_PLACE = re.compile(r"\bwhere\b|\b(?:what|which) (?:city|country|state|town|village|county|place|region|"
                    r"continent|island)\b")


def question_type(question: str) -> QuestionType:
    """The kind of answer ``question`` asks for (see the module docstring for the rules)."""
    q = question.lower().strip()
    if _NUMBER.search(q):
        return "number"
    if _DATE.search(q):
        return "date"
    if _YESNO.match(q):
        return "yesno"
    if _PERSON.search(q):
        return "person"
    if _PLACE.search(q):
        return "place"
    return "entity"
