"""Question-type classifiers of the offline toolkit: what kind of answer a question asks for.

Stage 1 of issue 11: the two classifiers that used to live in their callers (the extractive
answer's ``question_type`` and kg-rag's offline evaluate ``answer_type``), moved here unchanged.
They disagree ("How old was X when Y opened?" is a date for one, a number for the other) and are
unified in a following step.
"""
from __future__ import annotations

import re


def question_type(question: str) -> str:
    """One of number, date, yesno, person, place, entity."""
    q = question.lower().strip()
    if re.search(r"\bhow (?:many|much)\b|\bwhat (?:number|percentage|amount)\b", q):
        return "number"
    if re.search(r"\bwhen\b|\b(?:what|which|in what) (?:year|date|decade|century|month)\b", q):
        return "date"
    if re.match(r"(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", q):
        return "yesno"
    if re.search(r"\b(?:who|whom|whose)\b", q):
        return "person"
    if re.search(r"\bwhere\b|\b(?:what|which|in what) (?:city|country|state|town|county|place|region|continent)\b", q):
        return "place"
    return "entity"


def answer_type(question: str) -> str:
    q = question.strip().lower()
    if re.match(r"(when|(in |on )?(what|which) (year|date))\b", q) or " what year" in q:
        return "date"
    if re.match(r"how (many|much|old|long|far|tall|big)\b", q):
        return "number"
    if re.match(r"(who|whom|whose)\b", q):
        return "person"
    if re.match(r"where\b", q) or re.match(
            r"(in |at |from )?(which|what) (town|city|village|country|region|state|county|place|island)\b", q):
        return "place"
    if re.match(r"(is|are|was|were|do|does|did|can|has|have|had)\b", q):
        return "yesno"
    return "entity"
