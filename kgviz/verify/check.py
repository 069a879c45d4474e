"""The offline claim check (no LLM): weaker than an LLM judge, and labelled so in the UI.

For one claim and one method's retrieved context:

1. The claim's *checkables* (capitalised names, numbers, years and dates in its focus) must each
   occur in the context (SQuAD-normalised, whole tokens). A missing number or year whose best
   matching context passage states a different number of the same kind is *contradicted*; any
   other missing checkable makes the claim *not_found*.
2. Otherwise some passage unit (one or two consecutive sentences of one context item) must hold
   every checkable and share enough of the claim's content words (lexical support), or be close
   in embedding space. Short answers ("The answer to Q is A") are matched against the question's
   words plus the answer.

It cannot see paraphrase or reasoning across items; an LLM judge can.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from kgviz.providers.base import Embedder
from kgviz.text import split_sentences
from kgviz.verify.metrics import contains, normalize_answer

OFFLINE_JUDGE_LABEL = "offline check (weaker)"


@dataclass(frozen=True)
class OfflineCheckParams:
    """Thresholds of the offline check (all ours: no paper defines an offline judge)."""

    min_overlap: float = field(default=0.5, metadata={"doc": "ours: share of the claim's content words a "
                                                             "supporting passage unit must contain"})
    min_question_overlap: float = field(default=0.3, metadata={"doc": "ours: for a short answer, share of the "
                                                                      "question's content words next to the answer"})
    min_cosine: float = field(default=0.75, metadata={"doc": "ours: embedding cosine that counts as support "
                                                             "on its own (paraphrase)"})
    window: int = field(default=2, metadata={"doc": "ours: consecutive sentences per passage unit, so a "
                                                    "pronoun's antecedent sentence is included"})


_STOP = frozenset(
    """a an the of in on at to for from by with and or but is are was were be been being has have had do
    does did what which who whom whose when where why how that this these those it its as into than then
    there their his her he she they them him i we you our your my me also not no yes if so one answer
    """.split())
_SENTENCE_START_STOP = frozenset("The A An It He She They This That These Those His Her Its Their In On At "
                                 "By For From After Before During Yes No".split())
_NAME_RE = re.compile(r"[A-Z][\w'\u2019\-]*(?:\s+(?:of|the|de|von|van|la|le|du)?\s*[A-Z][\w'\u2019\-]*)*")
_YEAR_RE = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_NUMBER_RE = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")


@dataclass(frozen=True)
class Checkable:
    text: str
    kind: str  # name | year | number


@dataclass(frozen=True)
class CheckResult:
    label: str  # supported | contradicted | not_found
    evidence: tuple[str, ...]
    reason: str


def checkables(text: str) -> list[Checkable]:
    """Names, years and numbers asserted in ``text``."""
    out: list[Checkable] = []
    for m in _NAME_RE.finditer(text):
        words = m.group().split()
        while words and words[0] in _SENTENCE_START_STOP:
            words = words[1:]
        name = re.sub(r"['\u2019]s$", "", " ".join(words)).strip()
        if name and normalize_answer(name):
            out.append(Checkable(name, "name"))
    for m in _NUMBER_RE.finditer(text):
        value = m.group().rstrip(",")
        out.append(Checkable(value, "year" if _YEAR_RE.fullmatch(value) else "number"))
    seen: set[tuple[str, str]] = set()
    return [c for c in out if not ((c.text, c.kind) in seen or seen.add((c.text, c.kind)))]


def _words(text: str) -> set[str]:
    return {w for w in normalize_answer(text).split() if w not in _STOP}


def _units(items: Sequence[tuple[str, str]], window: int) -> list[tuple[str, str]]:
    """(item id, text) passage units: runs of up to ``window`` consecutive sentences."""
    units: list[tuple[str, str]] = []
    for item_id, text in items:
        sents = [s for s in split_sentences(text) if s.strip()] or [text]
        for i in range(len(sents)):
            for w in range(1, max(1, window) + 1):
                if i + w <= len(sents):
                    units.append((item_id, " ".join(sents[i: i + w])))
    return units


def _numbers_of_kind(text: str, kind: str) -> list[str]:
    vals = [m.group().rstrip(",") for m in _NUMBER_RE.finditer(text)]
    return [v for v in vals if (_YEAR_RE.fullmatch(v) is not None) == (kind == "year")]


def check_claim(claim: str, items: Sequence[tuple[str, str]], embedder: Embedder | None = None, *,
                focus: str = "", question: str = "",
                params: OfflineCheckParams = OfflineCheckParams()) -> CheckResult:
    """Judge ``claim`` against context ``items`` ((id, text) pairs). ``focus`` (a short answer)
    is what must be grounded; ``question`` then supplies the words it must sit next to."""
    target = focus or claim
    checks = checkables(target)
    if not items:
        return CheckResult("not_found", (), "the method retrieved no context")
    units = _units(items, params.window)
    basis = _words(f"{question} {focus}") if focus else _words(claim)
    needed = params.min_question_overlap if focus else params.min_overlap

    def overlap(text: str, words: set[str]) -> float:
        return len(words & _words(text)) / len(words) if words else 0.0

    missing = [c for c in checks if not any(contains(t, c.text) for _, t in items)]
    if missing:
        for c in missing:
            if c.kind not in ("year", "number"):
                continue
            rest = basis - _words(c.text)
            best = max(units, key=lambda u: overlap(u[1], rest))
            others = [v for v in _numbers_of_kind(best[1], c.kind) if normalize_answer(v) != normalize_answer(c.text)]
            if others and overlap(best[1], rest) >= max(needed, 0.5):
                return CheckResult("contradicted", (best[0],),
                                   f"the context states {others[0]} where the claim says {c.text}")
        return CheckResult("not_found", (), "not in the retrieved context: " + ", ".join(c.text for c in missing))

    holding = [u for u in units if all(contains(u[1], c.text) for c in checks)]
    if not holding:
        return CheckResult("not_found", (), "the names/numbers occur in the context, but never together "
                                            "in one passage")
    scored = sorted(((overlap(t, basis), i, uid, t) for i, (uid, t) in enumerate(holding)), key=lambda x: (-x[0], x[1]))
    lex, _, uid, text = scored[0]
    if not basis or lex >= needed:
        return CheckResult("supported", (uid,), f"lexical support {lex:.2f} in {uid}")
    if embedder is not None:
        top = scored[:20]
        vecs = np.asarray(embedder.embed([claim] + [t for _, _, _, t in top]), dtype=np.float32)
        cos = vecs[1:] @ vecs[0]
        j = int(np.argmax(cos))
        if float(cos[j]) >= params.min_cosine:
            return CheckResult("supported", (top[j][2],), f"embedding support: cosine {float(cos[j]):.2f} in {top[j][2]}")
    return CheckResult("not_found", (), f"no passage states it (best lexical support {lex:.2f} < {needed:.2f} in {uid})")
