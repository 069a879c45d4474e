"""The offline claim check (no LLM): weaker than an LLM judge, and labelled so in the UI.

For one claim and one method's retrieved context:

0. A short answer must be of the type the question asks for (``kgviz.offline.qtype.answer_type``:
   "which town" -> a place, "who" -> a person, "when" -> a date, "how many" -> a number, "..., A or
   B?" -> one of the options). When the context's cues type the answer as something else
   ("Kellhaven" after "in" for a "who" question), the claim is *not_found* and the reason opens
   with "wrong answer type" and names both types. An answer no cue types passes on to the checks
   below.
1. The claim's *checkables* (capitalised names, numbers, years and dates in its focus) must each
   occur in the context (SQuAD-normalised, whole tokens). A missing number or year whose best
   matching context passage states a different number of the same kind is *contradicted*; any
   other missing checkable makes the claim *not_found*.
2. Otherwise some passage unit (one or two consecutive sentences of one context item) must hold
   every checkable and share enough of the claim's content words (lexical support), or be close
   in embedding space.
3. The unit must also state the *relation* being asserted, not just sit near the right words. A
   short answer ("The answer to Q is A", focus A) is judged against the question's relation
   words: the content words of the question outside the focus, outside the names the question
   already mentions, and outside its wh-phrase ("In what year"). The unit must contain the
   question's head predicate (the first verb of its main clause: "designed" in "Who designed the
   bridge that Mira Tesk said was unsafe?"; lacking a verb, a main-clause word such as "tall") and
   enough of the main-clause words. Restating the question is therefore not support: "Mira Tesk"
   sits next to "bridge", "said" and "unsafe", but no unit links it to "designed". A full claim
   needs its own first verb in the unit ("The bridge was designed by X" is not supported by "X
   said the bridge was unsafe"). Evidence triples ("Edda Lunn designed Orrin Bridge") are units
   like any sentence, so a triple whose relation matches supports its subject or object.

It cannot see paraphrase ("built" for "designed"), comparisons or reasoning across items; an
LLM judge can.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from kgviz.answer_norm import contains, normalize_answer
from kgviz.embedding import Embedder
from kgviz.offline.answer_types import type_mismatch
from kgviz.offline.qtype import answer_type
from kgviz.offline.stem import IRREGULAR_STEMS, stem
from kgviz.offline.stopwords import CLAIM_STOPWORDS as _STOP
from kgviz.text import split_sentences

OFFLINE_JUDGE_LABEL = "offline check (weaker)"
WRONG_TYPE_REASON = "wrong answer type"  # how a type-mismatch reason opens (shown on the Compare page)


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
    require_relation: bool = field(default=True, metadata={"doc": "ours: a supporting unit must contain the "
                                                                   "head predicate of the question (short answer) "
                                                                   "or of the claim (see module docstring)"})
    check_type: bool = field(default=True, metadata={"doc": "ours: a short answer of the wrong type for the "
                                                             "question (kgviz.offline.qtype.answer_type, typed "
                                                             "by kgviz.offline.answer_types) is not supported"})


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


# --- relation words (ours) -----------------------------------------------------------------------
_AUX = frozenset("is are was were be been being am has have had do does did can could will would shall "
                 "should may might must".split())
_WH = frozenset("who whom whose what which when where why how".split())
_LEAD_PREP = frozenset("in on at for by from to during of since until".split())
# relative markers that end the question's main clause ("the bridge that ...", "the engineer who ...")
_RELATIVE = frozenset("that which who whom whose where when".split())
_NOT_VERBS_ED = frozenset("hundred indeed speed breed seed need bed red shed".split())
_TOKEN_RE = re.compile(r"[A-Za-z0-9][\w'\u2019\-]*")


def _stems(text: str) -> set[str]:
    return {stem(w) for w in _words(text)}


def _is_verb(word: str) -> bool:
    w = word.lower()
    if w in _AUX or w in _STOP:
        return False
    return w in IRREGULAR_STEMS or (w.endswith("ed") and len(w) >= 5 and w not in _NOT_VERBS_ED)


@dataclass(frozen=True)
class Relation:
    """What a supporting unit must state besides the focus (see the module docstring)."""

    head: tuple[str, ...]  # alternatives: the unit must contain one of them (as a stem)
    words: frozenset[str]  # words whose share in the unit is scored (normalised content words)

    @property
    def label(self) -> str:
        return " / ".join(self.head)


def question_relation(question: str, focus: str) -> Relation:
    """The head predicate and relation words of ``question`` for the short answer ``focus``."""
    tokens = _TOKEN_RE.findall(question)
    excluded = _words(focus)
    for c in checkables(question):
        if c.kind == "name":
            excluded |= _words(c.text)
    i = 0
    how = ""  # "how tall": the adjective is what the answer must be stated as
    while i < len(tokens) and tokens[i].lower() in _LEAD_PREP:
        i += 1
    if i < len(tokens) and tokens[i].lower() in _WH:
        wh = tokens[i].lower()
        i += 1
        if wh == "how" and i < len(tokens) and tokens[i].lower() not in _AUX | {"many", "much"}:
            how = normalize_answer(tokens[i])
        # "what year", "which town": the answer's type, not a relation the context must state;
        # "how tall": the adjective is the relation, so it stays
        if (wh in ("what", "which", "whose") and i < len(tokens) and tokens[i].lower() not in _AUX | _STOP
                and not _is_verb(tokens[i])):
            i += 1
    main: list[str] = []
    for t in tokens[i:]:
        if t.lower() in _RELATIVE:
            break
        main.append(t)
    all_words = _words(" ".join(tokens[i:])) - excluded
    main_words = [w for w in (normalize_answer(t) for t in main) if w and w not in _STOP and w not in excluded]
    to_verbs = [main[k + 1] for k in range(len(main) - 1) if main[k].lower() == "to" and not main[k + 1][0].isupper()]
    verbs = [w for w in main_words if _is_verb(w)] or [normalize_answer(v) for v in to_verbs]
    head = (verbs[0],) if verbs else (how,) if how and how not in excluded else tuple(dict.fromkeys(main_words))
    return Relation(head, frozenset(main_words) or all_words)


def claim_relation(claim: str, checks: Sequence[Checkable]) -> Relation:
    """The head predicate of a full claim: its first verb outside the names it asserts."""
    names: set[str] = set()
    for c in checks:
        names |= _words(c.text)
    verbs = [w for w in (normalize_answer(t) for t in _TOKEN_RE.findall(claim)) if w and w not in names and _is_verb(w)]
    return Relation(tuple(verbs[:1]), frozenset(_words(claim)))


def _states(text: str, relation: Relation) -> bool:
    if not relation.head:
        return True
    stems = _stems(text)
    return any(stem(h) in stems for h in relation.head)


def check_claim(claim: str, items: Sequence[tuple[str, str]], embedder: Embedder | None = None, *,
                focus: str = "", question: str = "",
                params: OfflineCheckParams = OfflineCheckParams()) -> CheckResult:
    """Judge ``claim`` against context ``items`` ((id, text) pairs). ``focus`` (a short answer)
    is what must be grounded; ``question`` then supplies the words it must sit next to."""
    target = focus or claim
    checks = checkables(target)
    if not items:
        return CheckResult("not_found", (), "the method retrieved no context")
    if focus and question and params.check_type:
        # a span that sits next to the right words but names the wrong kind of thing ("Kellhaven"
        # for "Who designed ...?") is not an answer, however well the passage matches
        mismatch = type_mismatch(answer_type(question), focus, [t for _, t in items])
        if mismatch:
            return CheckResult("not_found", (), f"{WRONG_TYPE_REASON}: {mismatch}")
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
    relation = question_relation(question, focus) if focus else claim_relation(claim, checks)
    what = focus or "the claim"
    if params.require_relation:
        linked = [u for u in holding if _states(u[1], relation)]
        if not linked:
            return CheckResult("not_found", (), f"no passage links {what} to '{relation.label}': the context "
                                                f"mentions {what}, but not in the relation asked about")
        holding = linked
    # a short answer is scored on the question's relation words only: the question's own names
    # and the answer would otherwise let any passage that restates the question pass
    words = set(relation.words) if focus else basis
    needed = params.min_question_overlap if focus else params.min_overlap

    def share(text: str) -> float:
        stems = _stems(text)
        return len({stem(w) for w in words} & stems) / len({stem(w) for w in words}) if words else 0.0

    scored = sorted(((share(t), i, uid, t) for i, (uid, t) in enumerate(holding)), key=lambda x: (-x[0], x[1]))
    lex, _, uid, text = scored[0]
    if not words or lex >= needed:
        return CheckResult("supported", (uid,), f"lexical support {lex:.2f} in {uid}"
                           + (f" (states '{relation.label}')" if relation.head and params.require_relation else ""))
    if embedder is not None:
        top = scored[:20]
        vecs = np.asarray(embedder.embed([claim] + [t for _, _, _, t in top]), dtype=np.float32)
        cos = vecs[1:] @ vecs[0]
        j = int(np.argmax(cos))
        if float(cos[j]) >= params.min_cosine:
            return CheckResult("supported", (top[j][2],), f"embedding support: cosine {float(cos[j]):.2f} in {top[j][2]}")
    return CheckResult("not_found", (), f"no passage states it (best lexical support {lex:.2f} < {needed:.2f} in {uid})")
