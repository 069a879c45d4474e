"""The one batching policy for id lists sent to Kùzu (kuzu 0.11.3).

Two forms select rows by a list of ids:

* ``MATCH ... WHERE x.id IN $ids`` compares every scanned row with every listed id: cheap for a
  few ids, quadratic-ish for many (kg-rag measured 3 ms for 10 ids, 21 ms for 300 on a 5.6k-triple
  graph; the store measured 57 s for 5k ids against 1M rows).
* ``UNWIND $ids AS k MATCH ... WHERE x.id = k`` hash-joins the list against one scan of the
  table: a flat ~5 ms on the same graph whatever the number of ids (0.17 s for 50k ids against
  1M rows).

The crossover is a number of ids, whatever the table size, so the rule is: **IN up to
``IN_LIST_MAX`` ids, UNWIND beyond, and never more than ``ID_BATCH`` ids in one statement**;
a read that returns a vector column moves the crossover to ``VECTOR_IN_LIST_MAX`` ids, because
the UNWIND join reads the whole ``emb`` column (a flat ~40-80 ms on 6k x 384-d rows) while IN
reads only the matched rows' vectors.

Measured here (``python benchmarks/id_batching.py --rows 6000 --repeat 15``: 6k triples, 384-d,
1.5k entities, kuzu 0.11.3, 2 busy cores; median ms, IN / UNWIND / one PK lookup per id):

==================  ============  ===========  ============  ==========  =========  ==========
ids                 1             5            24            48          300        1000
==================  ============  ===========  ============  ==========  =========  ==========
lookup (id, text)   1 / 1 / 0.4   3 / 4 / 5    7 / 2 / 41    4 / 2 / 26  30 / 10    119 / 17
vectors (id, emb)   5 / 40 / 1    5 / 81 / 16  12 / 41 / 35  14 / 52     44 / 81    170 / 132
neighbourhood       5 / 16        6 / 16       9 / 8         9 / 25      30 / 35    88 / 69
==================  ============  ===========  ============  ==========  =========  ==========

(The machine was shared, so single cells are noisy; the first run put the lookup crossover
between 24 and 48 too, and UNWIND's vector reads at 57-84 ms for any list up to 100.)
A lookup by primary key (``MATCH (n:T {id: $id})``) reads one row through the key index
(~0.4 ms a statement), so a read *by primary key* of at most ``PK_LOOKUP_MAX`` ids runs one such
lookup per id instead.
``benchmarks/id_batching.py`` re-measures the crossover on a graph of your choice.
"""
from __future__ import annotations

from typing import Iterator, Sequence, TypeVar

T = TypeVar("T")

IN_LIST_MAX = 24
VECTOR_IN_LIST_MAX = 300
ID_BATCH = 50_000
# rows per bulk load (COPY) of a build's write and keyword stages (issue 29): a batch's rows, their
# stacked vectors and Arrow copy are held at a time, never a whole table's; BuildParams.write_batch_rows.
# Kùzu 0.11.3 stores a node table in node groups of 2^17 rows and every COPY starts a new group, so
# a batch is one whole group: 50,000-row COPYs left groups 38 % full (150k 768-d rows: 1,122 MB on
# disk, 27 s; in 131,072-row COPYs 526 MB, 17-21 s; /tmp probe, load 6 on 2 cores)
NODE_GROUP_ROWS = 1 << 17
WRITE_BATCH_ROWS = NODE_GROUP_ROWS
PK_LOOKUP_MAX = 5


def use_unwind(n_ids: int, *, vectors: bool = False) -> bool:
    """True when a list of ``n_ids`` ids goes through UNWIND rather than IN (``vectors``: the
    statement returns a vector column)."""
    return n_ids > (VECTOR_IN_LIST_MAX if vectors else IN_LIST_MAX)


def batches(items: Sequence[T], size: int | None = None) -> Iterator[list[T]]:
    """``items`` in consecutive lists of at most ``size`` (default ``ID_BATCH``; none for an
    empty sequence)."""
    items = list(items)
    size = size or ID_BATCH
    for start in range(0, len(items), size):
        yield items[start : start + size]


def id_list_statements(match: str, key: str, rest: str, ids: Sequence[str], *,
                       vectors: bool = False) -> Iterator[tuple[str, list[str]]]:
    """(statement, ids of it) for ``MATCH match WHERE key <is one of ids> rest``, following the
    rule above. ``rest`` continues the WHERE clause (``AND ...``, ``RETURN ...``, ``DELETE x``);
    ``match``, ``key`` and ``rest`` are fixed text of kgviz/graph, never caller data, and the ids
    are always bound as ``$ids``."""
    for batch in batches(ids):
        if use_unwind(len(batch), vectors=vectors):
            yield f"UNWIND $ids AS k MATCH {match} WHERE {key} = k {rest}", batch
        else:
            yield f"MATCH {match} WHERE {key} IN $ids {rest}", batch
