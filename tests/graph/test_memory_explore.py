"""kgviz.graph.memory_explore answers the Explore page's and the trace labels' reads from memory
(issue 29: as statements they scanned whole tables, seconds per action at 100,000 passages); each
must give the rows of the statement of the same name, on the graph of
tests/graph/test_triple_graph.py (a hub with parallel edges, self-loops, facts about facts, a fact
about itself, NULL names, texts and triple ids), read from Kùzu and from the stored read model."""
from __future__ import annotations

from typing import Any

import pytest

from kgviz.graph import batching, explore, memory_explore, reads
from kgviz.graph.store import GraphStore
from kgviz.viz import explore as viz_explore
from kgviz.viz import labels as labels_module
from kgviz.viz.labels import fetch_human_labels, fetch_links
from tests.graph.test_memory_reads import ID_LISTS, source  # noqa: F401  (autouse: kuzu and stored)
from tests.graph.test_triple_graph import ENTITIES, _bag, store  # noqa: F401,F811  (the graph fixture)


def _queries_seen(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements every GraphStore.query runs from now on, in order."""
    seen: list[str] = []
    real = GraphStore.query

    def spy(self: GraphStore, cypher: str, params: Any = None) -> Any:
        seen.append(cypher)
        return real(self, cypher, params)
    monkeypatch.setattr(GraphStore, "query", spy)
    return seen


@pytest.mark.parametrize("ids", sorted(ID_LISTS))
@pytest.mark.parametrize("limit", [5000, 3, 0])
def test_related_at_equals_its_statement(store: Any, ids: str, limit: int) -> None:
    mine = memory_explore.related_at(store, ID_LISTS[ids], limit)
    want = explore.related_at(store, ID_LISTS[ids], limit)
    if limit >= 5000:
        assert _bag(mine) == _bag(want)
    else:  # the statement's LIMIT keeps any `limit` of them; the memory read the first in edge order
        assert len(mine) == len(want) and set(_bag(mine)) <= set(_bag(explore.related_at(store, ID_LISTS[ids], 5000)))
        assert mine == memory_explore.related_at(store, ID_LISTS[ids], limit)  # always the same ones
    if ids == "few" and limit == 5000:  # the hub's parallel "owns" edges both come back, each once
        assert sum(1 for r in mine if r["src"] == "ent:hub" and r["rel"] == "owns") == 3


@pytest.mark.parametrize("entity", [f"ent:{n}" for n in ENTITIES] + ["ent:missing", "tri:ab"])
@pytest.mark.parametrize("limit", [200, 2, 0])
def test_triples_of_entity_equal_the_ordered_statement(store: Any, entity: str, limit: int) -> None:
    mine = memory_explore.triples_of_entity(store, entity, limit)
    want = explore.triples_of_entity(store, entity, limit)
    assert mine == want  # the statement orders by (chunk_id, id): the same rows in the same order
    if entity == "ent:a" and limit == 200:
        assert {r["id"] for r in mine} >= {"tri:ab", "tri:c1", "tri:cur", "ent:both"}
        assert all(r["doc_id"] == "doc:t" for r in mine)


@pytest.mark.parametrize("ids", sorted(ID_LISTS))
def test_entity_infos_equal_their_statement(store: Any, ids: str) -> None:
    mine = memory_explore.entity_infos(store, ID_LISTS[ids])
    want = explore.entity_infos(store, ID_LISTS[ids])
    assert _bag(mine) == _bag(want)
    assert [r["id"] for r in mine] == [i for i in dict.fromkeys(ID_LISTS[ids]) if i.startswith("ent:") and
                                       i != "ent:missing"]  # in the order asked, one per id


CHUNK_LISTS = {"few": ["doc:t#c2", "doc:t#c0"], "repeats": ["doc:t#c1", "doc:t#c1", "doc:t#c9", "ent:a"], "none": []}


@pytest.mark.parametrize("ids", sorted(CHUNK_LISTS))
def test_chunk_details_equal_their_statements(store: Any, ids: str) -> None:
    asked = CHUNK_LISTS[ids]
    mine = memory_explore.chunks_with_documents(store, asked)
    assert _bag(mine) == _bag(explore.chunks_with_documents(store, asked))
    assert [r["id"] for r in mine] == [i for i in dict.fromkeys(asked) if i in {"doc:t#c0", "doc:t#c1", "doc:t#c2"}]
    if ids == "few":
        assert [r["title"] for r in mine] == ["DOC:T", "DOC:T"]
    assert _bag(memory_explore.extraction_records(store, asked)) == _bag(explore.extraction_records(store, asked))


def test_a_chunk_whose_document_is_missing_has_no_title(tmp_path: Any) -> None:
    s = GraphStore.open(tmp_path / "ws", embedder_id="test", dim=4)
    try:
        s.bulk_load_nodes("Chunk", [{"id": "doc:z#c0", "doc_id": "doc:z", "ord": 0, "text": "orphan", "n_tokens": 1,
                                     "pagerank": 0.0, "core": False, "emb": [1.0, 0.0, 0.0, 0.0]}])
        s.bulk_load_nodes("Extraction", [{"chunk_id": "doc:z#c0", "mode": "offline", "prompt_name": "p", "raw": "[]",
                                          "status": "ok", "n_triples": 0, "n_malformed": 0, "error": ""}])
        mine = memory_explore.chunks_with_documents(s, ["doc:z#c0"])
        assert mine == [{"id": "doc:z#c0", "text": "orphan", "doc_id": "doc:z", "title": None}]
        assert _bag(mine) == _bag(explore.chunks_with_documents(s, ["doc:z#c0"]))
        assert memory_explore.extraction_records(s, ["doc:z#c0"]) == explore.extraction_records(s, ["doc:z#c0"])
        assert memory_explore.extraction_records(s, ["doc:z#c0"])[0]["raw"] == "[]"
    finally:
        s.close()


@pytest.mark.parametrize("ids", sorted(ID_LISTS))
def test_trace_links_and_labels_equal_their_statements(store: Any, ids: str, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = ID_LISTS[ids]
    mine_links, mine_labels = memory_explore.triple_links(store, asked), memory_explore.triple_labels(store, asked)
    monkeypatch.setattr(batching, "IN_LIST_MAX", 10**6)  # IN: one row per distinct id, as the memory reads give
    assert _bag(mine_links) == _bag(reads.triple_links(store, asked))
    assert mine_labels == reads.triple_labels(store, asked)
    if ids == "all":
        assert mine_labels["tri:m2"] is None  # a NULL text stays NULL
        assert {r["id"]: (r["s"], r["o"]) for r in mine_links}["tri:twice"] == ("tri:ab", "tri:ab")


def test_no_whole_table_statement_runs_for_an_explore_action_or_a_trace_link(store: Any,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """After the graph is in memory, a neighbourhood, an entity's details and a trace's fact links
    run no statement but primary-key lookups and the few chunk reads (the scans are what cost
    seconds at 100k)."""
    memory_explore.related_at(store, ["ent:hub"], 10)  # the graph loaded
    seen = _queries_seen(monkeypatch)
    nb = viz_explore.neighbourhood(store, "ent:hub", hops=2, cap=50)
    assert {n.id for n in nb.graph.nodes} >= {"ent:hub", "ent:h0", "ent:h4"}
    details = viz_explore.entity_details(store, "ent:a")
    assert {t["id"] for t in details.triples} >= {"tri:ab", "tri:cur"}
    links = fetch_links(store, ["tri:ab", "tri:m1"])
    assert links.links["tri:m1"] == ("tri:ab", "ent:c") and links.labels["tri:ab"] == ("ent:a knows ent:b", "Triple")
    # a primary-key lookup ({id: $id}, or WHERE e.id = $id: 1-3 ms at 100k) is not a scan
    scans = [c for c in seen if "{id: $id}" not in c and "{chunk_id: $id}" not in c and ".id = $id" not in c
             and "MENTIONS" not in c]  # an entity's chunks: MENTIONS from one entity, by its key
    assert scans == [], scans


LABEL_LISTS = {"docs": ["doc:u", "doc:t", "doc:missing", "doc:t", "ent:a"],
               "chunks": ["doc:t#c2", "doc:t#c0", "doc:t#c0", "doc:t#c9", "doc:t#c0#s1"],
               "subs": ["doc:t#c0#s2", "doc:t#c0#s1", "doc:t#c0#s0", "doc:t#c0#s7", "doc:t#c1"], "none": []}


@pytest.mark.parametrize("ids", sorted(LABEL_LISTS))
@pytest.mark.parametrize("lookups_max", [128, 2])
def test_label_reads_equal_their_statements(store: Any, ids: str, lookups_max: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace's human labels read documents and chunks by primary key (a list longer than
    LABEL_LOOKUPS_MAX by its statement): the rows of the ``reads`` statements (their id lists
    scanned the tables, ~0.24 s a run at 100k), one per distinct id that exists, in the order
    asked; a NULL text stays NULL."""
    monkeypatch.setattr(memory_explore, "LABEL_LOOKUPS_MAX", lookups_max)
    asked = LABEL_LISTS[ids]
    docs = memory_explore.documents_for_labels(store, asked)
    assert _bag(docs) == _bag(reads.documents_for_labels(store, asked))
    assert [r["id"] for r in docs] == [i for i in dict.fromkeys(asked) if i in ("doc:t", "doc:u")]
    for table in ("Chunk", "SubChunk"):
        mine = memory_explore.chunk_label_texts(store, table, asked)
        assert mine == reads.chunk_label_texts(store, table, asked)
        assert list(mine) == [i for i in dict.fromkeys(asked) if i in mine]
    if ids == "subs":
        assert memory_explore.chunk_label_texts(store, "SubChunk", asked) == {
            "doc:t#c0#s2": "sub 2", "doc:t#c0#s1": None, "doc:t#c0#s0": "sub 0"}
    with pytest.raises(ValueError, match="Chunk or SubChunk"):
        memory_explore.chunk_label_texts(store, "Entity", asked)


def test_human_labels_run_only_primary_key_lookups(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``fetch_human_labels`` (every Trace run) gives the labels the statements gave, reading
    each document and chunk by its key, never an id list."""
    asked = ["doc:t", "doc:u", "doc:t#c0", "doc:t#c2", "doc:t#c0#s0", "doc:t#c0#s1", "doc:t#c9", "ent:a", "tri:ab"]
    monkeypatch.setattr(labels_module.memory_explore, "documents_for_labels", reads.documents_for_labels)
    monkeypatch.setattr(labels_module.memory_explore, "chunk_label_texts", reads.chunk_label_texts)
    want = fetch_human_labels(store, asked)  # through the statements
    monkeypatch.undo()
    seen = _queries_seen(monkeypatch)
    got = fetch_human_labels(store, asked)
    assert got == want  # (the ids of this graph's sub-chunks have no ".s": they are looked up as chunks, in vain)
    assert list(got) == ["doc:t", "doc:u", "doc:t#c0", "doc:t#c2"] and got["doc:t#c2"] == "DOC:T: chunk 2"
    assert seen and all("{id: $id}" in c and "$ids" not in c for c in seen), seen


def test_a_long_label_list_is_one_statement_not_a_lookup_per_id(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past LABEL_LOOKUPS_MAX ids a table is read by one id-list statement (a ket-rag trace has
    ~1,300 documents and sub-chunks: 0.2 s of key lookups, 30 ms as one statement at 100k)."""
    asked = ["doc:t", "doc:u", "doc:t#c0", "doc:t#c1", "doc:t#c2", "doc:missing#c5"]
    want = fetch_human_labels(store, asked)
    monkeypatch.setattr(memory_explore, "LABEL_LOOKUPS_MAX", 2)
    seen = _queries_seen(monkeypatch)
    got = fetch_human_labels(store, asked)
    assert got == want and list(got) == list(want)
    assert len(seen) == 2 and all("$ids" in c for c in seen), seen  # the 3 documents, the 4 chunks: each list over 2
