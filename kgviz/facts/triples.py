"""Extracted triples as plain data: what the parser and the offline extractor both return.

A term is either a ``Mention`` (an entity or value as written) or another ``ExtractedTriple``: a
triple used as the subject or object of a triple is a *triple hypernode* (KG-RAG §4.1,
h* = (h1, r1, h2) where h1 and h2 may themselves be triples).

The text form, used in prompts, stored as the raw output of offline extraction and read back by
``kgviz.facts.parse``::

    (Kell Arden; founded; Tesk Works)
    ((Kell Arden; founded; Tesk Works); in year; 1921)
    (Mira Tesk; said; (Orrin Bridge; was; unsafe))
    (Tesk Works [organisation]; is located in; Aldport [place])   # optional [type] after a name

Every triple has a ``kind`` that says how it was read (traces and the UI show it):

* ``relation`` (``RELATION_KIND``): a stated relation, from an LLM reply or an offline pattern;
* ``sentence`` (``SENTENCE_KIND``): the offline extractor's fallback for what its patterns miss,
  "these two mentions share a sentence", with relation ``SENTENCE_RELATION``; the sentence is
  the fact's evidence (``ExtractedTriple.sentence``), not the fact itself.

The text form has no place for the kind: a sentence fact read back from text is a relation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Union


@dataclass(frozen=True)
class Mention:
    text: str
    type: str = ""  # optional: person, place, organisation, date, number, work, ... ("" = unknown)

    def __post_init__(self) -> None:
        # a name is one line: a line break or tab inside it (a capitalised run across "B\rA") would
        # split the rendered triple when a resumed build parses it back line by line
        if any(c.isspace() and c != " " for c in self.text):
            object.__setattr__(self, "text", " ".join(self.text.split()))

    def render(self) -> str:
        return f"{self.text} [{self.type}]" if self.type else self.text


Term = Union[Mention, "ExtractedTriple"]

RELATION_KIND = "relation"
SENTENCE_KIND = "sentence"
TRIPLE_KINDS = (RELATION_KIND, SENTENCE_KIND)
# the relation of every sentence fact: reads as what it is, and no pattern or prompt produces it
SENTENCE_RELATION = "in same sentence as"


@dataclass(frozen=True)
class ExtractedTriple:
    subject: Term
    relation: str
    object: Term
    # the sentence the triple came from; excluded from equality so duplicates collapse
    sentence: str = field(default="", compare=False)
    kind: str = RELATION_KIND  # RELATION_KIND | SENTENCE_KIND (see the module docstring)

    def render(self) -> str:
        return f"({self.subject.render()}; {self.relation}; {self.object.render()})"

    def natural(self) -> str:
        """Readable text, nested triples inlined: 'Kell Arden founded Tesk Works in year 1921'."""
        return f"{_natural(self.subject)} {self.relation} {_natural(self.object)}"

    def depth(self) -> int:
        inner = [t.depth() for t in (self.subject, self.object) if isinstance(t, ExtractedTriple)]
        return 1 + max(inner, default=0)

    def mentions(self) -> Iterator[Mention]:
        for term in (self.subject, self.object):
            if isinstance(term, ExtractedTriple):
                yield from term.mentions()
            else:
                yield term

    def nested(self) -> Iterator["ExtractedTriple"]:
        """Every triple inside this one (innermost first), then this one."""
        for term in (self.subject, self.object):
            if isinstance(term, ExtractedTriple):
                yield from term.nested()
        yield self


def _natural(term: Term) -> str:
    return term.natural() if isinstance(term, ExtractedTriple) else term.text


@dataclass(frozen=True)
class RejectedFact:
    """A parsed fact left out of the graph: ``reason`` is a code (``kgviz.index.ground``:
    "prompt_example", "not_in_text"), ``name`` the name that was not found in the chunk."""

    fact: ExtractedTriple
    reason: str
    name: str

    def why(self) -> str:
        what = "a name from the prompt's examples" if self.reason == "prompt_example" else "not in the text"
        return f"{self.name!r} is {what}"

    def describe(self) -> str:
        return f"{self.fact.render()}: {self.why()}"


@dataclass
class ExtractionOutput:
    """What the extract_triples task returns for one chunk, in either mode."""

    triples: list[ExtractedTriple] = field(default_factory=list)
    n_malformed: int = 0  # lines that looked like triples but could not be read
    warnings: list[str] = field(default_factory=list)
    raw: str = ""  # LLM reply, or the offline heuristic's triples rendered in the text form
    empty_reply_ok: bool = True  # False when a non-empty reply held no triple and no "NONE"
    # facts the parser read but the grounding check (kgviz.index.ground) left out, with reasons
    rejected: list[RejectedFact] = field(default_factory=list)

    @property
    def status(self) -> str:
        if not self.empty_reply_ok and not self.triples and not self.rejected:
            return "failed"
        # "partial": some of the reply was lost, as unreadable lines or as facts not in the text
        return "partial" if self.n_malformed or self.rejected else "ok"


def stated_fact(text: str, kind: str | None, sentence: str | None) -> str:
    """A fact as a method's context states it: its text, and for a sentence fact (whose relation only
    says 'in the same sentence as') the sentence it stands for (ours; as Graph-RAG gives a
    relationship its description)."""
    said = (sentence or "").strip()
    return f"{text}: {said}" if kind == SENTENCE_KIND and said else text


def render_triples(triples: list[ExtractedTriple]) -> str:
    return "\n".join(t.render() for t in triples)


# a "name" made only of these words is a parsing accident ('"; and" -> "and"'), never an entity
# ("a" is left out: test fixtures and real single-letter names use it)
NON_ENTITY_WORDS = frozenset(
    """the and or but nor of in on at to for from by with as is are was were be it its he she
    they them him her his their this that these those there here which who whom what none null n/a
    unknown""".split()
)


def only_function_words(text: str) -> bool:
    """True for a phrase of stopwords only ("it is", "the", ""): a parsing accident, never an entity
    or an attribute (the parser drops such a part; the offline extractor never makes one)."""
    words = re.findall(r"[\w/]+", text.lower())
    return not words or all(w in NON_ENTITY_WORDS for w in words)
