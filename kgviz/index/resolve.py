"""Entity resolution: surface forms -> entity ids, per document and across documents (pure).

Rules (ours; KG-RAG and KG-Retriever leave resolution unspecified):

1. Normalisation (every mention): Unicode NFKC + casefold; curly quotes straightened; a trailing
   possessive ('s) dropped; leading articles (the/a/an) and honorifics (Dr, Mr, Mrs, Ms, Prof,
   Sir, ...) dropped; '.', ',' and apostrophes deleted ("U.S." -> "us", "12,300" -> "12300");
   '&' -> 'and'; other punctuation -> space; whitespace collapsed. Equal keys are one entity,
   in one document and across documents ("The Orrin Bridge" = "orrin bridge" = "Orrin Bridge's").
   The entity id is "ent:<key>".
2. Aliases, decided inside one document only (so adding documents never changes old ids):
   * surname: a one-word mention ("Lunn") joins the one multi-word name of 2–4 words in the same
     document whose *last* word it is and that holds no head noun (University, Bridge, ...). Two
     candidates ("Tobias Marrec", "Selma Marrec") -> no merge. First names are never merged.
   * head noun: "the Institute" / "the university" (a one-word key that is a head noun) joins the
     one multi-word name in the document that contains that word; several candidates -> none.
   * acronym: an all-capital mention of 2–6 letters joins the one multi-word name in the
     document whose initials (skipping of/the/and/for/de) spell it.
3. Display name: the most frequent surface form whose key is the entity key (ties: first seen),
   with leading articles and possessives removed.
4. Descriptions: the sentences the entity's triples came from, in order, duplicates removed,
   capped (BuildParams.description_max_sentences).

Not handled (documented limits): spelling variants ("Aldric"/"Aldrick" stay apart, correctly
here), different names for one thing ("Tidewell Line"/"Tidewell Shipping Company"), surname-only
mentions in a document that never gives the full name, and pronouns (the extractor resolves
those).
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from kgviz.offline.lexicon import HEAD_NOUNS, HONORIFICS
from kgviz.text import split_sentences

_ARTICLES = ("the ", "a ", "an ")
_POSSESSIVE = re.compile(r"(?:'s|’s|s'|s’)$", re.IGNORECASE)
_DELETE = str.maketrans({c: None for c in ".,'’`\"“”‘"})
_NON_WORD = re.compile(r"[^\w\s]+")
_INITIAL_SKIP = frozenset({"of", "the", "and", "for", "de", "du", "la", "le", "von", "van"})


# Remembered per text: a build asks again for every mention of a name (issue 29: 1.5M triples, two
# ends each, and the aliases and display names after, at 100k passages); both are pure functions
# of the text, so a remembered answer is the answer. Bounded: the most recent 65,536 texts.
_KEY_CACHE = 1 << 16


@lru_cache(maxsize=_KEY_CACHE)
def normalise_key(text: str) -> str:
    """The comparison key of a surface form (rule 1). May be "" for pure punctuation."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = t.replace("’", "'").replace("&", " and ").strip(" \"'“”‘`")
    t = " ".join(t.split())
    if t.endswith("'s") and len(t) > 3:
        t = t[:-2]  # "s'" (plural possessive) loses its apostrophe with the other punctuation
    changed = True
    while changed:
        changed = False
        for art in _ARTICLES:
            if t.startswith(art) and len(t) > len(art):
                t, changed = t[len(art) :], True
        first, _, rest = t.partition(" ")
        if rest and first.rstrip(".") in HONORIFICS:
            t, changed = rest, True
    t = t.translate(_DELETE)
    t = _NON_WORD.sub(" ", t)
    return " ".join(t.split())


@lru_cache(maxsize=_KEY_CACHE)
def display_name(text: str) -> str:
    """A surface form cleaned for display: no lowercase leading article ("the Institute"), no
    possessive, no wrapping quotes. A capitalised "The" is kept: it is often part of a title."""
    t = " ".join(text.split()).strip("\"'“”‘’` ")
    t = _POSSESSIVE.sub("", t) if re.search(r"\w(?:'s|’s)$", t) else t
    while True:
        art = next((a for a in _ARTICLES if t.startswith(a) and len(t) > len(a)), None)
        if art is None:
            break
        t = t[len(art) :]
    return t.strip() or text.strip()


def entity_id(key: str) -> str:
    return f"ent:{key}"


def initials(key: str) -> str:
    return "".join(w[0] for w in key.split() if w not in _INITIAL_SKIP)


def document_aliases(surface_forms: dict[str, Counter[str]]) -> dict[str, str]:
    """{key: canonical key} for the alias rules (rule 2) within one document.

    ``surface_forms`` maps each key seen in the document to its surface forms (with counts).
    Keys that are not aliases are absent from the result.
    """
    # only proper names take part: a lowercase attribute ("coastal province") is no alias target
    multi = [k for k in surface_forms if len(k.split()) >= 2 and _is_proper(surface_forms[k])]
    out: dict[str, str] = {}
    for key, forms in surface_forms.items():
        words = key.split()
        if len(words) != 1 or key.isdigit() or not (key in HEAD_NOUNS or _is_proper(forms)):
            continue
        target = None
        if key in HEAD_NOUNS:
            cands = [m for m in multi if key in m.split()]
            target = cands[0] if len(cands) == 1 else None
        else:
            ends = [m for m in multi if m.split()[-1] == key]
            if len(ends) == 1 and 2 <= len(ends[0].split()) <= 4 and not set(ends[0].split()) & HEAD_NOUNS:
                target = ends[0]
        if target is None and 2 <= len(key) <= 6 and any(f.isupper() and f.isalpha() for f in forms):
            cands = [m for m in multi if initials(m) == key]
            target = cands[0] if len(cands) == 1 else None
        if target is not None:
            out[key] = target
    return out


def _is_proper(forms: Counter[str]) -> bool:
    return any(display_name(f)[:1].isupper() for f in forms)


@dataclass(slots=True)  # one per entity: ~650k at 100k passages, so no per-object __dict__ (issue 29)
class EntityAgg:
    """What one build learned about one entity (merged over documents).

    Plain dicts and lists, made empty and filled by ``add``: a Counter is a dict with a Python
    ``__init__`` and ``__missing__``, and a set beside the sentence list only answered "seen
    already?" (issue 29: ~650k aggregates at 100k passages, each container a separate small
    object that outlived the resolve stage in Python's arenas)."""

    id: str
    key: str
    forms: dict[str, int] = field(default_factory=dict)  # surface form -> count, forms whose key == self.key
    # forms merged by alias rules, and type -> count (first seen first): most entities have
    # none, so each is made at its first entry
    alias_forms: dict[str, int] | None = None
    types: dict[str, int] | None = None
    # distinct, first occurrence first; with ``add``'s ``max_sentences`` only that many are kept
    # (a description is the first ones: nothing reads the rest), so the duplicate test is a scan
    # of a few; without it a frequent entity ("1990": thousands of sentences at 10k passages)
    # would make that scan quadratic, so then ``_seen`` holds them as a set
    sentences: list[str] = field(default_factory=list)
    # the chunks that mention it, first seen first, each once: ``add`` is given a chunk's mentions
    # together (``kgviz.index.assemble`` registers one chunk's facts at a time), so a chunk
    # already here is the last one
    chunks: list[str] = field(default_factory=list)
    _seen: set[str] | None = field(default=None, repr=False, compare=False)
    # the display name, remembered until a surface form is added: the build asks for it once per
    # fact end, per merge report, per text to embed and per row written (issue 29: the resolve,
    # embed and write stages at 100k passages each spent seconds recomputing it)
    _name: str | None = field(default=None, repr=False, compare=False)

    def add(self, surface: str, key: str, type_: str, sentence: str, chunk_id: str,
            max_sentences: int | None = None) -> None:
        """One mention, in chunk ``chunk_id``; ``max_sentences`` caps the sentences kept."""
        if key == self.key:
            forms = self.forms
        else:
            forms = self.alias_forms = {} if self.alias_forms is None else self.alias_forms
        forms[surface] = forms.get(surface, 0) + 1
        self._name = None
        if type_:
            types = self.types = {} if self.types is None else self.types
            types[type_] = types.get(type_, 0) + 1
        self.add_sentence(sentence, max_sentences)
        if not self.chunks or self.chunks[-1] != chunk_id:
            self.chunks.append(chunk_id)

    def add_sentence(self, sentence: str, max_sentences: int | None = None) -> None:
        """Append ``sentence`` unless it is empty, already here, or ``max_sentences`` are kept."""
        if not sentence or (max_sentences is not None and len(self.sentences) >= max_sentences):
            return
        if max_sentences is not None:
            if sentence not in self.sentences:  # a few at most
                self.sentences.append(sentence)
            return
        if self._seen is None:
            self._seen = set(self.sentences)
        if sentence not in self._seen:
            self._seen.add(sentence)
            self.sentences.append(sentence)

    @property
    def name(self) -> str:
        if self._name is None:
            pool = self.forms or self.alias_forms or {}
            best = max(pool.items(), key=lambda kv: kv[1])[0]  # max keeps the first of equals
            self._name = display_name(best)
        return self._name

    @property
    def type(self) -> str:
        """The most frequent type (ties: the first seen), as Counter.most_common(1) picks it."""
        return max(self.types.items(), key=lambda kv: kv[1])[0] if self.types else ""

    def description(self, max_sentences: int, max_chars: int = 800) -> str:
        out: list[str] = []
        size = 0
        for s in self.sentences[:max_sentences]:
            if size and size + len(s) > max_chars:
                break
            out.append(s)
            size += len(s) + 1
        return " ".join(out)

    @property
    def surface_forms(self) -> list[str]:
        seen: dict[str, None] = {}
        for f in list(self.forms) + list(self.alias_forms or ()):
            seen.setdefault(display_name(f), None)
        return list(seen)

    @property
    def n_occurrences(self) -> int:
        return sum(self.forms.values()) + sum((self.alias_forms or {}).values())


def merge_descriptions(old: str, new_sentences: list[str], max_sentences: int, max_chars: int = 800) -> str:
    """Existing description + new sentences, duplicates dropped, capped (rule 4)."""
    agg = EntityAgg("", "")
    for s in split_sentences(old) + new_sentences:
        agg.add_sentence(s, max_sentences)  # the description is the first ones: no more are kept
    return agg.description(max_sentences, max_chars)


def best_sentence(text: str, sentences: list[str]) -> str:
    """The sentence sharing the most words with ``text`` (ties: the earliest); "" if none."""
    want = set(re.findall(r"\w+", text.lower()))
    best, score = "", 0
    for s in sentences:
        got = len(want & _sentence_words(s))
        if got > score:
            best, score = s, got
    return best


@lru_cache(maxsize=4096)
def _sentence_words(sentence: str) -> frozenset[str]:
    """The lower-cased words of a sentence, remembered: every triple of a chunk that carries no
    sentence of its own is compared with every sentence of the chunk (issue 29)."""
    return frozenset(re.findall(r"\w+", sentence.lower()))
