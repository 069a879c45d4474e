"""GraphStore: opening, schema and meta, bulk loads, hostile strings, deletes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from kgviz.errors import EmbedderMismatchError, GraphStoreError, SchemaVersionError
from kgviz.graph.store import DB_FILENAME, SCHEMA_VERSION, GraphStore

DIM = 8
NODE_TABLES = {"Meta", "Document", "Chunk", "SubChunk", "Entity", "Triple", "Keyword", "Extraction", "Description"}
REL_TABLES = {"HAS_CHUNK", "SUB_CHUNK_OF", "MENTIONS", "SUBJ", "OBJ", "FROM_CHUNK", "RELATED",
              "SIMILAR_DOC", "KNN", "HAS_KEYWORD"}


@pytest.fixture()
def store(tmp_path: Path):
    s = GraphStore.open(tmp_path / "ws", embedder_id="hashing-8", dim=DIM)
    yield s
    s.close()


def vec(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i % DIM] = 1.0
    return v


def test_open_creates_schema_and_meta(store: GraphStore, tmp_path: Path) -> None:
    assert (tmp_path / "ws" / DB_FILENAME).exists()
    assert store.get_meta("schema_version") == SCHEMA_VERSION
    assert store.get_meta("embedder_id") == "hashing-8"
    assert store.get_meta("dim") == str(DIM)
    counts = store.counts()
    assert set(counts) == NODE_TABLES | REL_TABLES
    assert counts["Meta"] == 3 and counts["Chunk"] == 0


def test_reopen_is_idempotent_and_shares_the_database(store: GraphStore, tmp_path: Path) -> None:
    store.bulk_load_nodes("Chunk", [{"id": "c1", "text": "hello"}])
    again = GraphStore.open(tmp_path / "ws", embedder_id="hashing-8", dim=DIM)
    try:
        assert again.db_file == store.db_file
        assert again.counts()["Chunk"] == 1  # schema re-applied without touching data
    finally:
        again.close()
    assert store.query("MATCH (c:Chunk) RETURN c.text AS t") == [{"t": "hello"}]  # still open


def test_close_and_reopen_from_meta(tmp_path: Path) -> None:
    with GraphStore.open(tmp_path / "ws", embedder_id="e", dim=DIM) as s:
        s.set_meta("chunk_tokens", 300)
    with GraphStore.open(tmp_path / "ws", embedder_id="e", dim=np.int64(DIM)) as s:
        assert s.dim == DIM
    with GraphStore.open(tmp_path / "ws") as s:  # learns embedder and dim from Meta
        assert (s.embedder_id, s.dim) == ("e", DIM)
        assert s.get_meta("chunk_tokens") == "300"
        assert s.get_meta("missing", "dflt") == "dflt"
    with GraphStore.open(tmp_path / "ws", read_only=True) as s:
        assert s.dim == DIM
        with pytest.raises(GraphStoreError, match="read-only"):
            s.set_meta("x", "y")
        with pytest.raises(GraphStoreError, match="read-only"):
            s.bulk_load_nodes("Chunk", [{"id": "c"}])


def test_embedder_mismatch_names_both_embedders(store: GraphStore, tmp_path: Path) -> None:
    with pytest.raises(EmbedderMismatchError) as info:
        GraphStore.open(tmp_path / "ws", embedder_id="fastembed:bge-small", dim=384)
    message = info.value.user_message()
    assert "hashing-8" in message and "fastembed:bge-small" in message
    assert "new workspace" in message
    with pytest.raises(EmbedderMismatchError):
        GraphStore.open(tmp_path / "ws", embedder_id="hashing-8", dim=16)


def test_schema_version_mismatch(store: GraphStore, tmp_path: Path) -> None:
    store.set_meta("schema_version", "0")
    with pytest.raises(SchemaVersionError, match="v0"):
        GraphStore.open(tmp_path / "ws", embedder_id="hashing-8", dim=DIM)


def test_new_graph_needs_embedder_and_missing_graph_read_only(tmp_path: Path) -> None:
    with pytest.raises(GraphStoreError, match="embedder id"):
        GraphStore.open(tmp_path / "new")
    with pytest.raises(GraphStoreError, match="No graph database"):
        GraphStore.open(tmp_path / "absent", read_only=True)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(GraphStoreError, match="is a file"):
        GraphStore.open(tmp_path / "afile", embedder_id="e", dim=4)


def test_bulk_load_nodes_is_idempotent(store: GraphStore) -> None:
    rows = [{"id": f"c{i}", "doc_id": "d", "ord": i, "text": f"t{i}", "emb": vec(i)} for i in range(5)]
    assert store.bulk_load_nodes("Chunk", rows) == 5
    assert store.bulk_load_nodes("Chunk", rows) == 0
    more = rows[3:] + [{"id": "c9", "text": "new"}, {"id": "c9", "text": "dup in batch"}]
    assert store.bulk_load_nodes("Chunk", more) == 1
    assert store.counts()["Chunk"] == 6
    assert store.query("MATCH (c:Chunk {id: 'c9'}) RETURN c.text AS t, c.emb AS e, c.ord AS o") == [
        {"t": "new", "e": None, "o": None}
    ]
    assert store.existing_ids("Chunk", ["c0", "c9", "zz", "c0"]) == {"c0", "c9"}
    assert store.existing_ids("Chunk", []) == set()


def test_bulk_load_accepts_dataframe_and_arrow(store: GraphStore) -> None:
    # pandas 3 default string dtype (the dtype that crashes a raw COPY FROM df) plus a 2-D column
    df = pd.DataFrame({"id": ["e1", "e2"], "name": ["Ada", None], "n_mentions": [3, 4]})
    df["emb"] = list(np.stack([vec(1), vec(2)]))
    assert store.bulk_load_nodes("Entity", df) == 2
    table = pa.table({"id": ["e3"], "name": ["Bob"], "origin": ["curated"]})
    assert store.bulk_load_nodes("Entity", table) == 1
    rows = store.query("MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.n_mentions AS n ORDER BY id")
    assert rows == [{"id": "e1", "name": "Ada", "n": 3}, {"id": "e2", "name": None, "n": 4},
                    {"id": "e3", "name": "Bob", "n": None}]
    got = store.get_embeddings("Entity", ["e1", "e2", "e3", "nope"])
    assert set(got) == {"e1", "e2"}
    np.testing.assert_array_equal(got["e2"], vec(2))


def test_bulk_load_validates_rows(store: GraphStore) -> None:
    with pytest.raises(GraphStoreError, match="unknown column"):
        store.bulk_load_nodes("Chunk", [{"id": "c", "txt": "typo"}])
    with pytest.raises(GraphStoreError, match="dimension 3"):
        store.bulk_load_nodes("Chunk", [{"id": "c", "emb": [1.0, 2.0, 3.0]}])
    with pytest.raises(GraphStoreError, match="key column"):
        store.bulk_load_nodes("Chunk", [{"text": "no id"}])
    with pytest.raises(GraphStoreError, match="No node table"):
        store.bulk_load_nodes("Chunks", [{"id": "c"}])
    assert store.counts()["Chunk"] == 0
    # Extraction's key is chunk_id, not id
    assert store.bulk_load_nodes("Extraction", [{"chunk_id": "c1", "status": "ok", "n_triples": 2}]) == 1
    assert store.bulk_load_nodes("Extraction", [{"chunk_id": "c1", "status": "failed"}]) == 0


def _triples(store: GraphStore) -> None:
    store.bulk_load_nodes("Entity", [{"id": i, "name": i[4:]} for i in ("ent:a", "ent:b", "ent:c")])
    store.bulk_load_nodes("Triple", [
        {"id": "tri:1", "subject": "a", "relation": "likes", "object": "b"},
        {"id": "tri:2", "subject": "c", "relation": "knows", "object": "a likes b"},
    ])


def test_bulk_load_rels_multi_pair_hypernodes(store: GraphStore) -> None:
    _triples(store)
    subj = [{"from": "tri:1", "to": "ent:a"}, {"from": "tri:2", "to": "ent:c"}]
    assert store.bulk_load_rels("SUBJ", subj, from_table="Triple", to_table="Entity") == 2
    assert store.bulk_load_rels("OBJ", [{"from": "tri:1", "to": "ent:b"}], from_table="Triple", to_table="Entity") == 1
    # tri:2's object is the triple tri:1 (a hypernode)
    assert store.bulk_load_rels("OBJ", [{"from": "tri:2", "to": "tri:1"}], from_table="Triple", to_table="Triple") == 1
    rows = store.query(
        "MATCH (t:Triple {id: 'tri:2'})-[:OBJ]->(o:Triple)-[:SUBJ]->(s:Entity) RETURN o.id AS o, s.id AS s"
    )
    assert rows == [{"o": "tri:1", "s": "ent:a"}]
    # repeating a load adds nothing; a new edge in the same batch is added
    assert store.bulk_load_rels("SUBJ", subj + [{"from": "tri:1", "to": "ent:b"}],
                                from_table="Triple", to_table="Entity") == 1
    counts = store.counts()
    assert (counts["SUBJ"], counts["OBJ"]) == (3, 2)


def test_bulk_load_rels_properties_and_errors(store: GraphStore) -> None:
    _triples(store)
    related = [
        {"from": "ent:a", "to": "ent:b", "relation": "likes", "triple_id": "tri:1", "origin": "corpus"},
        {"from": "ent:a", "to": "ent:b", "relation": "likes", "triple_id": "tri:1", "origin": "corpus"},
        {"from": "ent:a", "to": "ent:b", "relation": "hates", "triple_id": "tri:9", "origin": "corpus"},
    ]
    assert store.bulk_load_rels("RELATED", related, from_table="Entity", to_table="Entity") == 2
    assert store.bulk_load_rels("RELATED", related, from_table="Entity", to_table="Entity") == 0
    rels = store.query("MATCH (:Entity)-[r:RELATED]->(:Entity) RETURN r.relation AS rel ORDER BY rel")
    assert rels == [{"rel": "hates"}, {"rel": "likes"}]
    with pytest.raises(GraphStoreError, match="ent:zzz") as info:
        store.bulk_load_rels("RELATED", [{"from": "ent:a", "to": "ent:zzz"}], from_table="Entity", to_table="Entity")
    assert "load the nodes first" in info.value.user_message()
    with pytest.raises(GraphStoreError, match="does not connect"):
        store.bulk_load_rels("SUBJ", [{"from": "ent:a", "to": "ent:b"}], from_table="Entity", to_table="Entity")
    with pytest.raises(GraphStoreError, match="'from' and 'to'"):
        store.bulk_load_rels("MENTIONS", [{"src": "x"}], from_table="Chunk", to_table="Entity")
    assert store.counts()["RELATED"] == 2


HOSTILE = [
    "it's \"quoted\"", "}) DETACH DELETE n //", "$param {x: 1}", "back\\slash\\", "line\nbreak\ttab",
    "ünïcödé 😀", "' OR 1=1 --", "", "nul\x00byte", "`backtick`", "<script>alert(1)</script>",
]


def test_hostile_strings_round_trip_verbatim(store: GraphStore) -> None:
    for i, text in enumerate(HOSTILE):
        store.execute("CREATE (:Chunk {id: $id, text: $t})", {"id": f"x{i}", "t": text})
    rows = [{"id": f"y{i}", "text": t, "doc_id": t} for i, t in enumerate(HOSTILE)]
    store.bulk_load_nodes("Chunk", rows)
    for i, text in enumerate(HOSTILE):
        got = store.query("MATCH (c:Chunk) WHERE c.text = $t AND c.id = $id RETURN c.text AS t",
                          {"t": text, "id": f"x{i}"})
        assert got == [{"t": text}]
        got = store.query("MATCH (c:Chunk {id: $id}) RETURN c.text AS t, c.doc_id AS d", {"id": f"y{i}"})
        assert got == [{"t": text, "d": text}]
    store.set_meta("k'}", HOSTILE[0])
    assert store.get_meta("k'}") == HOSTILE[0]
    assert store.counts()["Chunk"] == 2 * len(HOSTILE)


def test_transaction_rolls_back_and_commits(store: GraphStore) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with store.transaction():
            store.execute("CREATE (:Chunk {id: 'a'})")
            assert store.existing_ids("Chunk", ["a"]) == {"a"}  # visible inside
            raise RuntimeError("boom")
    assert store.existing_ids("Chunk", ["a"]) == set()
    with store.transaction():
        store.execute("CREATE (:Chunk {id: 'b'})")
        store.execute("CREATE (:Chunk {id: 'c'})")
    assert store.existing_ids("Chunk", ["b", "c"]) == {"b", "c"}


def test_query_errors_are_typed(store: GraphStore) -> None:
    with pytest.raises(GraphStoreError, match="Kùzu rejected"):
        store.query("MATCH (n:NoSuchTable) RETURN n")
    with pytest.raises(GraphStoreError, match="One statement"):
        store.query("RETURN 1; RETURN 2")
    store.close()
    with pytest.raises(GraphStoreError, match="closed"):
        store.query("RETURN 1")


def test_missing_extension_fails_clearly_without_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kgviz.graph.store as store_module

    # duckdb is an official extension that is not bundled: LOAD must fail at once, offline
    monkeypatch.setattr(store_module, "REQUIRED_EXTENSIONS", ("vector", "fts", "algo", "duckdb"))
    with pytest.raises(GraphStoreError, match="'duckdb' extension is not available"):
        GraphStore.open(tmp_path / "ws", embedder_id="e", dim=DIM)
    monkeypatch.undo()
    with GraphStore.open(tmp_path / "ws", embedder_id="e", dim=DIM) as s:  # released on failure
        assert s.counts()["Meta"] == 3


def test_bulk_load_inside_transaction_rolls_back(store: GraphStore) -> None:
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.bulk_load_nodes("Chunk", [{"id": "a"}, {"id": "b"}])
            assert store.counts()["Chunk"] == 2
            raise RuntimeError("undo")
    assert store.counts()["Chunk"] == 0


def test_embedder_mismatch_hint_names_a_spec_the_parser_accepts(store: GraphStore, tmp_path: Path) -> None:
    # regression: the hint said "choose embedder 'hashing-8'", an id the spec parser rejected
    from kgviz.providers.factory import parse_embedder_spec

    with pytest.raises(EmbedderMismatchError) as info:
        GraphStore.open(tmp_path / "ws", embedder_id="fastembed:bge-small", dim=384)
    hint = info.value.hint or ""
    assert "choose embedder 'hashing:8' (id hashing-8)" in hint
    assert "with 'fastembed:bge-small' (dim 384)" in hint
    # the quoted spec is what `--embedder` takes (dim 8 is below the parser's minimum, so check
    # the same wording for a real dimension)
    from kgviz.graph.store import _spec_of

    assert _spec_of("hashing-768") == "'hashing:768' (id hashing-768)"
    assert parse_embedder_spec("hashing:768") == parse_embedder_spec("hashing-768") == ("hashing", 768, None)
    assert _spec_of("fastembed:BAAI/bge-small-en-v1.5") == "'fastembed:BAAI/bge-small-en-v1.5'"
