"""The deciding number of a step, in one shape for every method (issue 22).

A step that chooses shows, per node, the score that decided its fate (``NodeRef.score`` and
``TraceStep.scores``, the same number), its terms where it is a formula (``score_parts``), its
place in the order the choice was made (``rank``) and, for a node that was not taken although it
shows a higher score than a taken one, why (``reason``). The helpers here set those fields from
what a method already knows, so each method states its rule once and the trace says it the same
way everywhere. ``data["score_name"]`` names what the score is; a chooser's step (an LLM or the
offline heuristic standing in for it) records ``data["picked"]``: which places of the ranking it
was given it took ("the chooser picked #3 of 5") and, for a model, its own words.
"""
from __future__ import annotations

from typing import Hashable, Iterable, Mapping, Sequence, TypeVar

from kgviz.methods.base import NodeRef

T = TypeVar("T", bound=Hashable)
TAKEN_ROLES = ("chosen", "seed")  # what a step took
NOT_TAKEN_ROLES = ("rejected", "candidate")
WORDS_LIMIT = 300  # characters of a model's reply quoted on the step (the raw output keeps it whole)


def set_ranks(nodes: Iterable[NodeRef], order: Sequence[str]) -> None:
    """``rank`` = 1-based place in ``order`` for every node listed there (others keep theirs)."""
    place = {nid: i for i, nid in enumerate(dict.fromkeys(order), 1)}
    for n in nodes:
        if n.id in place:
            n.rank = place[n.id]


def set_reasons(nodes: Iterable[NodeRef], reasons: Mapping[str, str], roles: Sequence[str] = NOT_TAKEN_ROLES) -> None:
    """``reason`` from ``reasons`` on the nodes in ``roles`` (by default the ones not taken)."""
    for n in nodes:
        why = reasons.get(n.id)
        if why and n.role in roles:
            n.reason = why


def outranked(nodes: Sequence[NodeRef]) -> list[NodeRef]:
    """Nodes not taken whose score is above the lowest taken one's: the nodes a reader would
    think the step got wrong unless they say why."""
    taken = [n.score for n in nodes if n.role in TAKEN_ROLES and n.score is not None]
    if not taken:
        return []
    low = min(taken)
    return [n for n in nodes if n.role in NOT_TAKEN_ROLES and n.score is not None and n.score > low + 1e-9]


def budget_reasons(sized: Sequence[tuple[T, int]], budget: int, kept: Iterable[T], *,
                   stop_at_first: bool = False) -> dict[T, str]:
    """Why each item of ``sized`` (rank order, as the policy saw it) that is not in ``kept`` was
    left out, replaying the fill: its size against the room left when it was reached, or, under
    stop-at-first-overflow, that an earlier item already overflowed."""
    keep = set(kept)
    used, stopped = 0, False
    out: dict[T, str] = {}
    for item, n in sized:
        if item in keep and not stopped:
            used += n
            continue
        if stopped:
            out[item] = f"after the first overflow: the fill stops there (stop-at-first-overflow, {n} tokens)"
        else:
            out[item] = f"over budget: {n} tokens, {max(0, budget - used)} of {budget} left"
            stopped = stop_at_first
    return out


def chooser_pick(ranked_ids: Sequence[str], chosen: Sequence[str], *, by: str, ranking: str,
                 words: str = "") -> dict[str, object]:
    """``data["picked"]``: the places (1-based) of ``chosen`` in ``ranked_ids``, the ranking the
    chooser was given (``ranking`` names it: "numbered by similarity"), of how many, who chose
    (``by``: "model" or "offline heuristic") and the model's own words."""
    place = {nid: i for i, nid in enumerate(ranked_ids, 1)}
    out: dict[str, object] = {"ranks": [place[c] for c in chosen if c in place], "of": len(ranked_ids), "by": by,
                              "ranking": ranking}
    if words.strip():
        text = " ".join(words.split())
        out["words"] = text if len(text) <= WORDS_LIMIT else text[:WORDS_LIMIT] + "…"
    return out


def pick_line(picked: Mapping[str, object]) -> str:
    """"the chooser picked #3 of 5 (numbered by similarity)" — "#1 of 5" when it took the first."""
    given = picked.get("ranks") or []
    ranks = [int(r) for r in given] if isinstance(given, (list, tuple)) else []
    if not ranks:
        return f"the chooser took none of the {picked.get('of')} candidates"
    places = ", ".join(f"#{r}" for r in ranks)
    return f"the chooser picked {places} of {picked.get('of')} ({picked.get('ranking')})"
