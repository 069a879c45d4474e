"""Typed values of the kg-rag and kg-infused reasoning tasks.

A task's parser (``kgviz.tasks``) and its offline heuristic (``kgviz.offline``) return the same
type, and the method that ran the task (``kgviz.methods``) reads named fields instead of string
keys. The module imports nothing from kgviz, so both layers can use it without one importing the
other. ``to_dict`` gives the plain-data form a trace stores (key order is part of the saved
golden traces, so it follows the field order).

Sequences are tuples and the dataclasses frozen: a parsed reply is a record of what the model
said, and the method passes the same plan to later tasks, so nothing may edit it in place.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

Decision = Literal["stop", "continue", "backtrack"]


@dataclass(frozen=True)
class KgRagPlan:
    """Task ``kgrag_plan``: what Chain of Explorations sets out to walk (ours; the paper only
    names the step)."""

    entities: tuple[str, ...]
    """start entities named by the model (or the question's capitalised spans offline)"""
    relations: tuple[str, ...]
    """relation words to follow, in the order given"""
    hops: int
    """expected number of hops, clamped to 1..max_hops"""
    notes: tuple[str, ...] = ()
    """one line per plan part the reply lacked and the offline plan filled in"""

    def to_dict(self) -> dict[str, Any]:
        return {"entities": list(self.entities), "relations": list(self.relations), "hops": self.hops,
                "notes": list(self.notes)}


@dataclass(frozen=True)
class KgRagChoice:
    """Task ``kgrag_choose``: which shown candidates the walk follows."""

    chosen: tuple[str, ...]
    """ids of shown candidates, in the order the reply named them, at most ``width``"""
    ignored: tuple[str, ...] = ()
    """picks that were not shown candidates (or over the width), as written"""
    said_none: bool = False
    """the reply chose nothing and said NONE"""
    from_choice_line: bool = False
    """the reply had a CHOICE: line (only that line was read)"""
    offline_scores: Mapping[str, float] = field(default_factory=dict, hash=False)
    """offline only: the heuristic's score of every candidate, best first"""
    offline_parts: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)
    """offline only: the terms of each candidate's score (name -> value; they add up to it)"""


@dataclass(frozen=True)
class KgRagDecision:
    """Task ``kgrag_evaluate``: whether the facts so far answer the question."""

    decision: Decision
    reason: str
    """the model's REASON line (or the offline rule's explanation)"""
    parsed: bool = True
    """False when the reply named no single decision and CONTINUE was assumed"""
    overruled: str = ""
    """the decision the reply named when a kgviz rule replaced it ("stop"), else empty"""


@dataclass(frozen=True)
class KgInfusedSelection:
    """Task ``kginf_select_triples`` (KG-Infused RAG §3.4, Tables 12/13): the triples kept."""

    selected: tuple[str, ...]
    """ids of shown candidate triples, in the order the reply named them"""
    ignored: tuple[str, ...] = ()
    """picks that match no shown candidate, as written"""
    said_none: bool = False
    """nothing was selected and the reply (or the offline floor) said none"""
    offline_scores: Mapping[str, float] = field(default_factory=dict, hash=False)
    """offline only: the heuristic's score of every candidate, best first"""
    offline_parts: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)
    """offline only: the terms of each candidate's score (name -> value; they add up to it)"""
