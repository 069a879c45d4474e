"""One colour per method, the same in every chart and graph (Evaluate's bars and scatters, the
Compare overlay and its facets), whatever subset of methods a page shows.

A method's colour comes from its place in the registry (kgviz.methods.registry.list_methods), not
from its place in the current selection, so kg-rag is the same blue on every page. Colour-blind-
safe Okabe-Ito hues first, then darker companions for the KET-RAG variants and baselines (ours).
"""
from __future__ import annotations

import hashlib
from typing import Iterable

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#8C564B", "#7F7F7F",
           "#B8860B", "#17BECF", "#4B0082", "#2F4F4F")


def _registered() -> list[str]:
    from kgviz.methods.registry import list_methods

    return list(list_methods())


def method_colour(method: str) -> str:
    """The method's colour; a method the registry does not know gets a stable colour from its name."""
    names = _registered()
    if method in names:
        return PALETTE[names.index(method) % len(PALETTE)]
    return PALETTE[int(hashlib.sha256(method.encode()).hexdigest(), 16) % len(PALETTE)]


def method_colours(methods: Iterable[str]) -> dict[str, str]:
    """Colours for several methods: registered ones keep their own; names the registry does not
    know take the palette's unused colours in order, so one chart never repeats a colour."""
    names = list(dict.fromkeys(methods))
    known = set(_registered())
    out = {m: method_colour(m) for m in names if m in known}
    free = [c for c in PALETTE if c not in out.values()]
    for i, m in enumerate(m for m in names if m not in known):
        out[m] = free[i % len(free)] if free else method_colour(m)
    return {m: out[m] for m in names}
