"""The one id-list batching policy (kgviz.graph.batching) and the reads/writes built on it."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from kgviz.graph import batching, reads, writes
from kgviz.graph.store import GraphStore

DIM = 4


def test_short_lists_use_in_long_ones_unwind_in_bounded_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [f"x{i}" for i in range(batching.IN_LIST_MAX)]
    (stmt, batch), = batching.id_list_statements("(n:Entity)", "n.id", "RETURN n.id", ids)
    assert stmt == "MATCH (n:Entity) WHERE n.id IN $ids RETURN n.id" and batch == ids
    (stmt, _), = batching.id_list_statements("(n:Entity)", "n.id", "RETURN n.id", ids + ["one more"])
    assert stmt == "UNWIND $ids AS k MATCH (n:Entity) WHERE n.id = k RETURN n.id"
    monkeypatch.setattr(batching, "ID_BATCH", 10)
    got = list(batching.id_list_statements("(n:Entity)", "n.id", "RETURN n.id", [str(i) for i in range(45)]))
    assert [len(b) for _, b in got] == [10, 10, 10, 10, 5]
    assert [s.startswith("MATCH") for s, _ in got] == [True] * 5  # each batch is short
    assert list(batching.id_list_statements("(n:Entity)", "n.id", "RETURN n.id", [])) == []


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[GraphStore]:
    with GraphStore.open(tmp_path / "ws", embedder_id=f"hashing-{DIM}", dim=DIM) as s:
        s.bulk_load_nodes("Document", [{"id": f"d{i}", "title": f"Doc {i}"} for i in range(3)])
        s.bulk_load_nodes("Chunk", [{"id": f"d{i}#c{j}", "doc_id": f"d{i}", "ord": j, "text": f"text {i}.{j}"}
                                    for i in range(3) for j in range(20)])
        s.bulk_load_rels("HAS_CHUNK", [{"from": f"d{i}", "to": f"d{i}#c{j}"} for i in range(3) for j in range(20)],
                         from_table="Document", to_table="Chunk")
        s.bulk_load_nodes("Extraction", [{"chunk_id": f"d{i}#c{j}", "mode": "offline", "status": "ok", "raw": ""}
                                         for i in range(3) for j in range(20)])
        yield s


def _both_forms(monkeypatch: pytest.MonkeyPatch, read: Any) -> tuple[Any, Any]:
    monkeypatch.setattr(batching, "IN_LIST_MAX", 10**6)
    with_in = read()
    monkeypatch.setattr(batching, "IN_LIST_MAX", 0)
    return with_in, read()


def test_reads_give_the_same_rows_with_in_and_unwind(store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [f"d{i}#c{j}" for i in range(3) for j in range(0, 20, 3)] + ["missing"]
    with_in, with_unwind = _both_forms(monkeypatch, lambda: sorted(reads.chunks(store, ids), key=lambda r: r["id"]))
    assert with_in == with_unwind and len(with_in) == len(ids) - 1
    assert with_in[0] == {"id": "d0#c0", "text": "text 0.0", "ord": 0, "title": "Doc 0"}
    titles = _both_forms(monkeypatch, lambda: reads.document_titles(store, ["d2", "d0", "nope"]))
    assert titles[0] == titles[1] == {"d0": "Doc 0", "d2": "Doc 2"}
    arrow = _both_forms(monkeypatch, lambda: reads.similar_documents(store, ["d0"], vectors=True))
    assert arrow[0].column_names == arrow[1].column_names == ["src", "dst", "weight", "src_emb", "emb"]
    assert reads.document_entities(store, []).num_rows == 0  # no ids: still the columns
    assert "emb" in reads.document_entities(store, []).column_names


def test_writes_delete_exactly_the_listed_rows(store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batching, "IN_LIST_MAX", 5)  # 30 ids: UNWIND; 2 ids: IN
    gone = [f"d1#c{j}" for j in range(20)] + [f"d2#c{j}" for j in range(10)]
    writes.delete_extractions(store, gone)
    left = set(writes.extractions(store, [f"d{i}#c{j}" for i in range(3) for j in range(20)]))
    assert left == {f"d0#c{j}" for j in range(20)} | {f"d2#c{j}" for j in range(10, 20)}
    writes.delete_documents(store, ["d0", "d2"])
    assert reads.all_document_ids(store) == ["d1"]
    assert reads.all_chunk_ids(store) == sorted(f"d1#c{j}" for j in range(20))


def test_vector_reads_keep_in_longer() -> None:
    n = batching.IN_LIST_MAX + 1
    assert batching.use_unwind(n) and not batching.use_unwind(n, vectors=True)
    assert batching.use_unwind(batching.VECTOR_IN_LIST_MAX + 1, vectors=True)


def test_store_embeddings_agree_across_forms(store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.bulk_load_nodes("Entity", [{"id": f"e{i}", "origin": "corpus", "emb": [float(i), 1.0, 0.0, 0.0]}
                                     for i in range(40)] + [{"id": "bare", "origin": "corpus"}])
    ids = [f"e{i}" for i in range(0, 40, 2)] + ["bare", "missing"]
    got = []
    for pk_max, vector_in_max in ((100, 300), (0, 300), (0, 0)):  # PK lookups / IN / UNWIND
        monkeypatch.setattr("kgviz.graph.store.PK_LOOKUP_MAX", pk_max)
        monkeypatch.setattr(batching, "VECTOR_IN_LIST_MAX", vector_in_max)
        got.append({k: v.tolist() for k, v in store.get_embeddings("Entity", ids).items()})
    assert got[0] == got[1] == got[2]
    assert sorted(got[0]) == sorted(ids[:-2]) and got[0]["e4"] == [4.0, 1.0, 0.0, 0.0]
