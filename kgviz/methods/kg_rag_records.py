"""Step records of KG-RAG's Chain of Explorations (paper 001; the box is our reconstruction,
``kgviz.methods.algorithm_lines.KG_RAG``).

The walk (``kgviz.methods.kg_rag``) returns one frozen record per line of the box it carries out;
``kgviz.methods.kg_rag_narrator`` turns each record into the step the player shows. A record names
its line (``LINE``) and is kept, serialised, in its step's ``TraceStep.record``: the numbers that
decided (cosines, the chooser's scores and their parts, the evaluator's decision), in their own
types, beside the words.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, Mapping

from kgviz.task_results import KgRagPlan

# the fixed neighbourhood queries every hop runs (kgviz.graph.neighbourhood), in the order they are named
HOP_QUERIES = ("Q_TRIPLES_AT_ENTITY", "Q_HYPER_AT_ENTITY", "Q_RELATED_OUT", "Q_RELATED_IN", "Q_TRIPLES_AT_TRIPLE")

# why a hop ends the walk or is stepped back from (StepBack.reason, PathContext.stop_reason)
NO_CANDIDATE = "dead end: no new candidate"
NONE_FOLLOWED = "the chooser followed no candidate"
EVALUATOR_BACKTRACK = "the evaluator asked to backtrack"
EVALUATOR_STOP = "the evaluator judged the facts sufficient"
NO_START = "no start node found (is the graph empty?)"


def hop_limit(max_hops: int) -> str:
    return f"hop limit ({max_hops}) reached"


@dataclass(frozen=True)
class Candidate:
    """A fact one hop away: a Triple node (``has_node``), or a RELATED edge without one (id
    ``rel:<src>|<relation>|<dst>``). Following it moves the walk from ``anchor`` to ``target``."""

    id: str
    fact: str
    relation: str
    subject_id: str
    object_id: str
    anchor: str
    target: str
    target_table: str = "Entity"
    has_node: bool = True

    @property
    def edge(self) -> tuple[str, str, str]:
        return self.subject_id, self.object_id, self.relation


@dataclass(frozen=True)
class ExplorationPlan:
    """Line 1: the plan the LLM (or the offline heuristic) gave: entities to start from, relations
    to follow, the hops it expects."""

    LINE: ClassVar[str] = "CoE line 1"
    plan: KgRagPlan
    max_hops: int


@dataclass(frozen=True)
class StartNodes:
    """Line 2: vector search hits (best cosine over the question and each planned entity), the
    planned entities' best hits taken first when at ``entity_match_min`` or above, then by cosine
    up to ``start_nodes``."""

    LINE: ClassVar[str] = "CoE line 2"
    cosine: Mapping[str, float]  # every hit's best cosine
    table: Mapping[str, str]  # every hit's table (Entity | Triple)
    ranked: tuple[str, ...]  # the hits by cosine, best first
    planned_hits: tuple[str, ...]  # each planned entity's best hit at the threshold, in plan order
    taken: tuple[str, ...]  # the start nodes in the order taken
    seeds: tuple[str, ...]  # the taken ones found in the graph
    seed_pool: int
    start_nodes: int
    curated_in_graph: bool
    use_curated: bool


@dataclass(frozen=True)
class Neighbourhood:
    """Line 4: the hop's anchors and the new candidate facts their neighbourhood queries gave."""

    LINE: ClassVar[str] = "CoE line 4"
    hop: int
    anchors: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    fetched: int  # distinct facts the queries returned
    excluded: int  # already on the path or rejected by a backtrack
    dangling: int  # an end missing from the graph
    curated_left_out: int  # curated facts, or facts into the curated KG, left out (use_curated=False)
    queries: tuple[str, ...] = HOP_QUERIES


@dataclass(frozen=True)
class Ranking:
    """Line 5: candidates by similarity = w_q · cos(fact, question) + w_p · cos(fact, plan)."""

    LINE: ClassVar[str] = "CoE line 5"
    hop: int
    ranked: tuple[str, ...]  # best first (ties by id)
    score: Mapping[str, float]
    parts: Mapping[str, Mapping[str, float]]  # question, plan: they add up to the score
    weights: Mapping[str, float]
    embedded_on_the_fly: tuple[str, ...]  # candidates with no stored Triple.emb
    top_k: int  # how many of the ranked are shown to the chooser


@dataclass(frozen=True)
class Choice:
    """Line 6: which of the shown candidates the chooser followed. ``score`` is the number that
    decided for each shown one: the offline heuristic's own score (``parts`` its terms), or, when a
    model chose, the similarity it was shown (its pick, not a score, decided)."""

    LINE: ClassVar[str] = "CoE line 6"
    hop: int
    shown: tuple[str, ...]  # the top-k, numbered for the chooser in this order
    chosen: tuple[str, ...]
    ignored: tuple[str, ...]  # picks in the reply that were not shown candidates
    said_none: bool
    by: Literal["model", "offline heuristic"]
    score: Mapping[str, float]
    parts: Mapping[str, Mapping[str, float]]
    order: tuple[str, ...]  # the chooser's ranking (offline: by its score; a model: as shown)
    opened: tuple[str, ...] = ()  # triple hypernodes the followed facts landed on

    @property
    def ranks(self) -> tuple[int, ...]:
        """The places (1-based) of the chosen facts among the shown ones."""
        return tuple(self.shown.index(c) + 1 for c in self.chosen)


@dataclass(frozen=True)
class StepBack:
    """Line 7: the last hop popped, its followed facts rejected for the retry. At a dead end
    (``dead_end``) its facts stay in the context (``kept``): a leaf is often the answer."""

    LINE: ClassVar[str] = "CoE line 7"
    hop: int
    reason: str
    dead_end: bool
    dropped: tuple[Candidate, ...]  # the hop's followed facts
    score: Mapping[str, float]  # their similarity
    opened: tuple[str, ...]
    kept: tuple[str, ...]
    backtracks: int  # spent so far, this one included


@dataclass(frozen=True)
class Verdict:
    """Line 8: the evaluator's STOP / CONTINUE / BACKTRACK after a hop. A BACKTRACK that is not
    allowed is carried out as CONTINUE (``refused`` says why)."""

    LINE: ClassVar[str] = "CoE line 8"
    hop: int
    requested: str  # what the reply asked for
    decision: str  # what the walk does
    reason: str  # the reply's REASON line (or the offline rule's)
    parsed: bool  # False: the reply named no decision and CONTINUE was assumed
    new_facts: tuple[str, ...]  # the hop's followed and opened facts
    refused: Literal["", "backtracking off", "backtracks spent"] = ""
    max_backtracks: int = 0


@dataclass(frozen=True)
class PathContext:
    """Line 9: the path's facts in walk order, kept while they fit the token budget (a fact that
    does not fit is dropped and later ones may still fit)."""

    LINE: ClassVar[str] = "CoE line 9"
    stop_reason: str
    hops: int
    backtracks: int
    facts: tuple[str, ...]  # the kept facts (triple ids and rel: ids)
    ends: Mapping[str, tuple[str, str, str]]  # each kept fact's subject id, object id, relation
    with_node: tuple[str, ...]  # the kept facts that are Triple nodes
    score: Mapping[str, float]  # similarity (seed: cosine) of the kept facts that have one
    dropped: tuple[str, ...]  # context items over the budget
    tokens: int
    budget: int
    path: tuple[str, ...]  # seeds, then per hop each followed fact and the node it reached
    curated: tuple[str, ...]  # the kept facts from an imported curated KG
