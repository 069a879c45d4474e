"""The "answer" reasoning task: the one step every method's context goes through.

Inputs: ``question``; ``context`` (the rendered, budget-cut evidence block); ``passages`` (the same
evidence as a list of texts, for the offline heuristic); ``no_context`` (the no-retrieval baseline:
render NO_CONTEXT instead of ANSWER).

Offline the extractive heuristic of ``kgviz.offline.answer`` answers instead.
"""
from __future__ import annotations

import re
from typing import Any

from kgviz.errors import LLMOutputError
from kgviz.offline.answer import extractive_answer
from kgviz.offline.qtype import question_type
from kgviz.prompts.answer import ANSWER, ANSWER_SYSTEM, INSUFFICIENT, NO_CONTEXT
from kgviz.providers.base import Embedder
from kgviz.tasks.base import Task, register

# ours: a short answer plus room for a chatty preamble or a short <think> block; a looping reply
# on a CPU model costs minutes per 100 tokens, so no more
ANSWER_MAX_TOKENS = 256

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


def _offline(inputs: dict[str, Any], embedder: Embedder) -> tuple[str, str]:
    return extractive_answer(str(inputs["question"]), list(inputs.get("passages") or []), embedder,
                             no_context=bool(inputs.get("no_context")))


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
