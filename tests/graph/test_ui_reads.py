"""The kgviz/graph functions behind the UI and viz modules (issue 11: they hold no Cypher of their
own) read what the pages show."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from kgviz.graph import explore, reads
from kgviz.graph.store import GraphStore
from kgviz.viz import explore as viz_explore

DIM = 4


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphStore]:
    with GraphStore.open(tmp_path_factory.mktemp("ui_reads") / "ws", embedder_id=f"hashing-{DIM}", dim=DIM) as s:
        s.bulk_load_nodes("Document", [{"id": "d0", "title": "Harbour"}, {"id": "d1", "title": "River"}])
        s.bulk_load_nodes("Chunk", [{"id": f"d{i}#c{j}", "doc_id": f"d{i}", "ord": j, "text": f"text {i}.{j}",
                                     "n_tokens": 3, "pagerank": 0.1 * j, "core": j == 0}
                                    for i in range(2) for j in range(3)])
        s.bulk_load_nodes("Entity", [{"id": f"ent:{n}", "name": n.title(), "type": "place", "origin": "corpus",
                                      "n_mentions": k, "description": f"about {n}", "aliases": ""}
                                     for k, n in enumerate(["harbour", "river", "harbour master", "sea"])])
        s.bulk_load_nodes("Triple", [
            {"id": "tri:1", "subject": "Harbour", "relation": "on", "object": "River", "subject_id": "ent:harbour",
             "object_id": "ent:river", "text": "Harbour on River", "chunk_id": "d0#c0", "doc_id": "d0"},
            {"id": "tri:2", "subject": "Harbour on River", "relation": "since", "object": "Sea",
             "subject_id": "tri:1", "object_id": "ent:sea", "text": "since the sea", "chunk_id": "d1#c1",
             "doc_id": "d1"}])
        s.bulk_load_rels("RELATED", [{"from": "ent:harbour", "to": "ent:river", "relation": "on", "triple_id": "tri:1",
                                      "origin": "corpus"}], from_table="Entity", to_table="Entity")
        s.bulk_load_rels("MENTIONS", [{"from": "d0#c0", "to": "ent:harbour"}, {"from": "d1#c1", "to": "ent:harbour"}],
                         from_table="Chunk", to_table="Entity")
        s.bulk_load_nodes("Extraction", [{"chunk_id": "d0#c0", "mode": "offline", "status": "ok", "raw": "x",
                                          "n_triples": 1, "n_malformed": 0}])
        yield s


def _sorted(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in rows)


def test_explore_functions_read_the_fixture(store: GraphStore) -> None:
    # n_mentions follow the fixture's enumerate: harbour 0, river 1, harbour master 2, sea 3
    assert explore.entities_named(store, "HARBOUR", 5) == [
        {"id": "ent:harbour master", "name": "Harbour Master", "type": "place", "n": 2},
        {"id": "ent:harbour", "name": "Harbour", "type": "place", "n": 0}]
    ids = ["ent:harbour", "ent:sea", "nope"]
    assert _sorted(explore.entity_summaries(store, ids)) == _sorted([
        {"id": "ent:harbour", "name": "Harbour", "type": "place", "n": 0},
        {"id": "ent:sea", "name": "Sea", "type": "place", "n": 3}])
    assert _sorted(explore.entity_infos(store, ids)) == _sorted([
        {"id": "ent:harbour", "name": "Harbour", "type": "place", "description": "about harbour", "n": 0,
         "origin": "corpus"},
        {"id": "ent:sea", "name": "Sea", "type": "place", "description": "about sea", "n": 3, "origin": "corpus"}])
    # either end matches: ent:river is the tail of the one RELATED edge
    assert explore.related_at(store, ["ent:river"], 10) == [
        {"src": "ent:harbour", "dst": "ent:river", "rel": "on", "tid": "tri:1"}]
    assert explore.related_at(store, ["ent:sea"], 10) == []
    assert explore.entity(store, "ent:harbour") == {
        "id": "ent:harbour", "name": "Harbour", "type": "place", "description": "about harbour", "aliases": "",
        "n_mentions": 0, "origin": "corpus"}
    assert explore.entity(store, "nope") is None
    # tri:2 has ent:sea as object (its subject is the fact tri:1, a hypernode)
    assert [r["id"] for r in explore.triples_of_entity(store, "ent:sea", 5)] == ["tri:2"]
    assert [r["id"] for r in explore.triples_of_entity(store, "ent:harbour", 5)] == ["tri:1"]
    chunks = ["d0#c0", "d1#c1", "nope"]
    assert _sorted(explore.chunks_with_documents(store, chunks)) == _sorted([
        {"id": "d0#c0", "text": "text 0.0", "doc_id": "d0", "title": "Harbour"},
        {"id": "d1#c1", "text": "text 1.1", "doc_id": "d1", "title": "River"}])
    records = explore.extraction_records(store, chunks)
    assert [(r["chunk_id"], r["mode"], r["raw"], r["n_triples"]) for r in records] == [("d0#c0", "offline", "x", 1)]
    assert explore.chunks_mentioning_entity(store, "ent:harbour", 5) == ["d0#c0", "d1#c1"]
    assert explore.chunks_mentioning_entity(store, "ent:harbour", 1) == ["d0#c0"]
    assert sorted(explore.related_degrees(store)) == [0, 0, 1, 1]


def test_the_explore_view_reads_through_the_graph_functions(store: GraphStore) -> None:
    hits = viz_explore.search_entities(store, "harbour")
    assert [(h.id, h.n_mentions, h.match) for h in hits] == [("ent:harbour master", 2, "name"),
                                                              ("ent:harbour", 0, "name")]
    hood = viz_explore.neighbourhood(store, "ent:river")
    assert hood.names == {"ent:river": "River", "ent:harbour": "Harbour"}
    details = viz_explore.entity_details(store, "ent:harbour")
    assert [t["id"] for t in details.triples] == ["tri:1"]
    # d0#c0 from the triple, then d1#c1 from MENTIONS; only d0#c0 has an Extraction row
    assert [(c.id, c.doc_title, c.extraction is not None) for c in details.chunks] == [
        ("d0#c0", "Harbour", True), ("d1#c1", "River", False)]
    assert sorted(viz_explore.degrees(store)) == [0, 0, 1, 1]


def test_trace_and_overlay_reads(store: GraphStore) -> None:
    assert _sorted(reads.triple_links(store, ["tri:2", "tri:1", "x"])) == _sorted([
        {"id": "tri:1", "s": "ent:harbour", "o": "ent:river", "s_name": "Harbour", "o_name": "River"},
        {"id": "tri:2", "s": "tri:1", "o": "ent:sea", "s_name": "Harbour on River", "o_name": "Sea"}])
    assert reads.triple_labels(store, ["tri:1", "ent:sea"]) == {"tri:1": "Harbour on River"}
    assert reads.node_labels(store, "Document", ["d1"]) == {"d1": "River"}
    assert reads.node_labels(store, "Entity", ["ent:sea", "x"]) == {"ent:sea": "Sea"}
    with pytest.raises(ValueError):
        reads.node_labels(store, "Keyword", ["k"])
    assert reads.triple_ends(store, ["tri:2"]) == [{"id": "tri:2", "s": "tri:1", "o": "ent:sea", "c": "d1#c1"}]
    overview = {r["id"]: r for r in reads.chunk_overview(store)}
    assert len(overview) == 6 and overview["d0#c0"]["core"] is True and overview["d1#c2"]["n"] == 3
    assert overview["d1#c2"]["doc"] == "d1" and overview["d1#c2"]["ord"] == 2



def test_human_label_reads(store: GraphStore) -> None:
    assert _sorted(reads.documents_for_labels(store, ["d0", "nope"])) == _sorted(
        [{"id": "d0", "title": "Harbour", "text": None}])
    assert reads.chunk_label_texts(store, "Chunk", ["d1#c2", "d9#c0"]) == {"d1#c2": "text 1.2"}
    assert reads.chunk_label_texts(store, "SubChunk", ["d1#c2"]) == {}
    with pytest.raises(ValueError):
        reads.chunk_label_texts(store, "Document", ["d0"])
    # past IN_LIST_MAX ids the UNWIND form reads the same rows
    many = [f"d{i}#c{j}" for i in range(2) for j in range(3)] + [f"x{n}" for n in range(30)]
    assert len(reads.chunk_label_texts(store, "Chunk", many)) == 6


def test_trace_links_follow_the_order_of_the_ids(store: GraphStore) -> None:
    from kgviz.viz.labels import fetch_links

    got = fetch_links(store, ["tri:2", "tri:1", "x"])
    assert list(got.links) == ["tri:2", "tri:1"]
    assert got.links["tri:2"] == ("tri:1", "ent:sea")
    # tri:1 is an end of tri:2: labelled by its text as a Triple, not as an entity
    assert got.labels["tri:1"] == ("Harbour on River", "Triple") and got.labels["ent:sea"] == ("Sea", "Entity")
