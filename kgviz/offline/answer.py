"""The offline "answer" heuristic: an extractive answer from the evidence, no model.

Offline there is no model memory, so the answer is extractive: the evidence sentence closest to
the question (embedding cosine + content-word overlap + a bonus for stating the asked relation)
and a short span cut out of it by question type (``kgviz.offline.qtype``: who -> a name, when ->
a date, how many -> a number, where -> a place, which/what -> a capitalised span the question
does not already contain), falling back to the sentence. All rules are ours.
"""
from __future__ import annotations

import re

import numpy as np

from kgviz.offline.qtype import question_type
from kgviz.offline.stem import stem
from kgviz.offline.stopwords import STOPWORDS as _STOP
from kgviz.prompts.answer import INSUFFICIENT
from kgviz.providers.base import Embedder
from kgviz.text import split_sentences

# the heuristic embeds every sentence; beyond this the evidence is long enough that the tail
# rarely holds the best sentence, and latency matters more
_MAX_SENTENCES = 300
# below this (and with no shared content word) no sentence is about the question: abstain
_MIN_COSINE = 0.15
_PRONOUNS = frozenset("he she it they his her its their this these".split())
_CONNECTORS = r"(?:of|the|de|del|della|da|du|des|von|van|der|den|la|le|di|y|for|on|upon)"
_WORD = r"[A-Z][\w'\u2019\-]*"
_CAP_SPAN_RE = re.compile(rf"{_WORD}(?:\s+(?:{_CONNECTORS}\s+)*{_WORD})*")
_MONTHS = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_FULL_DATE_RE = re.compile(
    rf"\b(?:\d{{1,2}}\s+{_MONTHS}\s+\d{{3,4}}|{_MONTHS}\s+\d{{1,2}},?\s+\d{{3,4}}|{_MONTHS}\s+\d{{3,4}})\b"
)
_YEAR_RE = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})s?\b")
_NUMBER_WORDS = """one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    sixteen seventeen eighteen nineteen twenty thirty forty fifty hundred thousand""".split()
_NUMBER_RE = re.compile(
    rf"\b(?:\d[\d,]*(?:\.\d+)?|{'|'.join(_NUMBER_WORDS)})(?:\s+(?:hundred|thousand|million|billion))?\b",
    re.IGNORECASE,
)
_PLACE_CUE_RE = re.compile(r"\b(?:in|at|from|near|to|into|of)\s+$", re.IGNORECASE)
_PERSON_CUE_RE = re.compile(r"\b(?:by|with|and|named|called|to)\s+$", re.IGNORECASE)


def _content_words(text: str) -> set[str]:
    return {stem(w) for w in re.findall(r"\w+", text.lower()) if w not in _STOP and len(w) > 1}


def _scored_sentences(passages: list[str]) -> list[tuple[int, str, str]]:
    """(passage index, sentence, text to score it by). A sentence opening with a pronoun is scored
    together with the sentence before it, a stand-in for coreference ("It was designed by ...")."""
    out: list[tuple[int, str, str]] = []
    for i, passage in enumerate(passages):
        prev = ""
        for sent in split_sentences(passage):
            if not sent.strip():
                continue
            first = sent.split(maxsplit=1)[0].lower().strip(",")
            out.append((i, sent, f"{prev} {sent}" if prev and first in _PRONOUNS else sent))
            prev = sent
    return out


_WH_PREDICATE_RE = re.compile(r"^\W*(?:who|whom)\s+(\w+)", re.I)
_PARTICIPLE_RE = re.compile(r"\b(?:was|were|is|are)\s+(?:\w+\s+){0,6}?(\w+ed)\b", re.I)


def predicate_words(question: str) -> set[str]:
    """The relation the question asks about: the verb right after "who/what" ("Who designed ...")
    or a passive participle ("... was the Tidewell Line founded?"). Multi-hop questions name
    several relations; this one is the answer's, so sentences stating it are preferred (ours)."""
    out: set[str] = set()
    m = _WH_PREDICATE_RE.match(question)
    if m and m.group(1).lower() not in _STOP:
        out.add(stem(m.group(1).lower()))
    for m in _PARTICIPLE_RE.finditer(question):
        out.add(stem(m.group(1).lower()))
    return out


def _options(question: str) -> list[str]:
    """The two options of a comparison question ("..., A or B?")."""
    m = re.search(r"[,:]\s*([^,:?]+?)\s+or\s+([^,?]+?)\s*\?*\s*$", question)
    return [m.group(1).strip(), m.group(2).strip()] if m else []


def _spans(sentence: str, question_words: set[str]) -> list[tuple[int, str]]:
    """Capitalised spans the question does not already name, with their start offsets."""
    out: list[tuple[int, str]] = []
    for m in _CAP_SPAN_RE.finditer(sentence):
        words = m.group().split()
        start = m.start()
        while words and words[0].lower() in _STOP:  # "In New York" -> "New York"
            start += len(words[0]) + 1
            words = words[1:]
        if not words:
            continue
        span = re.sub(r"['\u2019]s$", "", " ".join(words))
        names = {w.lower() for w in re.findall(r"\w+", span)} - _STOP
        if names and not names <= question_words:
            out.append((start, span))
    return out


def _typed_span(qtype: str, sentence: str, question: str) -> tuple[str, str, bool] | None:
    """(answer, rule, strong) for one sentence, or None when it has nothing of that type. A weak
    span (a place with no "in/at/from" before it, a one-word "who" answer) is used only when no
    runner-up sentence has a strong one."""
    qwords = set(re.findall(r"\w+", question.lower()))
    if qtype == "date":
        if "year" not in question.lower():
            for m in _FULL_DATE_RE.finditer(sentence):
                if m.group() not in question:
                    return m.group(), "date: full date", True
        for m in _YEAR_RE.finditer(sentence):
            if m.group(1) not in question:
                return m.group(1), "date: year", True
        return None
    if qtype == "number":
        for m in _NUMBER_RE.finditer(sentence):
            if not _YEAR_RE.fullmatch(m.group()) and m.group().lower() not in qwords:
                return m.group(), "number", True
        return None
    spans = _spans(sentence, qwords)
    if not spans:
        return None
    if qtype == "person":
        def person_key(s: tuple[int, str]) -> tuple[int, int]:
            return (-(len(s[1].split()) >= 2) - bool(_PERSON_CUE_RE.search(sentence[: s[0]])), s[0])
        start, span = min(spans, key=person_key)
        return span, "who: capitalised name not in the question", person_key((start, span))[0] < 0
    if qtype == "place":
        cued = [sp for sp in spans if _PLACE_CUE_RE.search(sentence[: sp[0]])]
        return (cued or spans)[0][1], "where: capitalised span after in/at/from", bool(cued)
    return spans[0][1], "which/what: first capitalised span not in the question", True


_PREDICATE_BONUS = 0.5  # ours: a sentence stating the asked relation beats one merely sharing words
_PREDICATE_WINDOW = 5  # ours: ... and wins outright among this many best-scoring sentences


def extractive_answer(question: str, passages: list[str], embedder: Embedder, *,
                      no_context: bool = False) -> tuple[str, str]:
    """(answer, how it was found): the offline "answer" task (see the module docstring)."""
    if no_context:
        return INSUFFICIENT, "offline mode has no model memory: without retrieval it always abstains"
    sents = _scored_sentences(passages)[:_MAX_SENTENCES]
    if not sents:
        return INSUFFICIENT, "extractive: the context is empty"
    vecs = np.asarray(embedder.embed([question] + [t for _, _, t in sents]), dtype=np.float32)
    cos = vecs[1:] @ vecs[0]
    qwords = _content_words(question)
    overlap = np.array([len(qwords & _content_words(t)) / max(1, len(qwords)) for _, _, t in sents])
    predicate = predicate_words(question)
    states = np.array([bool(predicate & _content_words(s)) for _, s, _ in sents], dtype=np.float32)
    score = cos + overlap + _PREDICATE_BONUS * states
    order = [int(i) for i in np.argsort(-score, kind="stable")]
    if states[order[:_PREDICATE_WINDOW]].any():
        # among the best few, a sentence stating the asked relation wins outright: in a multi-hop
        # question most words describe the bridge entity, only the predicate names the answer's fact
        head = order[:_PREDICATE_WINDOW]
        order = [i for i in head if states[i]] + [i for i in head if not states[i]] + order[_PREDICATE_WINDOW:]
    best = order[0]
    if overlap[best] == 0 and cos[best] < _MIN_COSINE:
        return INSUFFICIENT, "extractive: no context sentence shares a content word with the question"
    where = f"sentence from evidence [{sents[best][0] + 1}] (cosine {cos[best]:.2f} + overlap {overlap[best]:.2f})"
    qtype = question_type(question)
    options = _options(question)
    if options:
        # comparison: the option named in the highest-scoring sentence that names either option
        for i in order:
            low = sents[i][1].lower()
            hits = [o for o in options if o.lower() in low]
            if len(hits) == 1:
                return hits[0], f"extractive: comparison option found in evidence [{sents[i][0] + 1}]"
    if qtype == "yesno":
        verdict = "yes" if overlap[best] >= 0.6 else "no"
        return verdict, f"extractive yes/no: best {where}; 'yes' needs >= 60% of the question's content words"
    # names may sit in the antecedent sentence ("The Tagus is ... It rises in ..."); numbers and
    # dates belong to the sentence that matched the question's predicate
    use = 1 if qtype in ("number", "date") else 2
    found = [(i, f) for i in order[:3] if (f := _typed_span(qtype, sents[i][use], question))]
    if found:  # the best sentence may lack a span of the wanted type; its runners-up may not
        i, (span, rule, _) = next(((i, f) for i, f in found if f[2]), found[0])
        return span, f"extractive ({rule}) from evidence [{sents[i][0] + 1}]; best {where}"
    return sents[best][1].strip(), f"extractive: no {qtype} span found, answering with the best {where}"
