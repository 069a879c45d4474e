"""Is an extracted fact in its chunk? Every fact's names must be found in the text it was read
from (issue 23: a 0.5B model returned the extraction prompt's few-shot examples as 29 of 30
"facts", a 1.5B model wrote names the text never uses, and both parsed perfectly).

The check (ours), for every name of a fact, nested facts included:

* **found**: the name's words appear, in order and next to each other, among the words of the
  chunk or of its document's title (the offline extractor hangs a passage's facts on its title).
  Words are compared as the entity resolver compares names (``kgviz.index.resolve`` rule 1):
  NFKC + casefold, a possessive 's dropped, '.', ',' and apostrophes deleted inside a word
  ("12,300" = "12300", "U.S." = "us"), any other punctuation a word break, and leading articles
  and honorifics of the name ignored ("The Aster Wren", "An Aster Wren" = "Aster Wren"); and also
  cut into runs of letters or digits ("1930s" in "the 1930s,", "3.4" in "EC 3.4.21.21"), with
  short parentheticals of the text skipped ("football (soccer) player");
* **found by an alias rule** of the resolver (rule 2), as the model may write the full form of a
  name the chunk shortens: a person's name of 2-4 words with no head noun whose last word the
  chunk writes capitalised ("Edda Lunn" for a chunk saying "Lunn"), unless the chunk writes that
  surname only after other given names ("Ange Vohl" for a chunk naming "Agnes Vohl": a misspelt
  first name; initials fit: "E. Lunn" = "Edda Lunn"), and acronyms both ways
  ("KMI" for "Kellhaven Marine Institute" and back). A head-noun name is never matched by its
  last word: "Tarroin Bridge" is not "Tarrow Bridge";
* **a descriptive phrase** of ``PHRASE_WORDS`` or more words is found when each of its content
  words is in one sentence of the chunk (the model may reorder the text's words, not add its own).

Relations are not checked: they are the model's wording ("Ossel Marine Institute; was director
for; twenty-six years" names only what its text names, and stays). A fact with a name that is not
found is rejected with a reason: ``PROMPT_EXAMPLE`` when that name is one of the extraction
prompt's example names (``kgviz.prompts.extraction.EXTRACT_TRIPLES_EXAMPLES``; also a first name
of the model's own before an example's surname: "Théodore Brandt"), else ``NOT_IN_TEXT``. Of a
rejected hypernode, the inner facts whose names are all found are kept: in
``((Ossel Marine Institute; was director for; X); in year; 1924)`` the year may be invented while
the inner fact is in the text.

The offline pattern extractor reads its names from the text: the check finds every one of its
74,580 facts on the sample and the shared HotpotQA, 2Wiki and MuSiQue corpora (300-token chunks);
the build keeps offline facts whatever the check says and names a miss (``kgviz.index.extract``).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterable, Sequence

from kgviz.facts.parse import parse_triples
from kgviz.facts.triples import ExtractedTriple, ExtractionOutput, Mention, RejectedFact
from kgviz.offline.lexicon import HEAD_NOUNS, HONORIFICS
from kgviz.offline.stopwords import STOPWORDS
from kgviz.prompts.extraction import EXTRACT_TRIPLES_EXAMPLES

PROMPT_EXAMPLE = "prompt_example"
NOT_IN_TEXT = "not_in_text"
REPEATS_ITEM = "repeats_item"  # a description that only repeats the item it describes (check_description)
REASONS = (PROMPT_EXAMPLE, NOT_IN_TEXT)

_GLUED = re.compile(r"&|\w+(?:['’.,]\w+)*")  # the resolver's words: "12,300", "U.S", "Lunn's"
_FINE = re.compile(r"[^\W\d_]+|\d+")  # letters or digits: "18L" -> 18 L, "Ph.D." -> Ph D
_SENTENCE = re.compile(r"[^\n.!?]+(?:[.!?]+(?=\S)[^\n.!?]*)*[.!?]*")  # "3.4" and "U.S." stay inside
PHRASE_WORDS = 3  # ours: a name this long may be a description, read word by word (Source._phrase)
_PAREN = re.compile(r"\([^()]{0,80}\)")
_POSSESSIVE = re.compile(r"['’]s$")
_DELETE = str.maketrans({c: None for c in ".,'’"})
_LEADING = frozenset({"the", "a", "an"}) | HONORIFICS
_INITIAL_SKIP = frozenset({"of", "the", "and", "for", "de", "du", "la", "le", "von", "van"})


@dataclass(frozen=True)
class Word:
    key: str  # the normalised word
    start: int  # offsets of the word in the text it came from
    end: int
    raw: str  # the word as written


@lru_cache(maxsize=1 << 18)  # issue 29: ~300 calls a chunk, mostly words met before (~25 MB when full)
def _key(raw: str) -> str:
    return "and" if raw == "&" else _POSSESSIVE.sub("", unicodedata.normalize("NFKC", raw).casefold()).translate(_DELETE)


def words(text: str, fine: bool = False) -> list[Word]:
    """The words of ``text`` as the resolver cuts them, or (``fine``) as runs of letters or digits."""
    out = []
    for m in (_FINE if fine else _GLUED).finditer(text):
        key = _key(m.group(0))
        if key:
            out.append(Word(key, m.start(), m.end(), m.group(0)))
    return out


def _without_parentheticals(text: str, ws: list[Word]) -> list[Word]:
    """``ws`` minus the words inside short parentheses: "a Danish former football (soccer)
    player" holds the name "Danish former football player" (the offline extractor drops them)."""
    spans = [m.span() for m in _PAREN.finditer(text)]
    return [w for w in ws if not any(s <= w.start < e for s, e in spans)] if spans else ws


def _name_words(name: str, fine: bool = False) -> list[Word]:
    ws = words(name, fine)
    while len(ws) > 1 and ws[0].key in _LEADING:
        ws = ws[1:]
    return ws


def _capital(w: Word) -> bool:
    return w.raw[:1].isupper()


@dataclass(frozen=True)
class Match:
    start: int
    end: int
    how: str  # "text" | "surname" | "acronym" | "words" (a phrase's words in one sentence)
    in_title: bool = False


class Source:
    """The words of one chunk (and its document's title), indexed for name look-ups. A name is
    compared word by word in two cuts (the resolver's words, and runs of letters or digits, so
    "1930s" is found in "the 1930s," and "3.4" in "EC 3.4.21.21"), also with parentheticals
    skipped; any cut that finds it will do."""

    def __init__(self, text: str, title: str = "") -> None:
        self.text = text
        self._glued = words(text)
        self._views: list[tuple[bool, list[Word], bool]] = []  # (fine, words, in_title)
        for part, in_title in ((text, False), (title, True)):
            if not part:
                continue
            fine = words(part, fine=True)
            self._views += [(False, self._glued if not in_title else words(part), in_title), (True, fine, in_title)]
            no_paren = _without_parentheticals(part, fine)
            if no_paren is not fine:
                self._views.append((True, no_paren, in_title))
        self._index = [_positions(ws) for _, ws, _ in self._views]
        self._sentence_keys: list[tuple[int, int, set[str]]] | None = None
        self._found: dict[str, Match | None] = {}  # a chunk's facts name the same things again and again

    def find(self, name: str) -> Match | None:
        """Where ``name`` is written in the chunk (or title), or by which alias rule; None if nowhere."""
        if name not in self._found:
            self._found[name] = self._find(name)
        return self._found[name]

    def _find(self, name: str) -> Match | None:
        want = {False: _name_words(name), True: _name_words(name, fine=True)}
        if not want[False] or not want[True]:
            return Match(0, 0, "text")  # nothing to look for: the resolver drops such a name
        for (fine, ws, in_title), index in zip(self._views, self._index):
            keys = [w.key for w in want[fine]]
            for i in index.get(keys[0], ()):
                if [w.key for w in ws[i : i + len(keys)]] == keys:
                    return Match(ws[i].start, ws[i + len(keys) - 1].end, "text", in_title)
        return self._alias(want[False]) or self._phrase(want[True])

    def _phrase(self, want: list[Word]) -> Match | None:
        """A descriptive phrase of ``PHRASE_WORDS`` or more words ("footpath under its eastern arch
        along the river") is found when each of its content words is in one sentence of the chunk:
        the model may reorder or shorten the text's wording, but not bring words of its own."""
        if len(want) < PHRASE_WORDS:
            return None
        content = {w.key for w in want if w.key not in STOPWORDS}
        if not content:
            return None
        for start, end, keys in self._sentences():
            if content <= keys:
                return Match(start, end, "words")
        return None

    def _sentences(self) -> list[tuple[int, int, set[str]]]:
        if self._sentence_keys is None:
            self._sentence_keys = []
            for m in _SENTENCE.finditer(self.text):
                ws = words(m.group(0), fine=True) + words(m.group(0))
                self._sentence_keys.append((m.start(), m.end(), {w.key for w in ws}))
        return self._sentence_keys

    def _alias(self, want: list[Word]) -> Match | None:
        keys = [w.key for w in want]
        text_words = self._glued
        if 2 <= len(keys) <= 4 and _capital(want[0]) and not set(keys) & HEAD_NOUNS and not keys[-1].isdigit():
            found = self._surname(keys)
            if found is not None:
                return found
        if len(keys) == 1:  # an acronym the chunk spells out: "KMI" for "Kellhaven Marine Institute"
            raw = want[0].raw
            if 2 <= len(raw) <= 6 and raw.isalpha() and raw.isupper():
                span = _spelled_out(text_words, keys[0])
                if span is not None:
                    return Match(span[0], span[1], "acronym")
            return None
        letters = "".join(k[0] for k in keys if k not in _INITIAL_SKIP)
        if len(letters) >= 2:  # a name the chunk gives as its acronym
            for w in text_words:
                if w.key == letters and w.raw.isupper():
                    return Match(w.start, w.end, "acronym")
        return None


    def _surname(self, keys: list[str]) -> Match | None:
        """A person's name whose surname the chunk writes: "Edda Lunn" for a chunk that says only
        "Lunn", "E. Lunn" or "Edda Maria Lunn". When the chunk writes that surname after given
        names of its own, the name's given names must be among them (or be their initials):
        "Ange Vohl" is not found in a chunk about "Agnes Vohl" that later says "Vohl" alone."""
        given, bare, full = keys[:-1], None, []
        ws = self._glued
        for i, w in enumerate(ws):
            if w.key != keys[-1] or not _capital(w):
                continue
            run = _given_run(self.text, ws, i)
            if not run:
                bare = bare or Match(w.start, w.end, "surname")
            elif all(any(_same_given(g, r.key) for r in run) for g in given):
                return Match(run[0].start, w.end, "surname")
            else:
                full.append(run)
        return None if full else bare


def _given_run(text: str, ws: list[Word], i: int) -> list[Word]:
    """The capitalised words written right before ``ws[i]`` in its sentence ("Agnes" of "Agnes
    Vohl", "E" of "E. Lunn"; at most three): the given names the text writes with that surname.
    Honorifics, stopwords and anything across punctuation end the run."""
    run: list[Word] = []
    j = i - 1
    while j >= 0 and len(run) < 3:
        w, gap = ws[j], text[ws[j].end:ws[j + 1].start]
        if gap.strip() not in ("", ".") or (gap.strip() == "." and len(w.key) != 1):
            break  # a sentence or clause ends between them; "E. Lunn" is an initial
        if not _capital(w) or w.key in STOPWORDS or w.key in HONORIFICS or w.key in HEAD_NOUNS:
            break
        run.insert(0, w)
        j -= 1
    return run


def _same_given(a: str, b: str) -> bool:
    """The same given name, or an initial of it ("e" and "edda")."""
    return a == b or ((len(a) == 1 or len(b) == 1) and a[0] == b[0])


def _positions(ws: list[Word]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, w in enumerate(ws):
        out.setdefault(w.key, []).append(i)
    return out


def _spelled_out(ws: list[Word], acronym: str) -> tuple[int, int] | None:
    """A run of capitalised words (of/the/and/... allowed inside) whose initials spell ``acronym``."""
    for i, first in enumerate(ws):
        if not _capital(first) or first.key[0] != acronym[0]:
            continue
        letters, j = "", i
        while j < len(ws) and len(letters) < len(acronym):
            w = ws[j]
            if w.key in _INITIAL_SKIP and j > i:
                j += 1
                continue
            if not _capital(w):
                break
            letters += w.key[0]
            j += 1
        if letters == acronym and j - i >= 2:
            return first.start, ws[j - 1].end
    return None


# --- the prompt's examples -------------------------------------------------------------------
@lru_cache(maxsize=1)
def example_names() -> frozenset[str]:
    """Normalised names of the extraction prompt's examples, and the last word of each person's
    name ("Pell", "Linde"): a fact naming one that the chunk does not is a copied example."""
    out: set[str] = set()
    # only the triple lines: the examples repeat "Triples:", which the parser reads as a loop
    lines = "\n".join(ln for ln in EXTRACT_TRIPLES_EXAMPLES.splitlines() if ln.startswith("("))
    for t in parse_triples(lines).triples:
        for m in t.mentions():
            ws = _name_words(m.text)
            if ws:
                out.add(" ".join(w.key for w in ws))
                if len(ws) >= 2 and _capital(ws[-1]) and ws[-1].key not in HEAD_NOUNS:
                    out.add(ws[-1].key)
    return frozenset(out)


def _missing(t: ExtractedTriple, source: Source) -> list[Mention]:
    """The names of ``t`` (nested facts included) that the source does not hold."""
    return [m for m in t.mentions() if source.find(m.text) is None]


def _is_example(name: str) -> bool:
    ws = _name_words(name)
    keys = [w.key for w in ws]
    # "Théodore Brandt": an example's surname under a first name of the model's own
    return bool(keys) and (" ".join(keys) in example_names() or (len(ws) >= 2 and _capital(ws[-1])
                                                               and keys[-1] in example_names()))


def check_fact(t: ExtractedTriple, source: Source) -> RejectedFact | None:
    """None when every name of ``t`` is in the source, else why it is rejected: a copy of the
    prompt's examples when any name that is not found is one of theirs."""
    missing = _missing(t, source)
    if not missing:
        return None
    copied = [m for m in missing if _is_example(m.text)]
    return RejectedFact(t, PROMPT_EXAMPLE, copied[0].text) if copied else RejectedFact(t, NOT_IN_TEXT, missing[0].text)


def ground_output(out: ExtractionOutput, text: str, title: str = "") -> ExtractionOutput:
    """``out`` with only the facts found in ``text`` (the chunk) or ``title``; the others are in
    ``rejected`` with their reason. Of a rejected hypernode, inner facts that are found are kept."""
    source = Source(text, title)
    kept: list[ExtractedTriple] = []
    seen: set[ExtractedTriple] = set()
    rejected: list[RejectedFact] = []

    def keep(t: ExtractedTriple) -> None:
        if t not in seen:
            seen.add(t)
            kept.append(t)

    for t in out.triples:
        why = check_fact(t, source)
        if why is None:
            keep(t)
            continue
        rejected.append(why)
        for inner in _found_inner(t, source):
            keep(inner)
    if not rejected:
        return out
    warnings = list(out.warnings)
    n_copy = sum(r.reason == PROMPT_EXAMPLE for r in rejected)
    warnings.append(f"{len(rejected)} fact(s) not found in the chunk's text"
                    + (f" ({n_copy} copy the prompt's examples)" if n_copy else "")
                    + f", first: {rejected[0].describe()}")
    return replace(out, triples=kept, warnings=warnings, rejected=list(out.rejected) + rejected)


def _found_inner(t: ExtractedTriple, source: Source) -> Iterable[ExtractedTriple]:
    for term in (t.subject, t.object):
        if isinstance(term, ExtractedTriple):
            if not _missing(term, source):
                yield term
            else:
                yield from _found_inner(term, source)


# --- KET skeleton descriptions (Alg. 1 line 3) -------------------------------------------------
# a name in free text: a run of capitalised words (of/the/and/... allowed inside), or a number
_CAP_WORD = r"[A-Z](?:[\w'’-]|\.(?=\w))*"  # "U.S" keeps its inner dot; a sentence's full stop ends it
_DESC_NAME = re.compile(rf"{_CAP_WORD}(?:[ \t]+(?:(?:of|the|and|de|du|la|le|von|van)[ \t]+)?{_CAP_WORD})*|\d[\d,.]*\d|\d")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)\s*[\"'(]*$")


def description_names(text: str) -> list[str]:
    """The names and numbers a description writes: capitalised runs and numbers. A single
    capitalised word that opens a sentence is left out (it may be any word: "Founded in ...")."""
    out = []
    for m in _DESC_NAME.finditer(text):
        name = m.group(0).rstrip(".,'’-")
        if not name or (" " not in name and not name[0].isdigit() and _SENTENCE_START.search(text[: m.start()])):
            continue
        if " " not in name and name.casefold() in STOPWORDS:
            continue
        out.append(name)
    return out


def check_description(text: str, source: Source, example_lines: Sequence[str] = (), item: str = ""
                      ) -> RejectedName | None:
    """None when a description's names and numbers are all in its chunk (the fact check's rules,
    ``Source.find``), else why not: ``REPEATS_ITEM`` when it only repeats the words of ``item`` (the
    line the prompt listed), ``PROMPT_EXAMPLE`` when it repeats an example line of its prompt or
    names an example name the chunk does not hold, else ``NOT_IN_TEXT`` with the first missing name
    (or when it shares no content word with the chunk: a refusal, or talk about the task)."""
    flat = " ".join(w.key for w in words(text))
    if item and {w.key for w in words(text)} <= {w.key for w in words(item)}:
        return RejectedName(REPEATS_ITEM, item)
    for line in example_lines:
        body = line.split(":", 1)[-1]
        if flat == " ".join(w.key for w in words(body)):
            return RejectedName(PROMPT_EXAMPLE, body.strip())
    content = {w.key for w in words(text)} - STOPWORDS
    if not content & {w.key for w in source._glued}:
        return RejectedName(NOT_IN_TEXT, "no word of the text")  # a refusal, or talk about the task
    missing = [n for n in description_names(text) if source.find(n) is None]
    if not missing:
        return None
    copied = [n for n in missing if _is_example(n)]
    return RejectedName(PROMPT_EXAMPLE, copied[0]) if copied else RejectedName(NOT_IN_TEXT, missing[0])


@dataclass(frozen=True)
class RejectedName:
    reason: str  # PROMPT_EXAMPLE | NOT_IN_TEXT
    name: str  # the name (or copied example line) that decided it


# --- Explore: where a stored fact's names are in its sentence -------------------------------
def grounding_note(names: Sequence[str], sentence: str) -> str:
    """The sentence with each name found in it marked «like this», or what was not found
    (plain text: the caller escapes it for its medium)."""
    if not sentence:
        return ""
    source = Source(sentence)
    spans: list[tuple[int, int]] = []
    missing: list[str] = []
    for name in names:
        m = source.find(name)
        if m is None or m.end <= m.start:
            missing.append(name)
        elif not any(s < m.end and m.start < e for s, e in spans):
            spans.append((m.start, m.end))
    marked, last = [], 0
    for s, e in sorted(spans):
        marked += [sentence[last:s], "«", sentence[s:e], "»"]
        last = e
    marked.append(sentence[last:])
    note = "".join(marked)
    return note + (f"  [not in this sentence: {', '.join(missing)}]" if missing else "")


def fact_names(*ends: str) -> list[str]:
    """The names in a stored fact's subject and object (a nested fact is written '(s; r; o)')."""
    out: list[str] = []
    for end in ends:
        end = (end or "").strip()
        if end.startswith("(") and end.endswith(")"):
            for t in parse_triples(end).triples:
                out += [m.text for m in t.mentions()]
        elif end:
            out.append(end)
    return out
