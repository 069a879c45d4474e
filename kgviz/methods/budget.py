"""The token-budget policies, named, in one place.

Every method that fills a context up to a token limit, and the shared answer step, uses one of
these three rules; which one is part of the method's behaviour (and of its trace), so each call
site names its policy instead of writing its own loop.

* ``stop_at_first_overflow``: the longest prefix of the ranking that fits; the first item that
  overflows and everything after it are rejected (KET-RAG's channels: a ranking is consumed in
  order, as in the authors' context builder).
* ``skip_and_continue``: walk the ranking, skip an item that does not fit and keep trying later,
  smaller ones (text-rag's greedy fill, KG-RAG's path facts).
* ``cut_at_first_overflow``: like stop-at-first-overflow, but the overflowing item is cut down to
  the room left when that room is worth having (the shared answer step).

Inputs are ``(item, tokens)`` pairs in rank order; outputs keep that order. Budgets are inclusive:
an item that brings the total to exactly the limit fits.
"""
from __future__ import annotations

from typing import Callable, Generic, NamedTuple, Sequence, TypeVar

T = TypeVar("T")


class Fit(NamedTuple, Generic[T]):
    """What a policy kept and rejected, and the tokens the kept items use. A NamedTuple so call
    sites can unpack ``kept, over, used = policy(...)``."""

    kept: list[T]
    over: list[T]
    used: int


def stop_at_first_overflow(sized: Sequence[tuple[T, int]], budget: int) -> Fit[T]:
    used = 0
    for pos, (_, n) in enumerate(sized):
        if used + n > budget:
            return Fit([i for i, _ in sized[:pos]], [i for i, _ in sized[pos:]], used)
        used += n
    return Fit([i for i, _ in sized], [], used)


def skip_and_continue(sized: Sequence[tuple[T, int]], budget: int) -> Fit[T]:
    meter = SkipAndContinue(budget)
    kept: list[T] = []
    over: list[T] = []
    for item, n in sized:
        (kept if meter.take(n) else over).append(item)
    return Fit(kept, over, meter.used)


class SkipAndContinue:
    """The skip-and-continue rule one item at a time, for callers that decide what the next item
    is from what was kept so far (KG-RAG skips a provenance sentence already in the context)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0

    def take(self, tokens: int) -> bool:
        """Count ``tokens`` and return True when they fit; else leave the total and return False."""
        if self.used + tokens > self.budget:
            return False
        self.used += tokens
        return True


class CutFit(NamedTuple, Generic[T]):
    kept: list[T]  # the last one may be a cut-down copy of its item
    over: list[T]  # dropped whole
    used: int
    cut: list[T]  # the original of the item that was cut down (zero or one)


def cut_at_first_overflow(sized: Sequence[tuple[T, int]], budget: int, min_cut: int,
                          shorten: Callable[[T, int], tuple[T, int]]) -> CutFit[T]:
    """``shorten(item, room)`` returns the item cut to at most ``room`` tokens and its new size;
    it is called only when ``room >= min_cut`` (a shorter fragment is noise, so it is dropped)."""
    fit = stop_at_first_overflow(sized, budget)
    if not fit.over:
        return CutFit(fit.kept, [], fit.used, [])
    first, rest = fit.over[0], fit.over[1:]
    room = budget - fit.used
    if room < min_cut:
        return CutFit(fit.kept, fit.over, fit.used, [])
    short, n = shorten(first, room)
    return CutFit([*fit.kept, short], rest, fit.used + n, [first])
