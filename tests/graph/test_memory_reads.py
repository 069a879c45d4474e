"""kgviz.graph.memory_reads answers KET-RAG's and KG-Infused RAG's reads from memory (issue 29);
each must give the rows of the kgviz.graph.reads statement of the same name, on the graph of
tests/graph/test_triple_graph.py (a hub, cycles, self-loops, parallel RELATED, SUBJ, MENTIONS and
FROM_CHUNK edges, NULL columns, an entity no chunk mentions). Every test runs twice: on tables read
from Kùzu, and on the tables stored in the workspace (kgviz.graph.read_model) mapped by a fresh
load with every read-model statement refused."""
from __future__ import annotations

import shutil
from typing import Any, Iterator

import numpy as np
import pytest

from kgviz.graph import batching, memory_reads, read_model, reads
from kgviz.graph.store import GraphStore
from tests.graph.test_read_model import READ_MODEL_QUERIES
from tests.graph.test_triple_graph import ALL_ENTITIES, ALL_TRIPLES, _bag, store  # noqa: F401,F811  (the graph fixture)

ID_LISTS = {  # a few ids (IN), many (UNWIND), repeats, ids of the wrong table, none
    "few": ["ent:hub", "ent:a", "ent:lonely"], "all": ALL_ENTITIES + ALL_TRIPLES, "repeats": ["ent:hub", "ent:hub", "tri:ab"],
    "none": []}


@pytest.fixture(params=["kuzu", "stored"], autouse=True)
def source(request: pytest.FixtureRequest, store: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """"kuzu": nothing stored, the read model read out of Kùzu; "stored": the tables stored first,
    then loaded afresh (nothing held in memory) from the files, Kùzu refusing their statements."""
    store._handle.derived.clear()
    if request.param == "kuzu":
        shutil.rmtree(store.path / read_model.FOLDER, ignore_errors=True)
    else:
        for query in READ_MODEL_QUERIES:
            read_model.table(store, query)
        assert len(read_model.stored_tables(store)) == len(READ_MODEL_QUERIES)
        store._handle.derived.clear()
        real = GraphStore.query_arrow

        def refuse(self: GraphStore, cypher: str, params: Any = None) -> Any:
            assert cypher not in READ_MODEL_QUERIES, "a read-model statement ran: the stored table was not used"
            return real(self, cypher, params)
        monkeypatch.setattr(GraphStore, "query_arrow", refuse)
    yield request.param


def _canon(name: str, rows: list[dict[str, Any]]) -> list[str]:
    """Rows as a multiset; a collected list compared as a multiset too (collect has no order;
    an entity no chunk mentions has chunks None, as Kùzu's collect over no match gives)."""
    return _bag([{**r, "chunks": sorted(r["chunks"])} if r.get("chunks") else r for r in rows])


@pytest.mark.parametrize("ids", sorted(ID_LISTS))
@pytest.mark.parametrize("name", ["entities", "entities_with_chunks", "triples_at_entities", "triple_chunks",
                                  "triple_sources"])
def test_each_read_equals_its_statement(store: Any, name: str, ids: str, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = ID_LISTS[ids]
    mine = getattr(memory_reads, name)(store, asked)
    monkeypatch.setattr(batching, "IN_LIST_MAX", 10**6)  # IN: one row per distinct id, as memory_reads gives
    want = getattr(reads, name)(store, asked)
    assert _canon(name, mine) == _canon(name, want)
    if ids == "all":
        assert mine and all(list(m) == list(want[0]) for m in mine)  # the statement's columns, in its order
    if ids == "few" and name == "entities_with_chunks":
        got = {r["id"]: sorted(r["chunks"]) if r["chunks"] else r["chunks"] for r in mine}
        assert got["ent:lonely"] is None and got["ent:hub"] == ["doc:t#c0", "doc:t#c0", "doc:t#c2"]
        assert [r["description"] for r in mine if r["id"] == "ent:a"] == [None]
    if ids == "all" and name == "triple_chunks":
        assert sorted(r["cid"] for r in mine if r["tid"] == "tri:ab") == ["doc:t#c1", "doc:t#c2", "doc:t#c2"]


@pytest.mark.parametrize("incoming", [False, True])
@pytest.mark.parametrize("origin", ["corpus", "curated"])
@pytest.mark.parametrize("ids", ["few", "all", "repeats"])
def test_related_edges_equal_the_ordered_statement(store: Any, incoming: bool, origin: str, ids: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    mine = memory_reads.related_edges(store, ID_LISTS[ids], origin, incoming=incoming)
    monkeypatch.setattr(batching, "IN_LIST_MAX", 10**6)
    want = reads.related_edges(store, ID_LISTS[ids], origin, incoming=incoming)
    assert _bag(mine) == _bag(want)
    # the ORDER BY (anchor, triple_id, other end): rows tied on all three may come in either order
    key = ("dst", "triple_id", "src") if incoming else ("src", "triple_id", "dst")
    assert [tuple(r[k] for k in key) for r in mine] == [tuple(r[k] for k in key) for r in want]
    if ids == "all" and origin == "corpus" and not incoming:
        hub = [r["triple_id"] for r in mine if r["src"] == "ent:hub"]
        assert hub[:3] == ["", "tri:h0", "tri:h1"] and hub.count("tri:x") == 2
        assert [r["triple_id"] for r in mine if r["src"] == "ent:loop"] == ["tri:loop", None]  # NULL last


@pytest.mark.parametrize("ids", [["doc:t#c0#s0", "doc:t#c0#s1", "doc:t#c0#s1", "nope"], [], ["doc:t#c0#s2"]])
def test_subchunk_texts_equal_the_statement(store: Any, ids: list[str]) -> None:
    assert memory_reads.subchunk_texts(store, ids) == reads.subchunk_texts(store, ids)
    if len(ids) == 4:
        assert memory_reads.subchunk_texts(store, ids) == {"doc:t#c0#s0": "sub 0", "doc:t#c0#s1": ""}


def _arrow_bag(table: Any) -> list[str]:
    rows = table.to_pylist()
    return sorted(repr(sorted({**r, "emb": None if r["emb"] is None else
                               np.asarray(r["emb"], dtype=np.float32).tobytes().hex()}.items())) for r in rows)


@pytest.mark.parametrize("docs", [["doc:t"], ["doc:u", "doc:t", "doc:u"], ["doc:none"], []])
@pytest.mark.parametrize("name", ["document_entities", "document_triples"])
def test_document_layer_equals_its_statement_vectors_bit_for_bit(store: Any, name: str, docs: list[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(batching, "IN_LIST_MAX", 10**6)
        want = getattr(reads, name)(store, docs)

    def no_statement(*_: Any) -> None:
        raise AssertionError("the statement ran: the vectors were all in the files")
    monkeypatch.setattr(reads, name, no_statement)
    mine = getattr(memory_reads, name)(store, docs)
    assert mine.column_names == want.column_names and mine.schema.field("emb").type == want.schema.field("emb").type
    assert _arrow_bag(mine) == _arrow_bag(want)
    if docs == ["doc:t"]:
        assert mine.num_rows > 5 and len({str(v) for v in mine.column("emb").to_pylist()}) > 3


def test_document_layer_runs_the_statement_when_a_vector_is_not_in_the_files(store: Any,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    want = _arrow_bag(reads.document_entities(store, ["doc:t"]))
    monkeypatch.setattr(type(store), "stored_vectors", lambda self, table, ids: ({}, list(ids)))
    ran: list[list[str]] = []
    real = reads.document_entities
    monkeypatch.setattr(reads, "document_entities", lambda s, ids: ran.append(list(ids)) or real(s, ids))
    assert _arrow_bag(memory_reads.document_entities(store, ["doc:t"])) == want and ran == [["doc:t"]]


@pytest.mark.parametrize("ids", [["doc:t#c0", "doc:t#c2", "doc:t#c2", "nope"], [], ["doc:t#c1"]])
def test_chunks_equal_the_statement(store: Any, ids: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    mine = memory_reads.chunks(store, ids)
    monkeypatch.setattr(batching, "IN_LIST_MAX", 10**6)
    assert _bag(mine) == _bag(reads.chunks(store, ids))
    if len(ids) == 4:
        assert {r["id"]: (r["title"], r["ord"]) for r in mine} == {"doc:t#c0": ("DOC:T", 0), "doc:t#c2": ("DOC:U", 2)}


@pytest.mark.parametrize("ids", [["doc:t", "doc:u", "doc:t", "nope"], [], ["doc:u"]])
def test_documents_equal_the_statements(store: Any, ids: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    titles, similar = memory_reads.document_titles(store, ids), memory_reads.similar_documents(store, ids)
    monkeypatch.setattr(batching, "IN_LIST_MAX", 10**6)
    assert titles == reads.document_titles(store, ids)
    assert _bag(similar) == _bag(reads.similar_documents(store, ids))
    if len(ids) == 4:
        assert sorted((r["src"], r["dst"], r["weight"]) for r in similar) == [
            ("doc:t", "doc:t", 0.25), ("doc:t", "doc:u", 0.5), ("doc:u", "doc:t", 0.125)]
