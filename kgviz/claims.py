"""Atomic claims of an answer, and abstention detection.

A claim keeps the character span of the answer it came from, so the UI can colour the answer by
verdict. Offline splitting (``kgviz.offline.claims.split_offline``) is heuristic:

* an abstention ("insufficient information", "I don't know", ...) has no claims;
* a short answer (one sentence of at most ``SHORT_ANSWER_WORDS`` words, what the shared answer
  prompt asks for) is one claim, "The answer to <question> is <answer>", whose *focus* (the part
  that must be grounded) is the answer itself;
* a longer answer is split into sentences, and each sentence at "; " and at "and/but/while"
  when both sides carry a verb. A right-hand side that starts with its verb borrows the subject
  of the left-hand side ("She was born in Tarrow and founded ..." -> "She founded ...").

A leaf (it imports only ``kgviz.text``): the offline split (``kgviz.offline.claims``) and the
claim judge (``kgviz.verify.judge``) both build on it, and neither imports the other for it.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from kgviz.text import sentence_spans

SHORT_ANSWER_WORDS = 12  # ours: the shared ANSWER prompt asks for a name, date or short phrase

# Normalised forms of answers that decline to answer. Matched against the whole answer or its
# first sentence, so "I don't know who designed it." abstains but "Nobody knows" does not.
_ABSTAIN_RE = re.compile(
    r"^(?:"
    r"insufficient (?:information|context|evidence)"
    r"|not enough (?:information|context|evidence)"
    r"|(?:i )?(?:do not|don ?t|dont) know"
    r"|i am not sure|i m not sure"
    r"|(?:it |this |the answer )?cannot be (?:determined|answered|found)|can ?not be (?:determined|answered)"
    r"|(?:the )?(?:context|information|evidence|text|passages?) (?:does|do) not (?:contain|provide|say|mention|specify|state)"
    r"|there is no (?:information|mention|evidence)|no (?:information|mention|evidence) (?:about|on|of|in)"
    r"|unable to (?:answer|determine)|i cannot answer|i can ?t answer"
    r")\b"
)
# one-word refusals only count as the whole answer: "Unknown Pleasures" is an answer
_ABSTAIN_WHOLE = frozenset({"unknown", "n a", "na", "none found", "no answer", "not stated", "not mentioned",
                            "not specified", "not provided", "not known", "unclear"})


@dataclass
class Claim:
    text: str  # the claim as judged (may borrow a subject or restate the question)
    start: int  # span of the answer this claim came from ([start, end) character offsets)
    end: int
    focus: str = ""  # the asserted part that must be grounded; empty = the whole claim

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def is_abstention(answer: str) -> bool:
    """True for answers that decline ("insufficient information", "I don't know", "cannot be
    determined", "The context does not contain ...") and for an empty answer."""
    text = answer.strip()
    if not text:
        return True
    spans = sentence_spans(text)
    first = text[spans[0][0]: spans[0][1]] if spans else text
    return any(_ABSTAIN_RE.match(_norm(t)) or _norm(t) in _ABSTAIN_WHOLE for t in (text, first))


def is_short(answer: str) -> bool:
    text = answer.strip()
    return len(sentence_spans(text)) <= 1 and len(text.split()) <= SHORT_ANSWER_WORDS


def short_claim(question: str, answer: str) -> Claim:
    text = answer.strip()
    start = answer.find(text)
    q = question.strip().rstrip("?").strip()
    return Claim(f"The answer to \"{q}?\" is {text.rstrip('.')}.", start, start + len(text), focus=text)


def locate(answer: str, claim: str) -> tuple[int, int]:
    """Span of ``claim`` in ``answer`` when it is a (case-insensitive) substring; else (-1, -1).
    LLM-split claims are often rephrased, so a missing span is normal, not an error."""
    text = claim.strip().rstrip(".")
    i = answer.lower().find(text.lower()) if text else -1
    return (i, i + len(text)) if i >= 0 else (-1, -1)
