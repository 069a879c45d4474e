"""The offline claim split (task split_claims without an LLM): rules in ``kgviz.claims``'
module docstring (abstention, short answer, sentence and clause split). Ours."""
from __future__ import annotations

import re

from kgviz.claims import Claim, is_abstention, is_short, short_claim
from kgviz.text import sentence_spans

_VERBS = (r"is|are|was|were|be|been|has|have|had|did|does|do|can|could|will|would|lies|lie|rises|rise|"
          r"flows|holds|hosts|wrote|built|won|became|becomes|led|made|began|runs|ran|stands|sits|"
          r"[a-z]{3,}ed")
# lowercase on purpose: a capitalised "Agnes" or "Wed" is a name, not a verb
_VERB_RE = re.compile(rf"\b(?:{_VERBS})\b")
_LEADING_VERB_RE = re.compile(rf"^(?:{_VERBS})\b")
_SPLIT_RE = re.compile(r";\s+|,?\s+(?:and|but|while|whereas)\s+")


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
