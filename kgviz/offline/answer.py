"""The offline "answer" heuristic: an extractive answer from the evidence, no model.

Offline there is no model memory, so the answer is extractive: the evidence sentence closest to
the question (embedding cosine + content-word overlap + a bonus for stating the asked relation)
and a short span cut out of it of the type the question asks for (``kgviz.offline.qtype.answer_type``):

- "..., A or B?" -> the option named in the best sentence that names only one of them;
- yes/no -> "yes" when the best sentence holds most of the question's content words;
- when / how many -> a date / a number by pattern, the number counting the asked noun first
  ("how many members") and with its unit when a measurement is asked ("38 metres");
- who / where / which town / which company / which film -> the capitalised spans (and quoted
  titles) of the best three sentences, each typed by ``kgviz.offline.answer_types``; a span of the
  asked type wins over a nearer one with no type cue, and a span of another type is never
  answered ("Kellhaven" is not who designed the bridge);
- anything else -> the first capitalised span the question does not already contain.

When nothing of the asked type is found the answer abstains ("insufficient information") and the
trace says why, rather than answering with a span or a sentence of the wrong type. All rules are ours.
"""
from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from dataclasses import dataclass

from kgviz.embedding import Embedder
from kgviz.offline.answer_types import SpanKind, kind_in_context, names_noun, occurrences, span_kind, surface_kind
from kgviz.offline.qtype import AnswerType, answer_type
from kgviz.offline.stem import stem
from kgviz.offline.stopwords import STOPWORDS as _STOP
from kgviz.prompts.answer import INSUFFICIENT
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


@lru_cache(maxsize=1 << 15)  # the same evidence sentences are scored by every method and question
def _content_words(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in re.findall(r"\w+", text.lower()) if w not in _STOP and len(w) > 1)


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


_UNITS = frozenset("""metres meters metre meter m km kilometres kilometers kilometre kilometer miles mile feet
    foot ft inches inch cm centimetres yards kg kilograms tonnes tons pounds lb hectares acres storeys stories
    floors square sq years days hours minutes seconds dollars euros""".split())


def _number_span(sentence: str, question: str, atype: AnswerType) -> tuple[str, str, bool] | None:
    """A number of the asked kind: one counting the asked noun first ("how many members" ->
    "seven members" over "2011"), with its unit when a measurement is asked ("38 metres")."""
    qwords = set(re.findall(r"\w+", question.lower()))
    found = [m for m in _NUMBER_RE.finditer(sentence)
             if not _YEAR_RE.fullmatch(m.group()) and m.group().lower() not in qwords]
    if not found:
        return None
    unit = stem(atype.unit) if atype.unit and not atype.measure else ""
    # "all 30 Major League Baseball teams": the counted noun may follow a short name
    counted = [m for m in found if unit and any(stem(w) == unit for w in
                                                re.findall(r"[a-z]+", sentence[m.end(): m.end() + 50].lower())[:4])]
    m = (counted or found)[0]
    if atype.measure:
        nxt = re.match(r"\s*([A-Za-z]+)", sentence[m.end():])
        if nxt and nxt.group(1).lower() in _UNITS:
            return f"{m.group()} {nxt.group(1)}", f"number with its unit ({atype.cue})", True
    return m.group(), ("number counting '" + atype.unit + "'") if counted else "number", True


def _typed_span(qtype: str, sentence: str, question: str, atype: AnswerType | None = None) -> tuple[str, str, bool] | None:
    """(answer, rule, strong) for one sentence, or None when it has nothing of that type (dates,
    numbers and the untyped "which/what" span; names are chosen by ``_name_candidates``)."""
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
        return _number_span(sentence, question, atype or answer_type(question))
    # a bare month or year is no answer to "what ...": it only dates the fact
    spans = [sp for sp in _spans(sentence, qwords) if surface_kind(sp[1]).kind == "unknown"]
    if not spans:
        return None
    return spans[0][1], "which/what: first capitalised span not in the question", True


@dataclass(frozen=True)
class _Candidate:
    span: str
    sentence: int  # index into the scored sentences
    rank: int  # the sentence's rank among the best (0 = best)
    fit: int  # 3 called the asked noun, 2 preferred kind, 1 accepted kind, 0 no cue, -1 another kind (never answered)
    strength: int  # positional cues: a place after "in/at/from"; a person of two words, after "by/with"
    start: int
    kind: SpanKind


def _name_candidates(atype: AnswerType, sents: list[tuple[int, str, str]], order: list[int],
                     passages: list[str], question: str) -> list[_Candidate]:
    """Capitalised spans of the best sentences, each typed by kgviz.offline.answer_types."""
    qwords = set(re.findall(r"\w+", question.lower()))
    out: list[_Candidate] = []
    for rank, i in enumerate(order[:_NAME_WINDOW]):
        text = sents[i][2]
        passage = passages[sents[i][0]]
        base = passage.find(text)
        for start, span in _candidate_spans(text, qwords):
            kind = span_kind(span, passage, base + start) if base >= 0 else span_kind(span, text, start)
            if kind.kind == "unknown":  # no cue here: the other places the context uses it may have one
                kind = kind_in_context(span, passages)
            fit = (2 if kind.kind == atype.accepts[0] else 1 if kind.kind in atype.accepts
                   else 0 if kind.kind == "unknown" else -1)
            if fit >= 0 and atype.noun:
                # "Which river ...?": "the Tagus is the longest river" beats "Spain", a place too;
                # said elsewhere in the context it only counts as the asked kind (a weaker sign)
                here = names_noun(span, passage if base >= 0 else text, (base if base >= 0 else 0) + start, atype.noun)
                if here:
                    fit, kind = 3, SpanKind(atype.kind, f"called a {atype.noun}")
                elif fit < 2 and any(names_noun(span, p, k, atype.noun) for p in passages for k in occurrences(span, p)):
                    fit, kind = 2, SpanKind(atype.kind, f"called a {atype.noun} elsewhere in the context")
            if atype.kind == "person":
                strength = (len(span.split()) >= 2) + bool(_PERSON_CUE_RE.search(text[:start]))
            elif atype.kind == "place":
                strength = int(bool(_PLACE_CUE_RE.search(text[:start])))
            else:
                strength = 1
            out.append(_Candidate(span, i, rank, fit, strength, start, kind))
    return out


_INITIAL_RE = re.compile(r"\.\s?[A-Z][\w'\u2019\-]*(?:\s[A-Z][\w'\u2019\-]*)*")
_QUOTED_RE = re.compile(r"[\"\u201c]([^\"\u201c\u201d]{1,80})[\"\u201d]")
# "Tidewell Shipping Company for the Ossel Marine Institute": two names the span pattern joins
_SPLIT_RE = re.compile(r"\s+(?:for|on|upon)\s+(?:the\s+)?(?=[A-Z])")


def _candidate_spans(text: str, question_words: set[str]) -> list[tuple[int, str]]:
    """Capitalised spans (split where "for/on/upon" joins two names) and quoted titles, which may
    hold lowercase words ("Love in the Ruins")."""
    out: list[tuple[int, str]] = []
    for start, span in _spans(text, question_words):
        # "Philip K. Dick": the span pattern stops at an initial's full stop
        while (m := _INITIAL_RE.match(text, start + len(span))) and re.search(r"\b[A-Z]$", span):
            span = span + m.group()
        pos = 0
        for m in [*_SPLIT_RE.finditer(span), None]:
            piece = span[pos: m.start() if m else len(span)]
            if piece:
                out.append((start + pos, piece))
            pos = m.end() if m else pos
    for m in _QUOTED_RE.finditer(text):
        title = m.group(1).strip().rstrip(",.")
        names = {w.lower() for w in re.findall(r"\w+", title)} - _STOP
        if title[:1].isupper() and names and not names <= question_words:
            out.append((m.start(1), title))
    return sorted(set(out))


def _best_name(cands: list[_Candidate]) -> _Candidate | None:
    """Right type first; then, as before types were read, the best sentence holding a span with a
    positional cue, the strongest cue in it, the first such span."""
    usable = [c for c in cands if c.fit >= 0]
    if not usable:
        return None
    return min(usable, key=lambda c: (-c.fit, -(c.strength > 0), c.rank, -c.strength, c.start))


_NAME_WINDOW = 3  # ours: the best few sentences are searched for a name of the asked type
_COUNT_WINDOW = 10  # ours: ... and this many for a number followed by the counted noun
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
    atype = answer_type(question)
    qtype = atype.coarse
    if atype.options:
        # comparison: the option named in the highest-scoring sentence that names either option
        for i in order:
            low = sents[i][1].lower()
            hits = [o for o in atype.options if o.lower() in low]
            if len(hits) == 1:
                return hits[0], f"extractive: comparison option found in evidence [{sents[i][0] + 1}]"
    if qtype == "yesno":
        verdict = "yes" if overlap[best] >= 0.6 else "no"
        return verdict, f"extractive yes/no: best {where}; 'yes' needs >= 60% of the question's content words"
    if atype.kind in ("person", "place", "organisation", "title"):
        cands = _name_candidates(atype, sents, order, passages, question)
        pick = _best_name(cands)
        if pick is None:
            wrong = "; ".join(f"'{c.span}' is {c.kind.kind} ({c.kind.cue})" for c in cands[:4])
            return INSUFFICIENT, (f"extractive: the question asks for {atype.label}; no candidate of that type in "
                                  f"the best sentences" + (f" ({wrong})" if wrong else "") + f"; best {where}")
        typed = f"{pick.kind.kind}: {pick.kind.cue}" if pick.fit > 0 else "no type cue, none of another type either"
        return pick.span, (f"extractive ({atype.kind}: capitalised span of the asked type; {typed}) from evidence "
                           f"[{sents[pick.sentence][0] + 1}]; best {where}")
    if qtype == "number" and atype.unit and not atype.measure:
        # a number followed by the counted noun ("30 ... teams" for "how many teams") is rare
        # enough to trust a little further down the ranking
        for i in order[:_COUNT_WINDOW]:
            f = _number_span(sents[i][1], question, atype)
            if f and f[1].startswith("number counting"):
                return f[0], f"extractive ({f[1]}) from evidence [{sents[i][0] + 1}]; best {where}"
    # numbers and dates belong to the sentence that matched the question's predicate
    use = 1 if qtype in ("number", "date") else 2
    found = [(i, f) for i in order[:3]
             if (f := _typed_span(qtype, sents[i][1] if use == 1 else sents[i][2], question, atype))]
    if found:  # the best sentence may lack a span of the wanted type; its runners-up may not
        i, (span, rule, _) = next(((i, f) for i, f in found if f[2]), found[0])
        return span, f"extractive ({rule}) from evidence [{sents[i][0] + 1}]; best {where}"
    if qtype in ("number", "date"):
        # a sentence is not a number or a date: say so instead of answering with the wrong type
        return INSUFFICIENT, f"extractive: the question asks for {atype.label}; none in the best sentences; best {where}"
    return sents[best][1].strip(), f"extractive: no {qtype} span found, answering with the best {where}"
