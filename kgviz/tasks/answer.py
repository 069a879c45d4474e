"""The "answer" reasoning task: the one step every method's context goes through.

Inputs: ``question``; ``context`` (the rendered, budget-cut evidence block); ``passages`` (the same
evidence as a list of texts, for the offline heuristic); ``no_context`` (the no-retrieval baseline:
render NO_CONTEXT instead of ANSWER).

Offline there is no model memory, so the heuristic is extractive: it picks the evidence sentence
closest to the question (embedding cosine + content-word overlap) and cuts a short span out of it
by question type (who -> a name, when -> a date, how many -> a number, where -> a place, which/what
-> a capitalised span the question does not already contain), falling back to the sentence.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from kgviz.errors import LLMOutputError
from kgviz.prompts.answer import ANSWER, ANSWER_SYSTEM, INSUFFICIENT, NO_CONTEXT
from kgviz.providers.base import Embedder
from kgviz.reasoning import Task, register
from kgviz.text import split_sentences

# the heuristic embeds every sentence; beyond this the evidence is long enough that the tail
# rarely holds the best sentence, and latency matters more
_MAX_SENTENCES = 300
# below this (and with no shared content word) no sentence is about the question: abstain
_MIN_COSINE = 0.15
# ours: a short answer plus room for a chatty preamble or a short <think> block; a looping reply
# on a CPU model costs minutes per 100 tokens, so no more
ANSWER_MAX_TOKENS = 256

_STOP = frozenset(
    """a an the of in on at to for from by with and or but is are was were be been being am do does
    did has have had what which who whom whose when where why how many much that this these those it
    its as into than then there their his her he she they them him i we you our your my me also not
    no yes if so such can could would should will may might one both either neither same other""".split()
)
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
# "Answer:", "**Final answer** -", "A:"; a bare "A" needs its colon ("A-ha" is an answer)
_PREFIX_RE = re.compile(
    r"^\s*(?:\*\*)?(?:(?:final\s+|short\s+)?answer\s*(?:\*\*)?\s*[:\-\u2013]|a\s*(?:\*\*)?\s*:)\s*",
    re.IGNORECASE,
)


def _render(inputs: dict[str, Any]) -> str:
    if inputs.get("no_context"):
        return NO_CONTEXT.format(question=inputs["question"])
    return ANSWER.format(question=inputs["question"], context=inputs.get("context", "") or "(no context)")


_THINK_RE = re.compile(r"<think>.*?(?:</think>|\Z)", re.IGNORECASE | re.DOTALL)
_LABEL_LINE_RE = re.compile(r"^\s*(?:\*\*)?(?:final\s+|short\s+)?answer\s*(?:\*\*)?\s*[:\-\u2013]", re.IGNORECASE)
# "Based on the context, the answer is X" -> "X" (small models wrap the answer in prose)
_LEAD_IN_RE = re.compile(
    r"^(?:(?:based|according)\s+(?:on|to)\s+(?:the\s+)?(?:given\s+|provided\s+)?(?:context|information|passages?|facts)"
    r"(?:\s+provided|\s+given|\s+above)?\s*,\s*)?(?:the\s+(?:short\s+|final\s+)?answer\s+is\s*:?\s*)",
    re.IGNORECASE,
)
# "[2]", "(2)", "item 2", "passage #2": a pointer into the numbered context, not an answer
_BRACKETED_NUMBER_RE = re.compile(r"^[\[(]\s*(\d{1,3})\s*[\])]\.?$")
_ITEM_NUMBER_RE = re.compile(r"^(?:(?:context\s+)?(?:item|passage|evidence|context|source|fact)\s*#?\s*)?(\d{1,3})\.?$", re.I)


def _answer_lines(raw: str) -> list[str]:
    """The lines to read the answer from: <think> blocks dropped, and when the reply labels its
    answer after some prose ("...reasoning...\nAnswer: X"), the last labelled line onwards."""
    text = _THINK_RE.sub("\n", raw).strip().strip("`").strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    labelled = [i for i, ln in enumerate(lines) if _LABEL_LINE_RE.match(ln)]
    if labelled and labelled[-1] > 0:
        lines = lines[labelled[-1]:]
    if lines:
        lines[0] = _PREFIX_RE.sub("", lines[0]).strip()
        if not lines[0].strip("* "):
            lines = lines[1:]  # "Answer:" on a line of its own, the answer below it
    return lines


def item_number_answer(answer: str, inputs: dict[str, Any]) -> int | None:
    """The context item an answer points at instead of answering ("1" for "see item [1]"), or
    None. A bare number counts only when it is a valid item number and the question does not ask
    for a number or date that the context itself states (then "3" may be the answer)."""
    passages = list(inputs.get("passages") or [])
    if not passages or inputs.get("no_context"):
        return None
    m = _BRACKETED_NUMBER_RE.match(answer)
    if m and 1 <= int(m.group(1)) <= len(passages):
        return int(m.group(1))
    m = _ITEM_NUMBER_RE.match(answer)
    if not m or not 1 <= int(m.group(1)) <= len(passages):
        return None
    n = m.group(1)
    numeric = question_type(str(inputs.get("question") or "")) in ("number", "date")
    stated = any(re.search(rf"(?<![\d\[]){n}(?![\d\]])", p) for p in passages)
    return None if numeric and stated and answer.strip(".") == n else int(n)


def _parse(raw: str, inputs: dict[str, Any]) -> str:
    lines = _answer_lines(raw)
    if not lines:
        raise LLMOutputError("the model returned an empty answer", hint="retry, or try another model")
    answer = _PREFIX_RE.sub("", lines[0]).strip().strip("*").strip().strip("\"'\u201c\u201d").strip()
    if INSUFFICIENT in answer.lower():
        return INSUFFICIENT
    answer = _LEAD_IN_RE.sub("", answer).strip().strip("*").strip().strip("\"'\u201c\u201d").strip()
    item = item_number_answer(answer.rstrip("."), inputs)
    if item is not None:
        # a 1.5B model answered "1" (the item's number); accepting it scored as a wrong answer
        raise LLMOutputError(f"the model answered with the number of context item [{item}], not an answer: {raw[:80]!r}",
                             hint="retry, or try a larger model")
    if answer.endswith(".") and len(answer.split()) <= 8 and not re.search(r"\b[A-Z]\.$", answer):
        answer = answer[:-1].rstrip()
    if not answer:
        raise LLMOutputError(f"the model's answer has no content: {raw[:200]!r}")
    return answer


def _stem(word: str) -> str:
    # crude on purpose: "lies"/"lie", "designed"/"design" should meet; no stemmer data offline
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _content_words(text: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"\w+", text.lower()) if w not in _STOP and len(w) > 1}


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
        out.add(_stem(m.group(1).lower()))
    for m in _PARTICIPLE_RE.finditer(question):
        out.add(_stem(m.group(1).lower()))
    return out


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


def _offline(inputs: dict[str, Any], embedder: Embedder) -> tuple[str, str]:
    question: str = inputs["question"]
    if inputs.get("no_context"):
        return INSUFFICIENT, "offline mode has no model memory: without retrieval it always abstains"
    sents = _scored_sentences(list(inputs.get("passages") or []))[:_MAX_SENTENCES]
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


ANSWER_TASK = register(
    Task(
        name="answer",
        prompt_name="ANSWER",
        render=_render,
        parse=_parse,
        offline=_offline,
        system=ANSWER_SYSTEM,
        max_tokens=ANSWER_MAX_TOKENS,
    )
)
