"""The one batching policy for id lists sent to Kùzu (kuzu 0.11.3).

Two forms select rows by a list of ids:

* ``MATCH ... WHERE x.id IN $ids`` compares every scanned row with every listed id: cheap for a
  few ids, quadratic-ish for many (kg-rag measured 3 ms for 10 ids, 21 ms for 300 on a 5.6k-triple
  graph; the store measured 57 s for 5k ids against 1M rows).
* ``UNWIND $ids AS k MATCH ... WHERE x.id = k`` hash-joins the list against one scan of the
  table: a flat ~5 ms on the same graph whatever the number of ids (0.17 s for 50k ids against
  1M rows).

The crossover is a number of ids, whatever the table size, so the rule is: **IN up to
``IN_LIST_MAX`` ids, UNWIND beyond, and never more than ``ID_BATCH`` ids in one statement**.
A lookup by primary key (``MATCH (n:T {id: $id})``) reads one row through the key index
(~0.4 ms a statement), so a read *by primary key* of at most ``PK_LOOKUP_MAX`` ids runs one such
lookup per id instead.
``benchmarks/id_batching.py`` re-measures the crossover on a graph of your choice.
"""
from __future__ import annotations

from typing import Iterator, Sequence, TypeVar

T = TypeVar("T")

IN_LIST_MAX = 24
ID_BATCH = 50_000
PK_LOOKUP_MAX = 5


def use_unwind(n_ids: int) -> bool:
    """True when a list of ``n_ids`` ids goes through UNWIND rather than IN."""
    return n_ids > IN_LIST_MAX


def batches(items: Sequence[T], size: int | None = None) -> Iterator[list[T]]:
    """``items`` in consecutive lists of at most ``size`` (default ``ID_BATCH``; none for an
    empty sequence)."""
    items = list(items)
    size = size or ID_BATCH
    for start in range(0, len(items), size):
        yield items[start : start + size]


def id_list_statements(match: str, key: str, rest: str, ids: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """(statement, ids of it) for ``MATCH match WHERE key <is one of ids> rest``, following the
    rule above. ``rest`` continues the WHERE clause (``AND ...``, ``RETURN ...``, ``DELETE x``);
    ``match``, ``key`` and ``rest`` are fixed text of kgviz/graph, never caller data, and the ids
    are always bound as ``$ids``."""
    for batch in batches(ids):
        if use_unwind(len(batch)):
            yield f"UNWIND $ids AS k MATCH {match} WHERE {key} = k {rest}", batch
        else:
            yield f"MATCH {match} WHERE {key} IN $ids {rest}", batch
