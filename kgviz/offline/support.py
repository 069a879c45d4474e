"""Sentence-level support for a short answer (the offline judge's core, issue 22.3; all rules ours).

A short answer A to a question Q is *supported* by the evidence when

1. one sentence of the evidence holds A together with the relation Q asks about (the question's
   head predicate, ``kgviz.offline.judge.question_relation``: "born" in "In which town was the
   founder of X born?"), not negated ("was not born in", "never designed");
2. that sentence is about Q's subject: it names one of the names Q mentions (its *anchors*), or
   it reaches one through a chain of at most ``max_hops`` sentences, each sharing a name (a
   *bridge*) with the next: "Agnes Vohl was born in Tarrow." <- "Agnes Vohl" -> "Agnes Vohl founded
   the Ossel Marine Institute." A sentence with a pronoun (he, she, it ...) before any name also
   counts the names of the sentence before it in the same passage, where the pronoun's antecedent
   usually is (after a name the pronoun is usually that name's: "The Tidewell Line ... its");
3. the chain states the rest of Q's relation too: at least ``min_relation_share`` of Q's relation
   words occur in the chain's sentences ("founder" above), and its bridge sentences state a word of
   Q, beyond its names, that the answer's sentence does not. A chain that adds nothing Q asks about
   only moves to another subject:
   "Kellhaven University was founded in 1874." <- "Kellhaven" -> "The Tidewell Line ... has its
   headquarters on Quay Street." says nothing of when the Tidewell Line was founded.

A wrong extractive answer usually fails 2 or 3: its sentence states the asked relation about
someone else ("Ventholm" where a different person was born), so it is not tied to Q's names.

Questions with two named options and yes/no questions comparing two entities are judged by the
readers in ``kgviz.offline.compare`` and ``kgviz.offline.same`` instead.

Every decision keeps the sentence it rests on verbatim (``quote``) and the words of it that matched
(``matched``), as they are written in that sentence.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

from kgviz.answer_norm import normalize_answer
from kgviz.offline.stem import stem
from kgviz.offline.stopwords import CLAIM_STOPWORDS as _STOP
from kgviz.text import sentence_spans

_POSSESSIVE_RE = re.compile(r"['\u2019]s$")
_TOKEN_RE = re.compile(r"[^\W_][\w'\u2019\-\.]*[^\W_]|[^\W_]")
# a name may join its capitalised words with up to two small words: "The Jewel of the Nile"
_NAME_RE = re.compile(r"[A-Z][\w'\u2019\-\.]*(?:\s+(?:(?:of|the|de|von|van|la|le|du|del|der)\s+){0,2}[A-Z][\w'\u2019\-\.]*)*")
_START_STOP = frozenset("The A An It He She They This That These Those His Her Its Their In On At By For From "
                        "After Before During Yes No As When While Although However Since Following What Which "
                        "Who Whom Whose Where Why How Is Are Was Were Did Do Does".split())
_PRONOUNS = frozenset("he she it they his her its their him them".split())
_REFERRING_OPENERS = frozenset("The This These Its His Her Their".split())
_NEGATION = frozenset("not never no nor neither nt cannot".split())
_YEAR_RE = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_NUM_RE = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")


@dataclass(frozen=True)
class SupportParams:
    """Thresholds of the sentence-level check (ours)."""

    max_hops: int = field(default=3, metadata={"doc": "ours: most sentences in a chain from the answer's "
                                                      "sentence to one naming the question's subject"})
    min_relation_share: float = field(default=1.0, metadata={"doc": "ours: share of the question's relation "
                                                                    "words the chain's sentences must state"})
    negation_window: int = field(default=3, metadata={"doc": "ours: a negation at most this many words before "
                                                             "the relation word negates it"})
    common_share: float = field(default=0.1, metadata={"doc": "ours: a name in more than this share of the "
                                                              "evidence's sentences is no bridge (it links "
                                                              "everything)"})
    min_common: int = field(default=3, metadata={"doc": "ours: ... and in more than this many sentences"})


def _fold(text: str) -> str:
    plain = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return normalize_answer(plain.replace("-", " ").replace("\u2013", " "))


# Folding is most of the offline judge's time, and the same words, names and sentences come back for
# every claim, method and question (a comparison judges ~10 answers against overlapping passages),
# so folded words and parsed sentences are kept process-wide (pure functions of their text).
_WORD_CACHE = 1 << 16  # folded words and names (short strings)
_SENTENCE_CACHE = 1 << 14  # parsed sentences, ~2 kB each
_ITEM_CACHE = 1 << 12  # sentence spans of an item's text


@lru_cache(maxsize=_WORD_CACHE)
def fold(text: str) -> str:
    """Accents dropped ("Aschenbrödel" meets "Aschenbrodel"), hyphens read as spaces ("Fix-It" meets
    "Fix- It"), then SQuAD-normalised."""
    return _fold(text)


@dataclass(frozen=True)
class _Parsed:
    """What a Sentence reads off its text (see Sentence); shared read-only by equal texts."""

    words: tuple[str, ...]
    folded: tuple[str, ...]
    padded: str
    owners: str
    stems: tuple[tuple[str, str], ...]


@lru_cache(maxsize=_SENTENCE_CACHE)
def _parse(text: str) -> _Parsed:
    words = tuple(_TOKEN_RE.findall(text))
    folded = tuple(fold(w) for w in words)
    stems: dict[str, str] = {}  # a stem -> the first word written with it
    for w, f in zip(words, folded):
        for part in f.split():
            stems.setdefault(stem(part), w)
    return _Parsed(words, folded, " " + " ".join(f for f in folded if f) + " ",
                   # a possessive also names its owner: "Kellhaven's population" holds "Kellhaven"
                   " " + " ".join(f for f in (fold(_POSSESSIVE_RE.sub("", w)) for w in words) if f) + " ",
                   tuple(stems.items()))


@dataclass
class Sentence:
    item: str  # the context item it is in
    text: str  # verbatim, as it stands in the item
    pos: int  # its index among the item's sentences
    prev: "Sentence | None" = None  # the sentence before it in the same item
    first: "Sentence | None" = None  # the item's first sentence (None for the first itself)
    before: str = ""  # the item's text before this sentence (folded), for short forms of names
    words: list[str] = field(default_factory=list)  # its tokens as written
    folded: list[str] = field(default_factory=list)  # the same tokens folded (fold), one per word

    def __post_init__(self) -> None:
        p = _parse(self.text)
        self.words = list(p.words)
        self.folded = list(p.folded)
        self.padded = p.padded
        self.owners = p.owners
        self.stems: dict[str, str] = dict(p.stems)  # a stem -> the first word written with it

    def has(self, phrase: str) -> bool:
        p = fold(phrase)
        return bool(p) and (f" {p} " in self.padded or f" {p} " in self.owners)

    def word_for(self, stem_: str) -> str:
        """The word of this sentence, as written, whose stem is ``stem_`` ("" when none)."""
        return self.stems.get(stem_, "")

    def states(self, stem_: str) -> bool:
        """This sentence, or one it refers back to, has a word of stem ``stem_``."""
        return bool(self.word_for(stem_)) or any(r.word_for(stem_) for r in self.referents)

    @property
    def refers_back(self) -> bool:
        """A pronoun ("he", "its"), or an opening "The ..."/"This ...": the sentence speaks of what the
        sentence before it, or its passage's first sentence, named (a passage is about the entity
        it opens with)."""
        if self.prev is None:
            return False
        opening = self.words[0] if self.words else ""
        return opening in _REFERRING_OPENERS or _pronoun_before_names(self.text)

    @property
    def pronoun(self) -> bool:
        """A pronoun before the sentence names anyone: "She was born in Tarrow." speaks of what the
        sentence before named; in "The Tidewell Line ... has its headquarters ..." "its" is the
        Tidewell Line's own and reaches no further back."""
        return self.prev is not None and _pronoun_before_names(self.text)

    @property
    def referents(self) -> list["Sentence"]:
        """What the sentence may speak of besides its own words: after a pronoun the sentence before
        it and the passage's first; after an opening "The ..." only the passage's first."""
        if not self.refers_back:
            return []
        cands = (self.prev, self.first) if self.pronoun else (self.first,)
        out: list[Sentence] = []
        for x in cands:
            if x is not None and x is not self and all(x is not y for y in out):
                out.append(x)
        return out

    @property
    def negates(self) -> bool:
        return any(f in _NEGATION for f in self.folded)


@lru_cache(maxsize=_SENTENCE_CACHE)
def _pronoun_before_names(text: str) -> bool:
    """``text`` has a pronoun (he, she, its ...) before its first name (``names``)."""
    at = _names_at(text)
    first_name = at[0][0] if at else None
    for m in _TOKEN_RE.finditer(text):
        if first_name is not None and m.start() >= first_name:
            return False
        if fold(m.group()) in _PRONOUNS:
            return True
    return False


@lru_cache(maxsize=_ITEM_CACHE)
def _spans(text: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, the text before it folded and padded) of each sentence of ``text``."""
    return tuple((a, b, " " + _fold(text[:a]) + " ") for a, b in sentence_spans(text))


def sentences(items: Sequence[tuple[str, str]]) -> list[Sentence]:
    out: list[Sentence] = []
    for item_id, text in items:
        prev = first = None
        for n, (a, b, before) in enumerate(_spans(text)):
            s = Sentence(item_id, text[a:b], n, prev, first, before)
            out.append(s)
            prev, first = s, first or s
    return out


def names(text: str) -> list[str]:
    """Capitalised spans of ``text`` (a leading sentence word such as "The" dropped)."""
    return list(_names(text))


@lru_cache(maxsize=_SENTENCE_CACHE)
def _names(text: str) -> tuple[str, ...]:
    return tuple(name for _, name in _names_at(text))


@lru_cache(maxsize=_SENTENCE_CACHE)
def _names_at(text: str) -> tuple[tuple[int, str], ...]:
    """(offset in ``text``, name) of each capitalised span kept by ``names``."""
    out: list[tuple[int, str]] = []
    for m in _NAME_RE.finditer(text):
        parts = list(re.finditer(r"\S+", m.group()))
        while parts and parts[0].group() in _START_STOP:
            parts = parts[1:]
        name = re.sub(r"['\u2019]s$", "", " ".join(p.group() for p in parts)).strip(" .")
        if name and fold(name) and fold(name) not in _STOP:
            out.append((m.start() + parts[0].start(), name))
    return tuple(out)


def anchors_of(question: str) -> list[str]:
    """What the question names: its capitalised spans, years and numbers."""
    return list(dict.fromkeys(names(question) + _YEAR_RE.findall(question)
                              + [m.group() for m in _NUM_RE.finditer(question)]))


def _content(phrase: str) -> list[str]:
    return [w for w in fold(phrase).split() if w not in _STOP]


def mentions(s: Sentence, name: str, *, back: bool = True) -> str:
    """The words of ``s`` (as written) that name ``name``: the whole name, or all its content words;
    with ``back`` a sentence that refers back also answers for the sentence before it."""
    words = _content(name)
    if not words:
        return ""
    if s.has(name) or all(f" {w} " in s.padded for w in words):
        return _first_mention(s, name, words)
    # a short form after the full name in the same passage: "Vohl" after "Agnes Vohl"
    last = words[-1]
    if len(words) > 1 and f" {fold(name)} " in s.before and f" {last} " in s.padded:
        return next(s.words[i] for i, f in enumerate(s.folded) if last in f.split())
    if back:
        for r in s.referents:
            got = mentions(r, name, back=False)
            if got:
                return got
    return ""


def _first_mention(s: Sentence, name: str, words: Sequence[str]) -> str:
    """The name as ``s`` first writes it: its first whole occurrence, else the first word of ``s``
    for each of its content words, in the sentence's order (a name written twice is quoted once)."""
    whole = _span_as_written(s, name)
    if whole:
        return whole
    wanted = set(words)
    picked: list[str] = []
    for w, f in zip(s.words, s.folded):
        got = set(f.split()) & wanted
        if f and got:
            picked.append(w)
            wanted -= got
    return " ".join(picked)


def negated(s: Sentence, word: str, window: int) -> bool:
    """A negation ("not", "never", "n't" ...) at most ``window`` words before ``word`` in ``s``."""
    for i, w in enumerate(s.words):
        if w == word:
            before = s.folded[max(0, i - window): i]
            if any(b in _NEGATION or b.endswith("nt") and b[:-2] in ("was", "is", "did", "does", "were", "has", "had")
                   for b in before):
                return True
    return False


@dataclass(frozen=True)
class Support:
    label: str  # supported | contradicted | not_found
    reason: str
    quote: str = ""  # the deciding sentence, verbatim
    matched: tuple[str, ...] = ()  # words of ``quote`` (as written) that decided
    item: str = ""  # the context item the quote is in
    chain: tuple[tuple[str, str], ...] = ()  # (item, sentence) of the bridge sentences, answer side first


def _relation_words(sent: Sentence, stems: Sequence[str]) -> list[str]:
    return [w for w in (sent.word_for(s) for s in stems) if w]


def support_short(answer: str, anchors: Sequence[str], head: Sequence[str], relation: Sequence[str],
                  sents: Sequence[Sentence], params: SupportParams = SupportParams(), question: str = "") -> Support:
    """Rules 1-3 of the module docstring for the short answer ``answer``. ``anchors`` are the
    question's names, ``head`` its head predicate (alternatives), ``relation`` its relation words,
    ``question`` its text (what a bridge sentence may add; the relation words when empty)."""
    head_stems = [stem(h) for h in head if h]
    rel_stems = list(dict.fromkeys(stem(w) for w in relation if w))
    name_words = {w for a in anchors for w in _content(a)} | set(_content(answer))
    asked_stems = (list(dict.fromkeys(stem(w) for w in _content(question) if w not in name_words)) if question
                   else rel_stems)
    holding = [s for s in sents if s.has(answer)]
    if not holding:
        return Support("not_found", f"no sentence of the evidence contains '{answer}'")
    tying: list[tuple[Sentence, list[str]]] = []
    negations: list[tuple[Sentence, str]] = []
    for s in holding:
        words = _relation_words(s, head_stems) if head_stems else _relation_words(s, rel_stems)
        if not words and (head_stems or rel_stems):
            continue
        neg = [w for w in words if negated(s, w, params.negation_window)]
        if neg and len(neg) == len(words):
            negations.append((s, neg[0]))
            continue
        tying.append((s, words))
    asked = " / ".join(head) if head else " / ".join(relation)
    if not tying:
        if negations:
            s, w = negations[0]
            return Support("contradicted", f"the evidence negates it: \"{s.text}\" ({s.item}) says '{w}' with a "
                           f"negation", s.text, (answer, w), s.item)
        return Support("not_found", f"no sentence ties '{answer}' to '{asked}': the sentences that contain it "
                                    f"never state the relation asked about")
    others = [a for a in dict.fromkeys(anchors) if fold(a) and fold(a) != fold(answer)]
    common = _common_names(sents, params)
    best: Support | None = None
    why = ""
    for s, words in tying:
        share, path, anchor_words, unreached = _chain(s, others, rel_stems, answer, sents, params, common)
        if unreached:
            why = why or (f"\"{s.text}\" ({s.item}) ties '{answer}' to '{asked}', but no chain of at most "
                          f"{params.max_hops} sentences links it to " + ", ".join(f"'{a}'" for a in unreached))
            continue
        if path and not _adds_asked(s, path, asked_stems):
            why = why or (f"\"{s.text}\" ({s.item}) ties '{answer}' to '{asked}', but it does not name "
                          + ", ".join(f"'{a}'" for a in others) + ", and the sentences linking it to the "
                          "question's names state nothing more of what the question asks: they reach "
                          "another subject, not a bridge")
            continue
        if rel_stems and share < params.min_relation_share:
            lacking = [w for w in relation if not any(p.word_for(stem(w)) for p in [s] + path)]
            why = why or (f"\"{s.text}\" ({s.item}) ties '{answer}' to '{asked}', but neither it nor the sentences "
                          f"linking it to the question's names state " + ", ".join(f"'{w}'" for w in lacking))
            continue
        stated = [w for w in dict.fromkeys(_relation_words(s, rel_stems) + words)]
        named = [anchor_words] if anchor_words and all(w in s.words for w in anchor_words.split()) else []
        matched = tuple(dict.fromkeys([_as_written(s, answer)] + stated + named))
        chain = tuple((p.item, p.text) for p in path)
        via = (" through " + " -> ".join(f"\"{t}\" ({i})" for i, t in chain)) if chain else ""
        reason = (f"\"{s.text}\" ({s.item}) ties '{answer}' to " + ", ".join(f"'{w}'" for w in matched[1:])
                  + via)
        cand = Support("supported", reason, s.text, matched, s.item, chain)
        if best is None or len(cand.chain) < len(best.chain):
            best = cand
    return best if best is not None else Support("not_found", why)


def _adds_asked(start: Sentence, path: Sequence[Sentence], asked_stems: Sequence[str]) -> bool:
    """A bridge sentence states a word of the question, beyond its names, that ``start`` does not
    ("founded" in "Agnes Vohl founded the Institute" for "the founder of the Institute born")."""
    return any(not start.word_for(st) and any(p.word_for(st) for p in path) for st in asked_stems)


def _as_written(s: Sentence, phrase: str) -> str:
    """``phrase`` as it is written in ``s`` (the same words, its spelling and case)."""
    return _span_as_written(s, phrase) or phrase


def _span_as_written(s: Sentence, phrase: str) -> str:
    """The first run of words of ``s`` that folds to ``phrase``, as written ("" when none)."""
    target = fold(phrase).split()
    for i in range(len(s.folded)):
        got: list[str] = []
        j = i
        while j < len(s.folded) and len(got) < len(target):
            got += s.folded[j].split()
            j += 1
        if target and got == target:
            return " ".join(s.words[i:j])
    return ""


def _common_names(sents: Sequence[Sentence], params: SupportParams) -> set[str]:
    """Names too common in this evidence to single anything out ("United States" in a third of it)."""
    counts: dict[str, int] = {}
    for s in sents:
        for n in {fold(x) for x in names(s.text)}:
            counts[n] = counts.get(n, 0) + 1
    limit = max(params.min_common, params.common_share * len(sents))
    return {n for n, c in counts.items() if c > limit}


def _chain(start: Sentence, anchors: Sequence[str], rel_stems: Sequence[str], answer: str,
           sents: Sequence[Sentence], params: SupportParams,
           common: set[str]) -> tuple[float, list[Sentence], str, list[str]]:
    """(relation share, bridge sentences, anchor words, anchors out of reach) of the chains from
    ``start`` to every anchor. No anchors: the start sentence stands alone."""
    path: list[Sentence] = []
    words: list[str] = []
    unreached: list[str] = []
    for a in anchors:
        got = _chain_to(start, [a], rel_stems, answer, sents, params, common)
        if got is None:
            unreached.append(a)
            continue
        path += [p for p in got[1] if all(p is not q for q in path)]
        words += [got[2]] if got[2] else []
    stated = {st for st in rel_stems if any(p.word_for(st) for p in [start] + path)}
    share = len(stated) / len(rel_stems) if rel_stems else 1.0
    return share, path, " ".join(words), unreached


def _chain_to(start: Sentence, anchors: Sequence[str], rel_stems: Sequence[str], answer: str,
              sents: Sequence[Sentence], params: SupportParams,
              common: set[str]) -> tuple[float, list[Sentence], str] | None:
    """(relation share, bridge sentences, anchor words) of the best chain from ``start`` to a sentence
    naming an anchor; None when there is none. No anchors: the start sentence stands alone."""
    def share(path: Sequence[Sentence]) -> float:
        if not rel_stems:
            return 1.0
        stated = {st for st in rel_stems if any(p.word_for(st) for p in path)}
        return len(stated) / len(rel_stems)

    def anchored(s: Sentence) -> str:
        for a in anchors:
            got = mentions(s, a)
            if got:
                return got
        return ""

    if not anchors:
        return share([start]), [], ""
    hit = anchored(start)
    if hit:
        return share([start]), [], hit
    skip = {fold(answer)} | {fold(a) for a in anchors}
    best: tuple[float, list[Sentence], str] | None = None
    frontier: list[list[Sentence]] = [[start]]
    seen = {id(start)}
    for _ in range(max(0, params.max_hops - 1)):
        nxt: list[list[Sentence]] = []
        for path in frontier:
            last = path[-1]
            bridges = [b for b in _bridges(last) if fold(b) not in skip and fold(b) not in common]
            for s in sents:
                if id(s) in seen or s.negates or not any(mentions(s, b) for b in bridges):
                    continue
                seen.add(id(s))
                new = path + [s]
                hit = anchored(s)
                if hit:
                    cand = (share(new), new[1:], hit)
                    if best is None or cand[0] > best[0]:
                        best = cand
                else:
                    nxt.append(new)
        if best is not None:
            return best
        frontier = nxt
    return best


def _bridges(s: Sentence) -> list[str]:
    """The names ``s`` speaks of: its own, and those of the sentences it refers back to. A sentence
    with a negation links nothing ("He should not be confused with X")."""
    if s.negates:
        return []
    out = names(s.text)
    if s.pronoun and s.prev is not None:  # "He ..." continues what the sentence before named
        out += names(s.prev.text)
    return list(dict.fromkeys(out))
