"""Step records of KG-Infused RAG (paper 003, §3.4-3.6, Eq. 3-11).

The method (``kgviz.methods.kg_infused``) returns one frozen record per stage it runs; the narrator
(``kgviz.methods.kg_infused_narrator``) turns each into the step the player shows. A record names
the paper's equation or stage it implements (``LINE``) and the line of the algorithm box the
player lights for it (``BOX_LINE``, ``kgviz.methods.algorithm_lines.KG_INFUSED``), and is kept, as
``record_data``, in its step's ``TraceStep.record``: the numbers that decided, in their own types.

Records name passages and entities by id and keep what each stage decided or wrote: scores, their
terms, reasons, counts, the triples (short), the expanded query and the notes (the stage's output).
Passage texts stay out: the store and the answer step's context hold them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Mapping

StopRule = Literal["", "no_triple", "no_new_entity", "max_rounds"]


@dataclass(frozen=True)
class Fact:
    """One candidate triple, seen from the active entity it was reached from."""

    id: str  # Triple id, or "rel:<src>|<relation>|<dst>" for a RELATED edge without a Triple node
    subject_id: str
    subject: str
    relation: str
    object_id: str
    object: str
    via: str  # the active entity
    to: str  # the entity activation moves to (the tail; the head for an incoming edge)
    to_name: str
    text: str = ""
    chunk_id: str = ""
    in_store: bool = False  # a Triple node exists
    score: float = 0.0  # cosine with the question
    round: int = 0  # the round that selected it (0 while a candidate)

    def as_input(self, n: int = 0) -> dict[str, Any]:
        """The triple as the selection / summary tasks read it."""
        return {"n": n, "id": self.id, "subject": self.subject, "relation": self.relation,
                "object": self.object, "text": self.text, "round": self.round}

    @property
    def display(self) -> str:
        return f"<{self.subject} | {self.relation} | {self.object}>"

    @property
    def sentence(self) -> str:
        text = self.text.strip() or f"{self.subject} {self.relation} {self.object}"
        return text if text.endswith((".", "!", "?")) else text + "."


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk as the note task reads it (the keys of ``asdict`` are the task's input)."""

    id: str
    title: str
    text: str
    score: float | None


@dataclass(frozen=True)
class Named:
    id: str
    name: str


@dataclass(frozen=True)
class Seed:
    id: str
    name: str
    cosine: float  # sim(q, d_i) = q · d_i, Eq. 3
    description: str


@dataclass(frozen=True)
class SeedEntities:
    """Eq. 3-4: E⁰ = the top-kₑ entities by the similarity of the question to their descriptions,
    over the KG chosen: an imported curated KG (the paper's Wikidata5M-KG) or, when there is none
    or ``kg_source`` asks for it, the graph built from the corpus (ours)."""

    LINE: ClassVar[str] = "§3.4 Eq. 3-4 (seed entities)"
    BOX_LINE: ClassVar[int] = 1
    origin: str  # 'curated' | 'corpus': the KG every later query stays inside
    why: str
    requested: str  # the kg_source setting
    corpus_fallback: bool  # 'auto' found no curated KG and spreads over the corpus graph
    k_e: int
    seeds: tuple[Seed, ...]  # best first


@dataclass(frozen=True)
class EntityCap:
    total: int  # one-hop triples found
    kept: int  # after max_triples_per_entity


@dataclass(frozen=True)
class RoundCandidates:
    """§3.4 round i, step 1: the one-hop triples of the active entities Eⁱ (outgoing; also incoming
    when spreading both ways, ours), at most ``max_triples_per_entity`` each, without the triples
    already in the memory (Table 13 rule 1)."""

    LINE: ClassVar[str] = "§3.4 round i, step 1 (one-hop triples of Eⁱ)"
    BOX_LINE: ClassVar[int] = 3
    round: int
    active: tuple[Named, ...]
    candidates: tuple[Fact, ...]  # in graph order, as the selection lists them
    per_entity: Mapping[str, EntityCap]  # active entity id -> its triples before and after the cap
    already_in_memory: int
    direction: Literal["out", "both"]  # the edges followed this run
    direction_setting: str  # 'out' | 'both' | 'auto'
    max_triples_per_entity: int
    triple_cap: str  # 'similarity' | 'random': which triples survive the cap

    @property
    def capped(self) -> list[str]:
        return sorted(e for e, c in self.per_entity.items() if c.kept < c.total)


@dataclass(frozen=True)
class TripleSelection:
    """§3.4 round i, step 1: Gⁱ = the candidates the chooser selects (Table 12 in round 1, Table 13
    after). ``score`` is the number that decided: the offline selector's score (its terms in
    ``parts``), or, when a model chose, each triple's cosine to the question (the model saw them
    unscored; its pick decided)."""

    LINE: ClassVar[str] = "§3.4 round i, step 1 (triple selection, Table 12 / 13)"
    BOX_LINE: ClassVar[int] = 4
    round: int
    prompt: str  # the prompt rendered: kg_infused.SELECT_TRIPLES (round 1) | UPDATE_TRIPLES
    candidates: tuple[str, ...]  # ids in graph order: the chooser saw them numbered [1], [2], ...
    selected: tuple[str, ...]  # in the order chosen
    ignored: tuple[str, ...]  # picks naming no candidate, as written
    said_none: bool
    by: str  # 'offline heuristic' | 'model' | '' (no candidates: nothing was asked)
    score: Mapping[str, float]  # the deciding score (offline: best first)
    parts: Mapping[str, Mapping[str, float]]  # its terms (a model's step: the cosine alone)
    order: tuple[str, ...]  # candidates best first by ``score``
    by_cosine: tuple[str, ...]  # candidates best first by cosine to the question
    rule: Mapping[str, str]  # offline: why each candidate not selected was left out; {} for a model

    @property
    def offline(self) -> bool:
        return self.by != "model"


@dataclass(frozen=True)
class Frontier:
    """Eq. 5-6: the memory takes Gⁱ; Eⁱ⁺¹ = the selected triples' tails not activated yet (heads
    reached along incoming edges, ours), at most ``max_entities_per_round``; the spreading stops
    when none is left or after ``max_rounds`` rounds."""

    LINE: ClassVar[str] = "§3.4 Eq. 5-6 (activation memory, next entities)"
    BOX_LINE: ClassVar[int] = 5
    round: int
    frontier: tuple[Named, ...]  # Eⁱ⁺¹, in selection order
    over_cap: tuple[Named, ...]  # new tails past max_entities_per_round
    already_active: tuple[str, ...]  # selected tails already in E_act
    memory_size: int  # triples in G_act
    activated: int  # entities in E_act (before Eⁱ⁺¹ joins)
    stop: StopRule
    max_rounds: int
    max_entities_per_round: int
    heads: int  # selected triples whose next entity is their head (an incoming edge)
    direction_setting: str


@dataclass(frozen=True)
class Written:
    """A stage where the reasoner writes text: what it was ``given`` (ids, or names), the ``text``
    it wrote, or ``skipped`` with the stage's fallback as the text. The subclasses name the stage."""

    given: tuple[str, ...]
    text: str
    skipped: bool


class SubgraphSummary(Written):
    """§3.4: S_G = LLM summary of G_act (Table 14), given its triples in the order selected;
    skipped (S_G = "") when G_act is empty."""
    LINE: ClassVar[str] = "§3.4 subgraph summary (Table 14)"
    BOX_LINE: ClassVar[int] = 6


class QueryExpansion(Written):
    """Eq. 7: q' = LLM(q, S_G) (Table 15), given the activated entities' names; q' = q when there is
    no summary."""
    LINE: ClassVar[str] = "§3.5 Eq. 7 (KG-based query expansion, Table 15)"
    BOX_LINE: ClassVar[int] = 7


@dataclass(frozen=True)
class DualRetrieval:
    """Eq. 8 with App. C.2's de-duplication: the question's top ⌊kₚ/2⌋, then the first new passages
    of the expanded query's top kₚ. Each ranking's scores are its own (``search``'s scale)."""

    LINE: ClassVar[str] = "§3.5 Eq. 8 (dual retrieval, App. C.2)"
    BOX_LINE: ClassVar[int] = 8
    k_p: int
    search: str  # dense | bm25 | hybrid
    passage_search: str  # the setting ('auto' resolved by the embedder)
    embedder_id: str
    expanded_query: str
    question_ranking: tuple[tuple[str, float], ...]  # (chunk id, score), best first, ⌊kₚ/2⌋ deep
    expanded_ranking: tuple[tuple[str, float], ...]  # kₚ deep
    question_passages: tuple[str, ...]
    expanded_passages: tuple[str, ...]
    duplicates: tuple[str, ...]  # the expanded query's, already retrieved for the question
    unused: tuple[str, ...]  # the expanded query's, past its kₚ - ⌊kₚ/2⌋ new ones
    skipped: bool  # the database holds no passages

    @property
    def score(self) -> dict[str, float]:
        """Each passage's score in the ranking that took it: the question's where it is there."""
        out = dict(self.expanded_ranking)
        out.update(self.question_ranking)
        return out


@dataclass(frozen=True)
class BudgetFill:
    """Ours (equal budget): Eq. 8's two rankings read past kₚ, each filling half of the room
    ``budget_tokens`` leaves after the note and the kₚ passages (skip-and-continue)."""

    LINE: ClassVar[str] = "§3.5 Eq. 8 read past kₚ (ours: equal budget)"
    BOX_LINE: ClassVar[int] = 8
    budget_tokens: int
    k_p: int
    n_passages: int  # the kₚ passages already taken
    room: int
    question_extra: tuple[str, ...]
    expanded_extra: tuple[str, ...]
    question_tokens: int
    expanded_tokens: int
    score: Mapping[str, float]  # each extra passage's score, as in DualRetrieval


class PassageNote(Written):
    """Eq. 9: S_D = LLM(q, D) (Table 11), given the passages' ids; skipped when none was retrieved."""
    LINE: ClassVar[str] = "§3.6 Eq. 9 (passage note, Table 11)"
    BOX_LINE: ClassVar[int] = 9


class KgNote(Written):
    """Eq. 10: S_final = LLM(S_D, S_G) (Table 16), given G_act's triples (as sentences, by id here);
    skipped (S_final = S_D) when there is no summary."""
    LINE: ClassVar[str] = "§3.6 Eq. 10 (KG-augmented note, Table 16)"
    BOX_LINE: ClassVar[int] = 10


@dataclass(frozen=True)
class AnswerInput:
    """Eq. 11's input: S_final (the paper), then the passages and triples where asked (ours)."""

    LINE: ClassVar[str] = "§3.6 Eq. 11 (the answer step's input)"
    BOX_LINE: ClassVar[int] = 10
    origin: str
    items: tuple[str, ...]  # ids handed to the answer step, in order
    tokens: int
    passages: tuple[str, ...]  # the passages the note (and the budget) drew on
    triples: tuple[str, ...]
    rounds: int
    context_passages: bool
    budget_tokens: int
