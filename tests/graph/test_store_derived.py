"""GraphStore.derived: a read-only view computed once per database state, shared by every store of
the process on that database, and made again after any write."""
from __future__ import annotations

from pathlib import Path

from kgviz.graph.store import GraphStore


def test_derived_is_computed_once_per_state_and_shared(tmp_path: Path) -> None:
    loads: list[int] = []

    def count_docs(s: GraphStore) -> int:
        loads.append(1)
        return len(s.query("MATCH (d:Document) RETURN d.id"))

    a = GraphStore.open(tmp_path / "ws", embedder_id="test-16", dim=16)
    b = GraphStore.open(tmp_path / "ws")  # a second store (another session) on the same database
    try:
        assert a.derived("docs", count_docs) == 0
        assert b.derived("docs", count_docs) == 0
        assert len(loads) == 1
        a.bulk_load_nodes("Document", [{"id": "d1", "title": "t", "text": "x"}])
        assert b.derived("docs", count_docs) == 1  # the write made it stale
        assert len(loads) == 2
        assert a.derived("other", lambda s: "x") == "x"  # keys are separate
    finally:
        b.close()
        a.close()
    c = GraphStore.open(tmp_path / "ws")  # the handle closed with its last store: nothing kept
    try:
        assert c.derived("docs", count_docs) == 1 and len(loads) == 3
    finally:
        c.close()
