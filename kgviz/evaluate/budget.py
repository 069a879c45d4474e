"""Equal-budget evaluation: one context budget B for every method, and the passage baselines.

Each method names the Params field that caps its context (``budget_param`` on the method class:
text-rag's ``budget_tokens``, KET's λ ``context_limit``, kg-rag's ``max_context_tokens``, kg-infused's
``budget_tokens``, whose default 0 is the paper's stop at the note).
With ``--budget-tokens B`` that field is set to B and the shared answer step's budget is B, so
every method is read at the same context size. A method whose ``budget_param`` is None stops on
its own (kg-retriever's T items): it may use less than B, and the answer
step's budget B caps it if it ever retrieves more. The report shows each method's median context
tokens so "used less" is visible.

The BM25-only and dense-only baselines (``bm25``, ``dense``; kgviz.methods.text_rag) join every
equal-budget run unless turned off, so each coverage figure sits next to both at the same B.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

from kgviz.errors import ConfigError
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


def equal_budget_overrides(method: str, overrides: Any, budget_tokens: int | None) -> Any:
    """The parameter overrides for ``method`` with its budget field set to ``budget_tokens``.

    ``overrides`` is what the caller gave: None, a dict of fields, or a whole Params instance (its
    budget field is replaced by B). A dict that names the budget field with another value than B
    contradicts the equal budget: ConfigError rather than one method silently measured at another
    size."""
    name = budget_param(method)
    if budget_tokens is None or name is None:
        return overrides
    if overrides is None:
        return {name: budget_tokens}
    if not isinstance(overrides, Mapping):
        return dataclasses.replace(overrides, **{name: budget_tokens})
    if name in overrides and str(overrides[name]) != str(budget_tokens):
        raise ConfigError(f"{method}.{name}={overrides[name]} contradicts the equal context budget {budget_tokens}",
                          hint=f"drop the {name} override, or run without --budget-tokens")
    return {**overrides, name: budget_tokens}
