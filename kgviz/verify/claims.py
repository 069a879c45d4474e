"""Atomic claims of an answer, and abstention detection.

A claim keeps the character span of the answer it came from, so the UI can colour the answer by
verdict. Offline splitting is heuristic:

* an abstention ("insufficient information", "I don't know", ...) has no claims;
* a short answer (one sentence of at most ``SHORT_ANSWER_WORDS`` words, what the shared answer
  prompt asks for) is one claim, "The answer to <question> is <answer>", whose *focus* (the part
  that must be grounded) is the answer itself;
* a longer answer is split into sentences, and each sentence at "; " and at "and/but/while"
  when both sides carry a verb. A right-hand side that starts with its verb borrows the subject
  of the left-hand side ("She was born in Tarrow and founded ..." -> "She founded ...").
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
_VERBS = (r"is|are|was|were|be|been|has|have|had|did|does|do|can|could|will|would|lies|lie|rises|rise|"
          r"flows|holds|hosts|wrote|built|won|became|becomes|led|made|began|runs|ran|stands|sits|"
          r"[a-z]{3,}ed")
# lowercase on purpose: a capitalised "Agnes" or "Wed" is a name, not a verb
_VERB_RE = re.compile(rf"\b(?:{_VERBS})\b")
_LEADING_VERB_RE = re.compile(rf"^(?:{_VERBS})\b")
_SPLIT_RE = re.compile(r";\s+|,?\s+(?:and|but|while|whereas)\s+")


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


def _subject(clause: str) -> str:
    """Words before the first verb of ``clause`` ("Agnes Vohl was born" -> "Agnes Vohl")."""
    m = _VERB_RE.search(clause)
    return clause[: m.start()].strip() if m else ""


def _split_sentence(text: str, offset: int) -> list[Claim]:
    parts: list[tuple[int, int]] = []
    pos = 0
    for m in _SPLIT_RE.finditer(text):
        left, right = text[pos: m.start()], text[m.end():]
        # only split between two clauses; "salt and fish" or "born in 1882 and raised" stay whole
        # unless the right-hand side has a verb of its own
        if _VERB_RE.search(left) and _VERB_RE.search(right.split(";")[0]):
            parts.append((pos, m.start()))
            pos = m.end()
    parts.append((pos, len(text)))
    claims: list[Claim] = []
    subject = _subject(text[parts[0][0]: parts[0][1]])
    for a, b in parts:
        piece = text[a:b].strip().rstrip(".;,")
        if not piece or not re.search(r"\w", piece):
            continue
        claim_text = piece
        if claims and subject and _LEADING_VERB_RE.match(piece):
            claim_text = f"{subject} {piece}"
        lead = len(text[a:b]) - len(text[a:b].lstrip())
        claims.append(Claim(claim_text.rstrip(".") + ".", offset + a + lead, offset + a + lead + len(piece)))
    return claims


def split_offline(question: str, answer: str) -> list[Claim]:
    """Atomic claims of ``answer`` by the heuristics in the module docstring."""
    if is_abstention(answer):
        return []
    if is_short(answer):
        return [short_claim(question, answer)]
    claims: list[Claim] = []
    for a, b in sentence_spans(answer):
        claims.extend(_split_sentence(answer[a:b], a))
    return claims


def locate(answer: str, claim: str) -> tuple[int, int]:
    """Span of ``claim`` in ``answer`` when it is a (case-insensitive) substring; else (-1, -1).
    LLM-split claims are often rephrased, so a missing span is normal, not an error."""
    text = claim.strip().rstrip(".")
    i = answer.lower().find(text.lower()) if text else -1
    return (i, i + len(text)) if i >= 0 else (-1, -1)
