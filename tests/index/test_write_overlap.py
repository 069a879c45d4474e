"""The write stage makes a node batch's columns while the batch before it is copied (issue 29:
making the batches was a third of the write stage, serially with Kùzu's COPYs), one batch ahead
at most; the rows loaded are one serial load's, in order, and an error making a batch is raised
as it is, after the batches before it are loaded."""
from __future__ import annotations

import dataclasses
import threading
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.index.test_build_batches import SMALL, stored_graph
from tests.index.test_index_pipeline import EMB, open_store  # noqa: F401  (the stores fixture, its embedder)
from tests.support.index_fakes import corpus
from kgviz.errors import BuildError, GraphStoreError
from kgviz.index import graph_write as gw
from kgviz.index.assemble import TripleRow
from kgviz.index.pipeline import build
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner

WAIT_S = 5.0  # how long a COPY waits to see the next batch being made (the code before never made it)


class _Store:
    """Just what ``load_nodes`` calls: an empty table and a COPY that runs ``on_copy`` first."""

    def __init__(self, on_copy: Any = None) -> None:
        self.loaded: list[list[str]] = []
        self.on_copy = on_copy

    def holds_rows(self, table: str) -> bool:
        return False

    def bulk_load_nodes(self, table: str, rows: pa.Table, *, new_rows: bool = False) -> int:
        if self.on_copy is not None:
            self.on_copy(len(self.loaded))
        self.loaded.append(rows.column("id").to_pylist())
        return rows.num_rows


def _columns(made: list[int], started: list[threading.Event] | None = None, fail_at: int | None = None) -> Any:
    def columns_of(start: int, stop: int) -> pa.Table:
        i = start // 3
        if started is not None:
            started[i].set()
        if i == fail_at:
            raise BuildError(f"bad row in batch {i}")
        made.append(i)
        return pa.table({"id": [f"n{j}" for j in range(start, stop)]})
    return columns_of


def test_the_next_batch_is_made_while_a_batch_is_copied() -> None:
    started = [threading.Event() for _ in range(4)]
    seen: list[bool] = []
    store = _Store(on_copy=lambda i: seen.append(i + 1 >= len(started) or started[i + 1].wait(WAIT_S)))
    made: list[int] = []
    assert gw.load_nodes(store, "Entity", 11, _columns(made, started), 3) == 11  # type: ignore[arg-type]
    assert seen == [True] * 4
    assert store.loaded == [[f"n{j}" for j in range(s, min(s + 3, 11))] for s in range(0, 11, 3)]


def test_at_most_one_batch_is_made_ahead() -> None:
    done = [0]
    ahead: list[int] = []

    def columns_of(start: int, stop: int) -> pa.Table:
        ahead.append(start // 3 - done[0])  # batches made or being made and not yet loaded, this one included
        return pa.table({"id": [f"n{j}" for j in range(start, stop)]})

    def on_copy(i: int) -> None:
        threading.Event().wait(0.05)  # a slow COPY: the maker would run ahead if it could
        done[0] = i + 1

    gw.load_nodes(_Store(on_copy), "Entity", 30, columns_of, 3)  # type: ignore[arg-type]
    assert len(ahead) == 10 and max(ahead) <= 1


def test_an_error_making_a_batch_is_raised_after_the_batches_before_it_are_loaded() -> None:
    store = _Store()
    made: list[int] = []
    with pytest.raises(BuildError, match="bad row in batch 2"):
        gw.load_nodes(store, "Entity", 15, _columns(made, fail_at=2), 3)  # type: ignore[arg-type]
    assert store.loaded == [["n0", "n1", "n2"], ["n3", "n4", "n5"]] and made == [0, 1]


def test_a_failed_copy_stops_the_load_and_loads_no_later_batch() -> None:
    def on_copy(i: int) -> None:
        if i == 1:
            raise GraphStoreError("Kùzu rejected a statement")

    store = _Store(on_copy)
    made: list[int] = []
    with pytest.raises(GraphStoreError, match="rejected"):
        gw.load_nodes(store, "Entity", 15, _columns(made), 3)  # type: ignore[arg-type]
    assert store.loaded == [["n0", "n1", "n2"]] and max(made) <= 2


def test_vectors_are_read_as_their_batch_is_loaded_and_stay_uncopied() -> None:
    matrix = np.arange(11 * 4, dtype=np.float32).reshape(11, 4)
    reads: list[tuple[int, int]] = []
    tables: list[pa.Table] = []

    class Keeping(_Store):
        def bulk_load_nodes(self, table: str, rows: pa.Table, *, new_rows: bool = False) -> int:
            tables.append(rows)
            return super().bulk_load_nodes(table, rows, new_rows=new_rows)

    def vectors_of(start: int, stop: int) -> np.ndarray:
        reads.append((start, stop))
        return matrix[start:stop]

    gw.load_nodes(Keeping(), "Entity", 11, _columns([]), 3, vectors_of)  # type: ignore[arg-type]
    assert reads == [(0, 3), (3, 6), (6, 9), (9, 11)]
    for (start, stop), table in zip(reads, tables):
        column = table.column("emb").chunk(0).values.to_numpy(zero_copy_only=True)
        assert np.shares_memory(column, matrix) and column.tobytes() == matrix[start:stop].tobytes()


def test_the_next_tables_first_batch_is_made_while_a_tables_last_batch_is_copied() -> None:
    """Across tables too: while the Entity table's last batch is copied, the Triple table's first
    batch is made; Entity's ``loaded`` runs after its last COPY and before Triple's first."""
    events: list[str] = []
    triple_started = threading.Event()

    class Tables(_Store):
        def bulk_load_nodes(self, table: str, rows: pa.Table, *, new_rows: bool = False) -> int:
            if table == "Entity" and rows.column("id")[0].as_py() == "e3":  # Entity's last batch
                events.append(f"overlap {triple_started.wait(WAIT_S)}")
            events.append(f"copy {table} {rows.num_rows}")
            return rows.num_rows

    def columns(prefix: str, started: threading.Event | None = None) -> Any:
        def columns_of(start: int, stop: int) -> pa.Table:
            if started is not None:
                started.set()
            return pa.table({"id": [f"{prefix}{j}" for j in range(start, stop)]})
        return columns_of

    got = gw.load_node_tables(Tables(), [  # type: ignore[arg-type]
        gw.NodeRows("Entity", 5, columns("e"), loaded=lambda: events.append("entities released")),
        gw.NodeRows("Chunk", 0, columns("c"), loaded=lambda: events.append("no chunks")),
        gw.NodeRows("Triple", 4, columns("t", triple_started))], 3)
    assert got == {"Entity": 5, "Chunk": 0, "Triple": 4}
    assert events == ["copy Entity 3", "overlap True", "copy Entity 2", "entities released", "no chunks",
                      "copy Triple 3", "copy Triple 1"]


def test_a_build_makes_the_next_triple_batch_while_one_is_copied_and_loads_one_serial_loads_rows(
        open_store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the pipeline: while the first Triple batch is copied, the next batch's rows are
    being made; every table's rows are loaded in the order of one load of them all (the same ids
    in the same order as a build loading each table in one COPY) and the stored graph is that one's."""
    loads: dict[str, dict[str, list[str]]] = {"one": {}, "batched": {}}

    def recording(store: Any, name: str, on_copy: Any = None) -> None:
        real = store.bulk_load_nodes

        def nodes(table: str, rows: Any, **kw: Any) -> int:
            if on_copy is not None and table == "Triple":
                on_copy()
            if isinstance(rows, pa.Table):  # the write stage's batches (other stages load row lists)
                loads[name].setdefault(table, []).extend(rows.column("id").to_pylist())
            return real(table, rows, **kw)
        monkeypatch.setattr(store, "bulk_load_nodes", nodes)

    one = open_store("one")
    recording(one, "one")
    build(corpus(), one, Reasoner(OfflineLLM(), EMB), SMALL)

    to_row = TripleRow.to_row
    calls = [0]
    next_batch = threading.Event()

    def counted(self: TripleRow) -> dict[str, object]:
        calls[0] += 1
        if calls[0] > 3:  # a row of the second batch
            next_batch.set()
        return to_row(self)

    overlapped: list[bool] = []

    def on_copy() -> None:
        if not overlapped:  # the first Triple batch
            overlapped.append(next_batch.wait(WAIT_S))

    store = open_store("batched")
    recording(store, "batched", on_copy)
    monkeypatch.setattr(TripleRow, "to_row", counted)
    build(corpus(), store, Reasoner(OfflineLLM(), EMB), dataclasses.replace(SMALL, write_batch_rows=3))
    assert overlapped == [True]
    assert loads["batched"] == loads["one"] and len(loads["one"]["Triple"]) > 6
    assert stored_graph(store) == stored_graph(one)


def test_a_build_whose_triple_batch_fails_to_be_made_raises_that_error_with_the_batches_before_loaded(
        open_store, monkeypatch: pytest.MonkeyPatch) -> None:
    to_row = TripleRow.to_row
    calls = [0]

    def failing(self: TripleRow) -> dict[str, object]:
        calls[0] += 1
        if calls[0] == 7:  # the first row of the third batch
            raise BuildError("a fact row could not be made")
        return to_row(self)

    store = open_store("ws")
    monkeypatch.setattr(TripleRow, "to_row", failing)
    with pytest.raises(BuildError, match="a fact row could not be made"):
        build(corpus(), store, Reasoner(OfflineLLM(), EMB), dataclasses.replace(SMALL, write_batch_rows=3))
    assert store.counts()["Triple"] == 6
