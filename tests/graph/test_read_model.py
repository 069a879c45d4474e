"""The read model stored in the workspace (kgviz.graph.read_model): the next process maps the
stored tables instead of reading Kùzu, only while the graph's version and row counts are the ones
they were stored under; a write, a graph without a version, a writer that does not know the
version, a damaged file or a folder that cannot be written make the reads go to Kùzu again, with
the same rows."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kgviz.graph import memory_explore, memory_reads, read_model, reads, triple_graph
from kgviz.graph import store as store_module
from kgviz.graph.store import VERSION_FILENAME, GraphStore
from kgviz.methods import ket_cache

DIM = 4
READ_MODEL_QUERIES = {*triple_graph.QUERIES, memory_reads.Q_MENTIONS, memory_reads.Q_FROM_CHUNK, memory_reads.Q_HAS_CHUNK,
                      memory_reads.Q_CHUNKS, memory_reads.Q_DOCUMENTS, memory_reads.Q_SIMILAR_DOCS,
                      memory_reads.Q_SUBCHUNK_TEXTS, reads.Q_ENTITY_NAMES, memory_explore.Q_ENTITY_NAMES}


def _build(path: Path) -> None:
    with GraphStore.open(path, embedder_id="test", dim=DIM) as s:
        s.bulk_load_nodes("Document", [{"id": d, "title": d.upper()} for d in ("d1", "d2")])
        s.bulk_load_nodes("Chunk", [{"id": f"c{i}", "doc_id": f"d{1 + i % 2}", "ord": i, "text": f"chunk {i} é"} for i in range(4)])
        s.bulk_load_nodes("SubChunk", [{"id": f"c0#s{i}", "chunk_id": "c0", "ord": i, "text": None if i else "sub"}
                                       for i in range(2)])
        s.bulk_load_nodes("Entity", [{"id": f"e{i}", "name": f"Name {i}", "origin": "corpus", "aliases": f"Alias {i}|x{i}",
                                      "description": None if i == 1 else f"about {i}"} for i in range(4)])
        s.bulk_load_nodes("Triple", [{"id": f"t{i}", "subject": f"Name {i}", "relation": "knows", "object": f"Name {i + 1}",
                                      "subject_id": f"e{i}", "object_id": f"e{i + 1}", "text": f"fact {i}",
                                      "chunk_id": f"c{i}", "origin": "corpus", "kind": "relation"} for i in range(3)])
        for rel, end in (("SUBJ", 0), ("OBJ", 1)):
            s.bulk_load_rels(rel, [{"from": f"t{i}", "to": f"e{i + end}"} for i in range(3)], from_table="Triple",
                             to_table="Entity")
        s.bulk_load_rels("RELATED", [{"from": f"e{i}", "to": f"e{i + 1}", "relation": "knows", "triple_id": f"t{i}",
                                      "origin": "corpus"} for i in range(3)], from_table="Entity", to_table="Entity")
        s.bulk_load_rels("MENTIONS", [{"from": f"c{i}", "to": f"e{j}"} for i in range(4) for j in range(4) if (i + j) % 2 == 0],
                         from_table="Chunk", to_table="Entity")
        s.bulk_load_rels("FROM_CHUNK", [{"from": f"t{i}", "to": f"c{i}", "sentence": "s"} for i in range(3)],
                         from_table="Triple", to_table="Chunk")
        s.bulk_load_rels("HAS_CHUNK", [{"from": f"d{1 + i % 2}", "to": f"c{i}"} for i in range(4)],
                         from_table="Document", to_table="Chunk")
        s.bulk_load_rels("SIMILAR_DOC", [{"from": "d1", "to": "d2", "weight": 0.5}], from_table="Document", to_table="Document")


def _reads(s: GraphStore) -> dict[str, Any]:
    """What every reader of the read model gives, as plain values."""
    links = memory_reads.chunk_links(s)
    ents = [f"e{i}" for i in range(6)]
    return {
        "nodes": triple_graph.triple_graph(s).nodes(ents + ["t0", "t1", "t2", "t9"]),
        "triples_at": memory_reads.triples_at_entities(s, ents),
        "related": memory_reads.related_edges(s, ents, "corpus", incoming=False),
        "with_chunks": memory_reads.entities_with_chunks(s, ents),
        "triple_chunks": memory_reads.triple_chunks(s, ["t0", "t1", "t2"]),
        "chunk_entities": [list(links.chunk_entities.get(f"c{i}", ())) for i in range(4)],
        "has_chunk": [list(links.has_chunk.get(d, ())) for d in ("d1", "d2")],
        "chunks": memory_reads.chunks(s, [f"c{i}" for i in range(4)]),
        "titles": memory_reads.document_titles(s, ["d1", "d2"]),
        "similar": memory_reads.similar_documents(s, ["d1", "d2"]),
        "subchunks": memory_reads.subchunk_texts(s, ["c0#s0", "c0#s1"]),
        "names": ket_cache.named_entities(s, "Did Name 2 meet Alias 3 or Name 9?"),
        "search": memory_explore.entities_named(s, "NAME", 3),
    }


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    _build(tmp_path / "ws")
    return tmp_path / "ws"


@pytest.fixture()
def kuzu_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The read-model statements Kùzu runs from here on."""
    seen: list[str] = []
    real = GraphStore.query_arrow

    def spy(self: GraphStore, cypher: str, params: Any = None) -> pa.Table:
        if cypher in READ_MODEL_QUERIES:
            seen.append(cypher)
        return real(self, cypher, params)

    monkeypatch.setattr(GraphStore, "query_arrow", spy)
    return seen


def _folders(ws: Path) -> list[str]:
    return sorted(p.name for p in (ws / read_model.FOLDER).iterdir()) if (ws / read_model.FOLDER).exists() else []


def test_the_next_process_maps_the_stored_tables(ws: Path, kuzu_reads: list[str]) -> None:
    with GraphStore.open(ws) as s:
        first = _reads(s)
        assert set(kuzu_reads) == READ_MODEL_QUERIES
        assert len(read_model.stored_tables(s)) == len(READ_MODEL_QUERIES)
    kuzu_reads.clear()
    with GraphStore.open(ws) as s:  # a new Database handle: nothing held in memory
        assert _reads(s) == first
        assert kuzu_reads == []
    assert first["names"] == ["e2", "e3"] and first["subchunks"] == {"c0#s0": "sub", "c0#s1": ""}


def test_a_write_after_storing_reads_the_graph_again_and_stores_anew(ws: Path, kuzu_reads: list[str]) -> None:
    with GraphStore.open(ws) as s:
        before = _reads(s)
        old = _folders(ws)
        s.bulk_load_nodes("Entity", [{"id": "e5", "name": "Name 5", "origin": "corpus"}])
        kuzu_reads.clear()
        after = _reads(s)
        assert set(kuzu_reads) == READ_MODEL_QUERIES  # in this process too
        assert after["names"] == before["names"] and {"tbl": "Entity", "id": "e5", "name": "Name 5", "origin": "corpus"} in after["nodes"]
        new = _folders(ws)
        assert len(old) == len(new) == 1 and old != new  # the stale key's tables are gone
    kuzu_reads.clear()
    with GraphStore.open(ws) as s:
        assert _reads(s) == after and kuzu_reads == []


def test_a_set_in_place_changes_the_version_and_the_rows(ws: Path, kuzu_reads: list[str]) -> None:
    """Row counts alone would miss this: the version does not."""
    with GraphStore.open(ws) as s:
        _reads(s)
        s.execute("MATCH (e:Entity {id: 'e2'}) SET e.name = 'Renamed'")
    kuzu_reads.clear()
    with GraphStore.open(ws) as s:
        got = _reads(s)
        assert kuzu_reads and got["names"] == ["e3"]
        assert {"tbl": "Entity", "id": "e2", "name": "Renamed", "origin": "corpus"} in got["nodes"]


def test_a_graph_without_a_version_reads_kuzu(ws: Path, kuzu_reads: list[str]) -> None:
    with GraphStore.open(ws) as s:
        first = _reads(s)
        old = _folders(ws)
    (ws / VERSION_FILENAME).unlink()  # a workspace built before kgviz kept one
    kuzu_reads.clear()
    with GraphStore.open(ws) as s:
        assert _reads(s) == first
        assert set(kuzu_reads) == READ_MODEL_QUERIES  # the tables stored before are never taken
        assert _folders(ws) != old


def test_a_writer_that_does_not_know_the_version_is_caught_by_the_node_counts(ws: Path, kuzu_reads: list[str],
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with GraphStore.open(ws) as s:
        _reads(s)
        token = s.graph_version()
    with monkeypatch.context() as m:  # an older kgviz: writes without changing the version
        m.setattr(store_module._Handle, "new_version", lambda self: None)
        with GraphStore.open(ws) as s:
            s.bulk_load_nodes("Entity", [{"id": "e7", "name": "Name 7", "origin": "corpus"}])
            assert s.graph_version() == token
    kuzu_reads.clear()
    with GraphStore.open(ws) as s:
        assert ket_cache.named_entities(s, "Is Name 7 there?") == ["e7"]
        assert reads.Q_ENTITY_NAMES in kuzu_reads


@pytest.mark.parametrize("damage", ["truncated", "garbage", "another key", "empty"])
def test_a_damaged_file_is_made_again(ws: Path, kuzu_reads: list[str], damage: str, caplog: pytest.LogCaptureFixture) -> None:
    with GraphStore.open(ws) as s:
        first = _reads(s)
        files = read_model.stored_tables(s)
    target = next(p for p in files if pa.ipc.open_file(pa.memory_map(str(p))).schema.metadata[read_model.META_FIELD]
                  .decode().find(triple_graph.Q_ALL_TRIPLES) > 0)
    data = target.read_bytes()
    if damage == "truncated":  # a write stopped part way, renamed by something else
        target.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":  # offsets that point past their buffers
        target.write_bytes(data[:200] + bytes(255 for _ in range(len(data) - 400)) + data[-200:])
    elif damage == "another key":
        table = pa.ipc.open_file(pa.memory_map(str(target))).read_all()
        meta = json.loads(table.schema.metadata[read_model.META_FIELD])
        stamped = table.replace_schema_metadata({read_model.META_FIELD: json.dumps({**meta, "key": "other"}).encode()})
        with pa.OSFile(str(target), "wb") as sink, pa.ipc.new_file(sink, stamped.schema) as w:
            w.write_table(stamped)
    else:
        target.write_bytes(b"")
    kuzu_reads.clear()
    with caplog.at_level(logging.WARNING, logger="kgviz.graph.read_model"), GraphStore.open(ws) as s:
        assert _reads(s) == first
    assert kuzu_reads == [triple_graph.Q_ALL_TRIPLES]  # that table only, from Kùzu
    assert "damaged" in caplog.text and target.name in caplog.text
    kuzu_reads.clear()
    with GraphStore.open(ws) as s:  # made again and stored
        assert _reads(s) == first and kuzu_reads == []


def test_a_workspace_that_cannot_hold_the_tables_still_answers(ws: Path, kuzu_reads: list[str],
                                                                caplog: pytest.LogCaptureFixture) -> None:
    (ws / read_model.FOLDER).write_text("a file where the folder goes")
    with caplog.at_level(logging.WARNING, logger="kgviz.graph.read_model"):
        with GraphStore.open(ws) as s:
            first = _reads(s)
        kuzu_reads.clear()
        with GraphStore.open(ws) as s:
            assert _reads(s) == first and set(kuzu_reads) == READ_MODEL_QUERIES
    assert caplog.text.count("read model not stored") == 1  # once per key, not per table
    assert "cannot be opened" not in caplog.text and "damaged" not in caplog.text


def test_no_version_that_can_be_recorded_stores_nothing(ws: Path, kuzu_reads: list[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (ws / VERSION_FILENAME).unlink(missing_ok=True)

    def fail(path: Path, token: str) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(store_module, "_write_version", fail)
    with GraphStore.open(ws) as s:
        assert s.graph_version() is None
        first = _reads(s)
    assert _folders(ws) == []
    with GraphStore.open(ws) as s:
        assert _reads(s) == first


def test_tables_of_another_version_are_never_used(ws: Path, kuzu_reads: list[str]) -> None:
    """A process killed in the middle of a write leaves the new token on disk and rows (Kùzu's
    WAL) that may count the same as before: the tables stored under the old token stay unused."""
    with GraphStore.open(ws) as s:
        _reads(s)
        old = _folders(ws)
    (ws / VERSION_FILENAME).write_text(json.dumps({"format": 1, "token": "0" * 32}))
    kuzu_reads.clear()
    with GraphStore.open(ws) as s:
        assert s.graph_version() == "0" * 32
        _reads(s)
    assert set(kuzu_reads) == READ_MODEL_QUERIES and _folders(ws) != old and len(_folders(ws)) == 1


def test_remembered_values_are_kept_under_the_key(ws: Path, caplog: pytest.LogCaptureFixture) -> None:
    made: list[str] = []

    def make(value: str) -> Any:
        return lambda: made.append(value) or [len(made), value]

    with GraphStore.open(ws) as s:
        key = read_model.current_key(s)
        assert key is not None
        assert read_model.remembered(s, key, "a", make("x")) == [1, "x"]
        assert read_model.remembered(s, key, "a", make("y")) == [1, "x"] and made == ["x"]
        assert read_model.remembered(s, None, "a", make("z")) == [2, "z"]  # no key: always made
        s.set_meta("k", "v")  # a write: another key
        other = read_model.current_key(s)
        assert other != key and read_model.remembered(s, other, "a", make("w")) == [3, "w"]
        assert _folders(ws) == [other]
        (ws / read_model.FOLDER / other / read_model.VALUES_FILE).write_text("{broken")
        with caplog.at_level(logging.WARNING, logger="kgviz.graph.read_model"):
            assert read_model.remembered(s, other, "a", make("v")) == [4, "v"]
        assert "damaged" in caplog.text


def test_the_next_process_takes_the_vector_files_id_digest_without_reading_ids(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"id": f"c{i}", "text": f"chunk {i}", "emb": [float(i == j) + 0.1 for j in range(DIM)]} for i in range(6)]
    with GraphStore.open(tmp_path / "ws", embedder_id="test", dim=DIM) as s:
        s.bulk_load_nodes("Chunk", rows)
        first = s.vector_search("Chunk", [1.0, 0.0, 0.0, 0.0], 3)
    ran: list[str] = []
    real = GraphStore.query_arrow
    monkeypatch.setattr(GraphStore, "query_arrow", lambda self, q, p=None: (ran.append(q), real(self, q, p))[1])
    with GraphStore.open(tmp_path / "ws") as s:
        assert s.vector_search("Chunk", [1.0, 0.0, 0.0, 0.0], 3) == first
        assert not [q for q in ran if q.startswith("MATCH (n:Chunk) RETURN")]
        s.bulk_load_nodes("Chunk", [{"id": "c9", "text": "new", "emb": [1.0, 0.0, 0.0, 0.0]}])
        ran.clear()
        assert s.vector_search("Chunk", [1.0, 0.0, 0.0, 0.0], 1)[0][0] == "c9"
        assert [q for q in ran if q.startswith("MATCH (n:Chunk) RETURN")]  # a write: read and hashed again
