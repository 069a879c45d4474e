"""The offline claim check (no LLM): weaker than an LLM judge, and labelled so in the UI.

For one claim and one method's retrieved context:

0. A short answer must be of the type the question asks for (``kgviz.offline.qtype.answer_type``:
   "which town" -> a place, "who" -> a person, "when" -> a date, "how many" -> a number, "..., A or
   B?" -> one of the options). When the context's cues type the answer as something else
   ("Kellhaven" after "in" for a "who" question), the claim is *not_found* and the reason opens
   with "wrong answer type" and names both types. An answer no cue types passes on to the checks
   below.
1. The claim's *checkables* (capitalised names, numbers, years and dates in its focus) must each
   occur in some sentence of the context (SQuAD-normalised, accents folded, whole tokens). A
   missing number or year whose best matching sentence states a different number of the same kind
   is *contradicted*; any other missing checkable makes the claim *not_found*.
2. A short answer ("The answer to Q is A", focus A) is judged sentence by sentence
   (``kgviz.offline.support``): one sentence must tie A to the question's head predicate (the
   first verb of its main clause: "designed" in "Who designed the bridge that Mira Tesk said was
   unsafe?"; lacking a verb, a main-clause word such as "tall"), not negated, and that sentence
   must be about the question's subject: name one of the question's names, or reach one through
   a short chain of sentences that share a name, the chain stating the rest of the question's
   relation words. Restating the question is therefore not support: "Mira Tesk" sits next to
   "bridge", "said" and "unsafe", but no sentence ties it to "designed". A choice question
   ("..., A or B?") is judged by reading both options' values (dates, life spans, counts, also
   through a holder such as "the director of A") and comparing them (``kgviz.offline.compare``);
   a yes/no answer to "Are A and B from the same country?" by reading both countries
   (``kgviz.offline.same``); other yes/no answers are not checked. A missing fact leaves the
   claim not_found.
3. A full claim needs one sentence (with the sentence before it when it refers back with a
   pronoun) holding its names and numbers, its own first verb ("The bridge was designed by X" is
   not supported by "X said the bridge was unsafe") and ``min_overlap`` of its content words.
   Evidence triples ("Edda Lunn designed Orrin Bridge") are sentences like any other, so a
   triple whose relation matches supports its subject or object.

Every verdict that rests on a sentence quotes it verbatim (``CheckResult.quote``) with the words of
it that matched, as written there (``CheckResult.matched``); the reason says the same.

It cannot see paraphrase ("built" for "designed"), comparisons other than the ones above, or
reasoning across items; an LLM judge can.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from kgviz.answer_norm import normalize_answer
from kgviz.embedding import Embedder
from kgviz.offline.answer_types import type_mismatch
from kgviz.offline.qtype import answer_type
from kgviz.offline.stem import IRREGULAR_STEMS, stem
from kgviz.offline.stopwords import CLAIM_STOPWORDS as _STOP
from kgviz.offline.compare import compare_options
from kgviz.offline.same import compare_same
from kgviz.offline.support import Sentence, Support, SupportParams, anchors_of, sentences, support_short

OFFLINE_JUDGE_LABEL = "offline check (weaker)"
WRONG_TYPE_REASON = "wrong answer type"  # how a type-mismatch reason opens (shown on the Compare page)


@dataclass(frozen=True)
class OfflineCheckParams:
    """Thresholds of the offline check (all ours: no paper defines an offline judge)."""

    min_overlap: float = field(default=0.5, metadata={"doc": "ours: share of the claim's content words a "
                                                             "supporting passage unit must contain"})
    min_question_overlap: float = field(default=0.3, metadata={"doc": "ours: for a short answer, share of the "
                                                                      "question's content words next to the answer"})
    require_relation: bool = field(default=True, metadata={"doc": "ours: a supporting unit must contain the "
                                                                   "head predicate of the question (short answer) "
                                                                   "or of the claim (see module docstring)"})
    check_type: bool = field(default=True, metadata={"doc": "ours: a short answer of the wrong type for the "
                                                             "question (kgviz.offline.qtype.answer_type, typed "
                                                             "by kgviz.offline.answer_types) is not supported"})
    support: SupportParams = field(default_factory=SupportParams, metadata={
        "doc": "ours: the sentence-level rules for a short answer (kgviz.offline.support)"})


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
    quote: str = ""  # the deciding sentence, verbatim from the evidence item
    matched: tuple[str, ...] = ()  # the words of ``quote`` (as written there) that decided


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
    return list(dict.fromkeys(out))  # each (text, kind) once, first place kept


def _words(text: str) -> set[str]:
    return {w for w in normalize_answer(text).split() if w not in _STOP}


def _numbers_of_kind(text: str, kind: str) -> list[str]:
    vals = [m.group().rstrip(",") for m in _NUMBER_RE.finditer(text)]
    return [v for v in vals if (_YEAR_RE.fullmatch(v) is not None) == (kind == "year")]


# --- relation words (ours) -----------------------------------------------------------------------
_AUX = frozenset("is are was were be been being am has have had do does did can could will would shall "
                 "should may might must".split())
_WH = frozenset("who whom whose what which when where why how".split())
_LEAD_PREP = frozenset("in on at for by from to during of since until".split())
# relative markers that end the question's main clause ("the bridge that ...", "the engineer who ...")
_TYPE_NOUNS = frozenset("place date year time day name location".split())
_RELATIVE = frozenset("that which who whom whose where when".split())
_NOT_VERBS_ED = frozenset("hundred indeed speed breed seed need bed red shed".split())
_TOKEN_RE = re.compile(r"[A-Za-z0-9][\w'\u2019\-]*")
_CLAUSE_TOKEN_RE = re.compile(r"[A-Za-z0-9][\w'\u2019\-]*|,")


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
    # a possessive "'s" goes ("Big Eye's director": "Eye", a name's word); a comma ends the main clause
    tokens = [re.sub(r"['\u2019]s$", "", t) for t in _CLAUSE_TOKEN_RE.findall(question)]
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
    while i < len(tokens) and tokens[i] == ",":
        i += 1
    main: list[str] = []
    for t in tokens[i:]:
        if t.lower() in _RELATIVE or t == ",":
            break
        main.append(t)
    all_words = _words(" ".join(t for t in tokens[i:] if t != ",")) - excluded
    main_words = [w for w in (normalize_answer(t) for t in main) if w and w not in _STOP and w not in excluded]
    to_verbs = [main[k + 1] for k in range(len(main) - 1) if main[k].lower() == "to" and not main[k + 1][0].isupper()]
    verbs = [w for w in main_words if _is_verb(w)] or [normalize_answer(v) for v in to_verbs]
    # lacking a verb, the first main-clause noun is the relation ("the spouse of X's director": spouse);
    # a type noun before "of" names the answer's kind, the noun after it the relation ("the place of
    # birth": birth, as kgviz.offline.qtype reads "place of birth" as a place)
    nouns = main_words[1:] if main_words[:1] and main_words[0] in _TYPE_NOUNS and len(main_words) > 1 else main_words
    head = (verbs[0],) if verbs else (how,) if how and how not in excluded else tuple(nouns[:1])
    return Relation(head, frozenset(nouns if not verbs else main_words) or frozenset(all_words))


def claim_relation(claim: str, checks: Sequence[Checkable]) -> Relation:
    """The head predicate of a full claim: its first verb outside the names it asserts."""
    names: set[str] = set()
    for c in checks:
        names |= _words(c.text)
    verbs = [w for w in (normalize_answer(t) for t in _TOKEN_RE.findall(claim)) if w and w not in names and _is_verb(w)]
    return Relation(tuple(verbs[:1]), frozenset(_words(claim)))


def check_claim(claim: str, items: Sequence[tuple[str, str]], embedder: Embedder | None = None, *,
                focus: str = "", question: str = "",
                params: OfflineCheckParams = OfflineCheckParams()) -> CheckResult:
    """Judge ``claim`` against context ``items`` ((id, text) pairs). ``focus`` (a short answer)
    is what must be grounded; ``question`` then supplies the relation and names it must be tied to.
    ``embedder`` is accepted for the task interface and not used: the check decides from words
    it can quote."""
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
    sents = sentences(items)
    missing = [c for c in checks if not any(s.has(c.text) for s in sents)]
    if missing:
        return _missing(missing, claim, focus, question, sents, params)
    if focus and question:
        return _short(focus, question, sents, params)
    return _long(claim, checks, sents, params)


def _result(sup: Support) -> CheckResult:
    return CheckResult(sup.label, (sup.item,) if sup.item and sup.label != "not_found" else (), sup.reason,
                       sup.quote, sup.matched)


def _short(focus: str, question: str, sents: Sequence[Sentence], params: OfflineCheckParams) -> CheckResult:
    if normalize_answer(focus) in ("yes", "no"):
        return _result(compare_same(focus, question, sents))
    asked = answer_type(question)
    if asked.options:
        return _result(compare_options(focus, asked.options, question, sents))
    relation = question_relation(question, focus)
    anchors = anchors_of(question)
    head = relation.head if params.require_relation else ()
    return _result(support_short(focus, anchors, head, sorted(relation.words), sents, params.support, question))


def _long(claim: str, checks: Sequence[Checkable], sents: Sequence[Sentence],
          params: OfflineCheckParams) -> CheckResult:
    """A full claim: one sentence (with the one before it, when it refers back) holds every name and
    number of the claim, its first verb, and ``min_overlap`` of its content words."""
    relation = claim_relation(claim, checks)
    words = [w for w in _words(claim)]
    stems_ = list(dict.fromkeys(stem(w) for w in words))
    best: tuple[float, Sentence, list[str]] | None = None
    for s in sents:
        if not all(s.has(c.text) or (s.refers_back and s.prev is not None and s.prev.has(c.text)) for c in checks):
            continue
        if params.require_relation and relation.head and not any(s.word_for(stem(h)) for h in relation.head):
            continue
        got = [w for w in (s.word_for(st) for st in stems_) if w]
        share = sum(s.states(st) for st in stems_) / len(stems_) if stems_ else 1.0
        if best is None or share > best[0]:
            best = (share, s, got)
    if best is None:
        verb = f" and states '{relation.label}'" if relation.head and params.require_relation else ""
        return CheckResult("not_found", (), f"no sentence of the evidence holds the claim's names and numbers{verb}")
    share, s, got = best
    if share < params.min_overlap:
        return CheckResult("not_found", (), f"the closest sentence, \"{s.text}\" ({s.item}), states only "
                                            f"{len(got)} of the claim's {len(stems_)} content words")
    matched = tuple(dict.fromkeys(got))
    return CheckResult("supported", (s.item,), f"\"{s.text}\" ({s.item}) states "
                       + ", ".join(f"'{w}'" for w in matched), s.text, matched)


def _missing(missing: Sequence[Checkable], claim: str, focus: str, question: str, sents: Sequence[Sentence],
             params: OfflineCheckParams) -> CheckResult:
    """A name or number of the claim that no sentence holds: contradicted when the sentence that best
    states the rest gives another number of the same kind, else not_found."""
    basis = _words(f"{question} {focus}") if focus else _words(claim)
    for c in missing:
        if c.kind not in ("year", "number"):
            continue
        rest = list(dict.fromkeys(stem(w) for w in basis - _words(c.text)))
        if not rest:
            continue
        scored = sorted(((sum(s.states(st) for st in rest) / len(rest), n, s) for n, s in enumerate(sents)),
                        key=lambda x: (-x[0], x[1]))
        share, _, best = scored[0]
        others = [v for v in _numbers_of_kind(best.text, c.kind) if normalize_answer(v) != normalize_answer(c.text)]
        if others and share >= max(params.min_question_overlap if focus else params.min_overlap, 0.5):
            matched = tuple(dict.fromkeys([others[0]] + [w for w in (best.word_for(st) for st in rest) if w]))
            return CheckResult("contradicted", (best.item,),
                               f"\"{best.text}\" ({best.item}) states {others[0]} where the claim says {c.text}",
                               best.text, matched)
    return CheckResult("not_found", (), "not in the retrieved context: " + ", ".join(c.text for c in missing))
