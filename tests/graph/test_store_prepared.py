"""GraphStore keeps reading statements prepared per connection: the same rows and errors as a
statement prepared afresh, whatever the types of the values; a write starts them over."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import kuzu
import pytest

from kgviz.errors import GraphStoreError
from kgviz.graph import store as store_module
from kgviz.graph.store import GraphStore

DIM = 8


@pytest.fixture()
def store(tmp_path: Path):
    s = GraphStore.open(tmp_path / "ws", embedder_id="hashing-8", dim=DIM)
    s.bulk_load_nodes("Chunk", [{"id": f"c{i}", "text": f"text {i}", "ord": i * 1000} for i in range(5)])
    yield s
    s.close()


@pytest.fixture()
def prepares(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements kuzu prepares, in order."""
    made: list[str] = []
    real = kuzu.PreparedStatement

    def counting(conn: kuzu.Connection, query: str, *rest: Any) -> kuzu.PreparedStatement:
        made.append(query)
        return real(conn, query, *rest)

    monkeypatch.setattr(store_module.kuzu, "PreparedStatement", counting)
    return made


BY_IDS = "MATCH (c:Chunk) WHERE c.id IN $ids RETURN c.id AS id, c.ord AS ord ORDER BY c.id"
ABOVE = "MATCH (c:Chunk) WHERE c.ord > $t RETURN count(*) AS n"


def fresh(store: GraphStore, cypher: str, params: dict) -> list[dict]:
    """The rows of ``cypher`` from a connection of its own, prepared by kuzu itself."""
    conn = kuzu.Connection(store._handle.db)
    try:
        result: Any = conn.execute(cypher, params)
        return list(result.rows_as_dict().get_all())
    finally:
        conn.close()


def test_a_reading_statement_is_prepared_once_and_reads_like_a_fresh_one(store: GraphStore,
                                                                         prepares: list[str]) -> None:
    for ids in ([], ["c1"], ["c2", "c3", "nope"], [], ["c4", "c0"]):  # an empty list, then strings
        assert store.query(BY_IDS, {"ids": ids}) == fresh(store, BY_IDS, {"ids": ids})
    for t in (5, 2000, 2.5, 10**12, -1):  # int sizes Kùzu binds differently, and a float for an int
        assert store.query(ABOVE, {"t": t}) == fresh(store, ABOVE, {"t": t})
    assert prepares == [BY_IDS, ABOVE]  # one thread, one connection: each text prepared once
    assert store.query(ABOVE, {"t": 2000}) == [{"n": 2}]  # the numbers themselves, not only equal to kuzu's


def test_a_write_starts_the_prepared_statements_over(store: GraphStore, prepares: list[str]) -> None:
    assert store.query(ABOVE, {"t": 2500}) == [{"n": 2}]
    store.execute("CREATE (:Chunk {id: 'c9', ord: 9000})")
    assert store.query(ABOVE, {"t": 2500}) == [{"n": 3}]  # sees the new row
    assert prepares == [ABOVE, ABOVE]


def test_statements_without_values_or_with_tables_are_not_kept(store: GraphStore, prepares: list[str]) -> None:
    assert store.query("MATCH (c:Chunk) RETURN count(*) AS n") == [{"n": 5}]
    assert prepares == []  # run as text: Kùzu prepares it inside, the GIL released


def test_a_statement_that_does_not_prepare_reports_kuzus_error_each_time(store: GraphStore,
                                                                       prepares: list[str]) -> None:
    bad = "MATCH (c:Chunk) WHERE c.id = $id RETURN c.no_such_column"
    for _ in range(2):
        with pytest.raises(GraphStoreError, match="Cannot find property no_such_column") as info:
            store.query(bad, {"id": "c1"})
        assert "statement: MATCH (c:Chunk)" in (info.value.hint or "")
    assert prepares == [bad, bad]  # not kept: tried again, failing the same way


def test_the_statements_of_a_connection_are_bounded(store: GraphStore, prepares: list[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "PREPARED_PER_CONNECTION", 2)
    texts = [f"MATCH (c:Chunk) WHERE c.ord >= $t RETURN count(*) AS n{i}" for i in range(3)]
    for cypher in texts + texts[:1]:
        assert store.query(cypher, {"t": 0}) == [{cypher.rsplit(" AS ", 1)[1]: 5}]
    assert prepares == texts + texts[:1]  # the third started the connection's statements over
