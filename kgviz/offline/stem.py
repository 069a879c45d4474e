"""Stemmers of the offline toolkit: word forms reduced so that "designed" meets "design".

Stage 1 of issue 11: the four stemmers that used to live in their callers (the extractive
answer, kg-rag's offline plan/choose, kg-infused's offline selection, the offline judge), moved
here unchanged under names that say who uses them. They are unified in a following step.
"""
from __future__ import annotations


def answer_stem(word: str) -> str:
    # crude on purpose: "lies"/"lie", "designed"/"design" should meet; no stemmer data offline
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


_KG_RAG_SUFFIXES = ("ions", "ing", "ion", "ers", "ors", "ed", "er", "or", "es", "s", "e")


def kg_rag_stem(word: str) -> str:
    """Lower-case and strip a common suffix, so "director" meets "directed" and "released" meets
    "release" (a crude stemmer, enough for word overlap)."""
    w = word.lower().strip("'’")
    if w.endswith("'s") or w.endswith("’s"):
        w = w[:-2]
    for suf in _KG_RAG_SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= 4 and not w.endswith("ss"):
            return w[: -len(suf)]
    return w


# common irregular past forms, mapped to one stem so "built" matches "build" and "born" "birth"
IRREGULAR_STEMS = {"built": "build", "born": "birth", "bore": "birth", "wrote": "write", "written": "write",
                   "won": "win", "led": "lead", "made": "make", "began": "begin", "begun": "begin", "ran": "run",
                   "sank": "sink", "sunk": "sink", "sold": "sell", "bought": "buy", "held": "hold", "gave": "give",
                   "given": "give", "took": "take", "taken": "take", "met": "meet", "found": "find", "grew": "grow",
                   "drew": "draw", "drawn": "draw", "left": "leave", "became": "become", "kept": "keep",
                   "taught": "teach", "spent": "spend", "lost": "lose", "chose": "choose", "chosen": "choose"}


def judge_stem(word: str) -> str:
    """A crude stem so that designed/designer/design, founded/founder and carried/carry meet."""
    w = word.lower()
    if w in IRREGULAR_STEMS:
        return IRREGULAR_STEMS[w]
    if w.endswith("ied") and len(w) > 4:
        return w[:-3] + "y"
    for suffix in ("ations", "ation", "ions", "ion", "ers", "ing", "ed", "er", "or", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    return w[:-1] if w.endswith("e") and len(w) > 4 else w


def prefix5(word: str) -> str:
    """The first five letters, so "director"/"directed" and "births"/"birth" meet (kg-infused)."""
    return word[:5]
