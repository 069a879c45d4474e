"""Equal-budget evaluation: one context budget B for every method, and the passage baselines.

Each method names the Params field that caps its context (``budget_param`` on the method class:
text-rag's ``budget_tokens``, KET's λ ``context_limit``, kg-rag's ``max_context_tokens``, kg-infused's
``budget_tokens``, whose default 0 is the paper's stop at the note).
With ``--budget-tokens B`` each run asks for B as its equal budget (kgviz.run.resolve_run sets that
field to B and the shared answer step's budget to B), so every method is read at the same context
size. A method whose ``budget_param`` is None stops on its own (kg-retriever's T items): it may use
less than B, and the answer step's budget B caps it if it ever retrieves more. The report shows each method's median context
tokens so "used less" is visible.

The BM25-only and dense-only baselines (``bm25``, ``dense``; kgviz.methods.text_rag) join every
equal-budget run unless turned off, so each coverage figure sits next to both at the same B.
"""
from __future__ import annotations

from typing import Sequence

from kgviz.methods.registry import get_method

BASELINES = ("bm25", "dense")


def budget_param(method: str) -> str | None:
    """The Params field that caps ``method``'s context, or None when the method stops on its own."""
    return getattr(get_method(method), "budget_param", None)


def with_baselines(methods: Sequence[str], budget_tokens: int | None, baselines: bool = True) -> list[str]:
    """``methods`` plus the passage baselines not already listed, when a budget is set."""
    out = list(methods)
    if budget_tokens is not None and baselines:
        out += [b for b in BASELINES if b not in out]
    return out
