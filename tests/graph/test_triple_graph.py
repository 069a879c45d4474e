"""kgviz.graph.triple_graph answers kg-rag's neighbourhood and node reads from memory (issue 29);
every read must give the rows its Cypher statement gives, on a graph with a hub, cycles,
self-loops, parallel edges, hypernodes, NULL columns and an id that is both a Triple and an Entity."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgviz.graph import neighbourhood as nb
from kgviz.graph import triple_graph as tg
from kgviz.graph.store import GraphStore

DIM = 8
ENTITIES = ["hub", "a", "b", "c", "loop", "lonely", "cur"] + [f"h{i}" for i in range(6)] + ["both"]
# (id, subject id, relation, object id); "tri:..." ends are hypernodes
TRIPLES = [(f"tri:h{i}", "ent:hub", "has", f"ent:h{i}") for i in range(6)] + [
    ("tri:loop", "ent:loop", "is", "ent:loop"),  # an entity self-loop: SUBJ and OBJ to one node
    ("tri:ab", "ent:a", "knows", "ent:b"), ("tri:m1", "tri:ab", "said by", "ent:c"),
    ("tri:m2", "ent:c", "doubts", "tri:ab"), ("tri:twice", "tri:ab", "restates", "tri:ab"),
    ("tri:c1", "tri:c2", "cites", "ent:a"), ("tri:c2", "tri:c1", "cites", "ent:b"),  # a triple cycle
    ("tri:self", "tri:self", "is about", "ent:c"),  # a triple about itself
    ("tri:cur", "ent:cur", "curated fact", "ent:a"), ("ent:both", "ent:a", "shares an id", "ent:b")]
RELATED = [(  # (src, relation, dst, triple_id): parallel edges, self-loops, NULL / empty triple ids
    "ent:hub", "has", f"ent:h{i}", f"tri:h{i}") for i in range(6)] + [
    ("ent:hub", "owns", "ent:h4", ""), ("ent:hub", "owns", "ent:h4", "tri:x"),
    ("ent:loop", "is", "ent:loop", "tri:loop"), ("ent:loop", "near", "ent:loop", None),
    ("ent:a", "knows", "ent:b", "tri:ab"), ("ent:b", "likes", "ent:a", ""), ("ent:cur", "curated fact", "ent:a", "tri:cur")]


def _vector(i: int) -> list[float]:
    """A distinct vector of non-round values per node, so a vector read from the wrong row shows."""
    return (np.sin(np.arange(DIM, dtype=np.float64) * (i + 1.3)) / 3.0).astype(np.float32).tolist()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    s = GraphStore.open(tmp_path_factory.mktemp("triple_graph") / "ws", embedder_id="test", dim=DIM)
    vec = np.eye(DIM, dtype=np.float32)[0].tolist()
    s.bulk_load_nodes("Entity", [
        {"id": f"ent:{n}", "name": None if n == "lonely" else n.title(), "type": "",
         "description": None if n == "a" else f"{n} as described",
         "origin": "curated" if n == "cur" else "corpus", "aliases": "", "n_mentions": 1, "emb": _vector(i)}
        for i, n in enumerate(ENTITIES)])
    s.bulk_load_nodes("Triple", [
        {"id": t, "subject": sj, "relation": r, "object": o, "subject_id": sj, "object_id": o,
         "text": None if t == "tri:m2" else f"{sj} {r} {o}", "chunk_id": "doc:t#c0", "doc_id": "doc:t",
         "sentence": f"{sj} {r} {o}.", "origin": "curated" if t == "tri:cur" else "corpus",
         "kind": None if t == "tri:ab" else "relation", "emb": _vector(50 + i)} for i, (t, sj, r, o) in enumerate(TRIPLES)])
    for rel, col in (("SUBJ", 1), ("OBJ", 3)):
        for to_table in ("Entity", "Triple"):
            rows = [{"from": t[0], "to": t[col]} for t in TRIPLES if t[col].startswith("tri:") == (to_table == "Triple")]
            s.bulk_load_rels(rel, rows, from_table="Triple", to_table=to_table)
    s.bulk_load_rels("RELATED", [{"from": a, "to": b, "relation": r, "triple_id": t, "origin": "corpus"}
                                 for a, r, b, t in RELATED], from_table="Entity", to_table="Entity")
    # parallel edges (the bulk load keeps one of equal rows): a second SUBJ and a second RELATED
    s.execute("MATCH (t:Triple {id: 'tri:h0'}), (x:Entity {id: 'ent:hub'}) CREATE (t)-[:SUBJ]->(x)")
    s.execute("MATCH (a:Entity {id: 'ent:hub'}), (b:Entity {id: 'ent:h4'}) "
              "CREATE (a)-[:RELATED {relation: 'owns', triple_id: 'tri:x', origin: 'corpus'}]->(b)")
    # chunks: MENTIONS (ent:lonely has none) and FROM_CHUNK links, a parallel edge of each; sub-chunks; two documents
    s.bulk_load_nodes("Chunk", [{"id": f"doc:t#c{i}", "doc_id": "doc:t", "ord": i, "text": f"chunk {i}", "n_tokens": 2,
                                 "pagerank": 0.0, "core": False, "emb": vec} for i in range(3)])
    s.bulk_load_rels("MENTIONS", [{"from": f"doc:t#c{i % 3}", "to": f"ent:{n}"} for i, n in enumerate(ENTITIES)
                                  if n != "lonely"] + [{"from": "doc:t#c2", "to": "ent:hub"}],
                     from_table="Chunk", to_table="Entity")
    s.bulk_load_rels("FROM_CHUNK", [{"from": t[0], "to": f"doc:t#c{i % 2}", "sentence": "s"} for i, t in enumerate(TRIPLES)]
                     + [{"from": "tri:ab", "to": "doc:t#c2", "sentence": "s"}], from_table="Triple", to_table="Chunk")
    s.bulk_load_nodes("SubChunk", [{"id": f"doc:t#c0#s{i}", "chunk_id": "doc:t#c0", "ord": i, "n_tokens": 1, "emb": vec,
                                    "text": None if i == 1 else f"sub {i}"} for i in range(3)])
    s.bulk_load_nodes("Document", [{"id": d, "title": d.upper(), "source": "", "sha256": "", "text": "", "n_tokens": 1,
                                    "emb": vec} for d in ("doc:t", "doc:u")])
    s.bulk_load_rels("SIMILAR_DOC", [{"from": "doc:t", "to": "doc:u", "weight": 0.5}, {"from": "doc:t", "to": "doc:t",
                                      "weight": 0.25}, {"from": "doc:u", "to": "doc:t", "weight": 0.125}],
                     from_table="Document", to_table="Document")
    s.bulk_load_rels("HAS_CHUNK", [{"from": "doc:t", "to": "doc:t#c0"}, {"from": "doc:t", "to": "doc:t#c1"},
                                   {"from": "doc:u", "to": "doc:t#c2"}], from_table="Document", to_table="Chunk")
    s.execute("MATCH (c:Chunk {id: 'doc:t#c0'}), (e:Entity {id: 'ent:hub'}) CREATE (c)-[:MENTIONS]->(e)")
    s.execute("MATCH (t:Triple {id: 'tri:ab'}), (c:Chunk {id: 'doc:t#c2'}) CREATE (t)-[:FROM_CHUNK {sentence: 's'}]->(c)")
    yield s
    s.close()


def _bag(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(sorted(r.items(), key=lambda kv: kv[0])) for r in rows)


ALL_ENTITIES = [f"ent:{n}" for n in ENTITIES] + ["ent:missing", "tri:ab"]
ALL_TRIPLES = [t[0] for t in TRIPLES] + ["tri:missing", "ent:a"]


@pytest.mark.parametrize("name", sorted(nb.NEIGHBOURHOOD))
def test_each_neighbourhood_read_equals_its_statement(store: Any, name: str) -> None:
    anchors = ALL_TRIPLES if name == "Q_TRIPLES_AT_TRIPLE" else ALL_ENTITIES
    mine = nb.neighbourhood(store, name, anchors)
    want = nb.neighbourhood_by_statement(store, name, anchors)
    assert list(mine) == list(want) == anchors
    for a in anchors:
        assert _bag(mine[a]) == _bag(want[a]), (name, a)
        assert list(mine[a][0]) == list(want[a][0]) if want[a] else mine[a] == []  # same columns, same order
    assert sum(len(v) for v in want.values()) >= 7
    # the tricky cases are in the graph, and come back as the statement gives them
    if name == "Q_TRIPLES_AT_ENTITY":
        assert [r["side"] for r in mine["ent:hub"]].count("SUBJ") == 7  # six triples, one parallel edge
        assert sorted(r["side"] for r in mine["ent:loop"]) == ["OBJ", "SUBJ"]
    if name == "Q_TRIPLES_AT_TRIPLE":
        assert sorted(r["side"] for r in mine["tri:ab"] if r["id"] == "tri:twice") == ["OBJ", "SUBJ"]
        assert [r["id"] for r in mine["tri:self"]] == ["tri:self"]
        assert [r["id"] for r in mine["tri:c1"]] == ["tri:c2"] and [r["id"] for r in mine["tri:c2"]] == ["tri:c1"]
    if name == "Q_RELATED_OUT":
        assert len(mine["ent:hub"]) == 9 and len(mine["ent:loop"]) == 2
        assert {r["triple_id"] for r in mine["ent:loop"]} == {"tri:loop", None}


def test_a_neighbourhood_of_a_few_anchors_in_any_order_equals_its_statement(store: Any) -> None:
    for anchors in (["ent:a"], ["ent:c", "ent:hub", "ent:c"], []):
        for name in ("Q_TRIPLES_AT_ENTITY", "Q_RELATED_OUT", "Q_RELATED_IN"):
            mine, want = nb.neighbourhood(store, name, anchors), nb.neighbourhood_by_statement(store, name, anchors)
            assert {a: _bag(r) for a, r in mine.items()} == {a: _bag(r) for a, r in want.items()}


def _as_kg_rag_reads(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What kg-rag's resolve keeps of node rows: a Triple's columns (Triple wins), an Entity's
    id, name and origin."""
    triples = {r["id"]: {k: v for k, v in r.items() if k not in ("tbl", "name")} for r in rows if r["tbl"] == "Triple"}
    entities = {r["id"]: (r["name"], r["origin"]) for r in rows if r["tbl"] == "Entity" and r["id"] not in triples}
    return {"triples": triples, "entities": entities}


@pytest.mark.parametrize("n_ids", [1, 3, 40])
def test_node_rows_equal_the_statements(store: Any, n_ids: int) -> None:
    ids = list(dict.fromkeys(ALL_ENTITIES + ALL_TRIPLES))
    ids = ids[::-1][:n_ids] if n_ids < 40 else ids
    mine = nb.nodes_by_id(store, ids)
    assert _as_kg_rag_reads(mine) == _as_kg_rag_reads(nb.nodes_by_statement(store, ids))
    assert {r["tbl"] for r in mine} <= {"Triple", "Entity"}
    if n_ids == 40:
        got = _as_kg_rag_reads(mine)
        assert "ent:both" in got["triples"] and "ent:missing" not in got["entities"]
        assert got["entities"]["ent:lonely"] == (None, "corpus") and got["triples"]["tri:ab"]["kind"] is None
        assert [r["tbl"] for r in mine if r["id"] == "ent:both"] == ["Triple"]  # Triple wins, as kg-rag reads it


def test_the_graph_is_read_again_after_a_write(tmp_path: Path) -> None:
    s = GraphStore.open(tmp_path / "ws", embedder_id="test", dim=DIM)
    try:
        vec = np.eye(DIM, dtype=np.float32)[0].tolist()
        row = {"type": "", "description": "", "origin": "corpus", "aliases": "", "n_mentions": 1, "emb": vec}
        s.bulk_load_nodes("Entity", [{"id": "ent:x", "name": "X", **row}])
        first = tg.triple_graph(s)
        assert tg.triple_graph(s) is first  # once per database state
        assert nb.nodes_by_id(s, ["ent:y"]) == []
        s.bulk_load_nodes("Entity", [{"id": "ent:y", "name": "Y", **row}])
        assert tg.triple_graph(s) is not first
        assert nb.nodes_by_id(s, ["ent:y"]) == [{"tbl": "Entity", "id": "ent:y", "name": "Y", "origin": "corpus"}]
    finally:
        s.close()


def test_an_empty_graph_has_empty_neighbourhoods(tmp_path: Path) -> None:
    s = GraphStore.open(tmp_path / "ws", embedder_id="test", dim=DIM)
    try:
        for name in nb.NEIGHBOURHOOD:
            assert nb.neighbourhood(s, name, ["ent:a"]) == {"ent:a": []}
        assert nb.nodes_by_id(s, ["ent:a"]) == []
    finally:
        s.close()


@pytest.mark.parametrize("origin", ["curated", "corpus", "other"])
def test_whether_an_origin_is_present_equals_the_statement(store: Any, origin: str) -> None:
    assert nb.has_entities_of_origin(store, origin) == nb.has_entities_of_origin_by_statement(store, origin)
    assert nb.has_entities_of_origin(store, origin) == (origin != "other")


def test_triple_vectors_equal_the_stored_vectors_whatever_their_number(store: Any) -> None:
    for ids in (["tri:ab"], ["tri:ab", "tri:missing", "ent:a"], ALL_TRIPLES):
        mine = {r["id"]: np.asarray(r["emb"], dtype=np.float32).tolist() for r in nb.triple_vectors(store, ids)}
        want = {r["id"]: np.asarray(r["emb"], dtype=np.float32).tolist()
                for i in ids for r in store.query(nb.Q_TRIPLE_EMB_BY_PK, {"id": i})}
        assert mine == want and set(mine) == {i for i in ids if i in {t[0] for t in TRIPLES}}
