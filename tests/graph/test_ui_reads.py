"""The kgviz/graph functions the UI and viz modules will switch to return what their own queries
return today (so the switch after the issue-11 merge changes no page)."""
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


def test_explore_functions_equal_the_explore_page_queries(store: GraphStore) -> None:
    q = store.query
    assert explore.entities_named(store, "harbour", 5) == q(viz_explore._SEARCH_BY_NAME, {"q": "harbour", "k": 5})
    assert [r["id"] for r in explore.entities_named(store, "HARBOUR", 5)] == ["ent:harbour master", "ent:harbour"]
    ids = ["ent:harbour", "ent:sea", "nope"]
    assert _sorted(explore.entity_summaries(store, ids)) == _sorted(q(viz_explore._ENTITIES_BY_ID, {"ids": ids}))
    assert _sorted(explore.entity_infos(store, ids)) == _sorted(q(viz_explore._NODE_INFO, {"ids": ids}))
    assert explore.related_at(store, ["ent:river"], 10) == q(viz_explore._HOP, {"ids": ["ent:river"], "lim": 10})
    assert explore.entity(store, "ent:harbour") == q(viz_explore._ENTITY, {"id": "ent:harbour"})[0]
    assert explore.entity(store, "nope") is None
    got = explore.triples_of_entity(store, "ent:sea", 5)
    assert got == q(viz_explore._TRIPLES, {"id": "ent:sea", "k": 5}) and [r["id"] for r in got] == ["tri:2"]
    chunks = ["d0#c0", "d1#c1"]
    assert _sorted(explore.chunks_with_documents(store, chunks)) == _sorted(q(viz_explore._CHUNKS, {"ids": chunks}))
    assert _sorted(explore.extraction_records(store, chunks)) == _sorted(q(viz_explore._EXTRACTIONS, {"ids": chunks}))
    assert explore.chunks_mentioning_entity(store, "ent:harbour", 5) == ["d0#c0", "d1#c1"]
    assert explore.related_degrees(store) == viz_explore.degrees(store)


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

