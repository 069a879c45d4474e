"""One fact, one node (issue 12): the same (subject, relation, object) read from two chunks,
two documents or two builds is one Triple with every provenance; deleting one source keeps the
fact for the others; a workspace of the previous schema gives a clear error."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.support.index_fakes import ScriptedLLM
from kgviz.errors import SchemaVersionError
from kgviz.graph import explore, writes
from kgviz.graph.store import SCHEMA_VERSION, GraphStore
from kgviz.index import graph_write as gw
from kgviz.index.assemble import triple_id
from kgviz.index.pipeline import BuildParams, build
from kgviz.facts.triples import RELATION_KIND, SENTENCE_KIND
from kgviz.ingest import document_from_text
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner

EMB = HashingEmbedder(64)
PARAMS = BuildParams(chunk_tokens=200, chunk_overlap=0, workers=1, similar_docs_k=2)
FACT = "Mira Tesk founded Tesk Works."
A = document_from_text(f"{FACT} Tesk Works built the Orrin Bridge.", title="Tesk Works", source="a.txt")
B = document_from_text(f"Kell Arden studied at Dunmore. {FACT}", title="Kell Arden", source="b.txt")
C = document_from_text(f"The Orrin Bridge was unsafe. {FACT}", title="Orrin Bridge", source="c.txt")
FOUNDED = triple_id("ent:mira tesk", "founded", "ent:tesk works")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GraphStore]:
    s = GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim)
    yield s
    s.close()


def _offline() -> Reasoner:
    return Reasoner(OfflineLLM(), EMB)


def _founded(store: GraphStore) -> list[dict]:
    return store.query("MATCH (t:Triple) WHERE t.relation = $r RETURN t.id AS id, t.doc_id AS doc, t.chunk_id AS chunk, "
                       "t.sentence AS sentence, t.kind AS kind", {"r": "founded"})


def _provenance(store: GraphStore, tid: str) -> list[tuple[str, str]]:
    rows = store.query("MATCH (t:Triple)-[f:FROM_CHUNK]->(c:Chunk) WHERE t.id = $id RETURN c.doc_id AS doc, "
                       "f.sentence AS sentence ORDER BY c.doc_id", {"id": tid})
    return [(r["doc"], r["sentence"]) for r in rows]


def _related(store: GraphStore, tid: str) -> int:
    return store.query("MATCH (:Entity)-[r:RELATED]->(:Entity) WHERE r.triple_id = $id RETURN count(r) AS n",
                       {"id": tid})[0]["n"]


def test_one_fact_from_two_documents_is_one_triple_with_both_provenances(store: GraphStore) -> None:
    build([A, B], store, _offline(), PARAMS)
    rows = _founded(store)
    assert [r["id"] for r in rows] == [FOUNDED] and rows[0]["kind"] == RELATION_KIND
    assert rows[0]["doc"] == A.id and rows[0]["sentence"] == FACT  # the first provenance on the node
    assert _provenance(store, FOUNDED) == sorted([(A.id, FACT), (B.id, FACT)])
    assert _related(store, FOUNDED) == 1
    # every triple id is unique by (subject, relation, object, kind): no two nodes say one thing
    facts = store.query("MATCH (t:Triple) RETURN t.subject_id AS s, t.relation AS r, t.object_id AS o, t.kind AS k")
    keys = [(f["s"], f["r"].lower(), f["o"], f["k"]) for f in facts]
    assert len(keys) == len(set(keys))
    assert {f["k"] for f in facts} == {RELATION_KIND, SENTENCE_KIND}
    # the entity view (Explore page table) reads the kind with each fact
    shown = explore.triples_of_entity(store, "ent:mira tesk", 50)
    assert {r["kind"] for r in shown} == {RELATION_KIND, SENTENCE_KIND}


def test_the_llm_extractor_merges_the_same_way(store: GraphStore) -> None:
    llm = ScriptedLLM(lambda text: "(Mira Tesk; founded; Tesk Works)\n(Mira Tesk; FOUNDED;  Tesk Works)")
    build([A, B], store, Reasoner(llm, EMB), PARAMS)
    assert [r["id"] for r in _founded(store)] == [FOUNDED]
    assert [d for d, _ in _provenance(store, FOUNDED)] == sorted([A.id, B.id])
    assert store.counts()["Triple"] == 1


def test_an_incremental_build_adds_provenance_to_the_stored_fact(store: GraphStore) -> None:
    build([A], store, _offline(), PARAMS)
    before = store.counts()
    report = build([B], store, _offline(), PARAMS)
    assert [r["id"] for r in _founded(store)] == [FOUNDED]
    assert [d for d, _ in _provenance(store, FOUNDED)] == sorted([A.id, B.id])
    assert _related(store, FOUNDED) == 1
    assert store.query("MATCH (t:Triple)-[s:SUBJ]->(:Entity) WHERE t.id = $id RETURN count(s) AS n",
                       {"id": FOUNDED})[0]["n"] == 1
    # the second build inserted only facts it was first to read
    assert report.new_triples == store.counts()["Triple"] - before["Triple"]
    # ... and the graph equals one built from both documents at once
    with GraphStore.open(store.path.parent / "both", embedder_id=EMB.id, dim=EMB.dim) as both:
        build([A, B], both, _offline(), PARAMS)
        assert both.counts()["Triple"] == store.counts()["Triple"]
        assert both.counts()["FROM_CHUNK"] == store.counts()["FROM_CHUNK"]


def test_deleting_a_document_keeps_facts_other_documents_state(store: GraphStore) -> None:
    build([A, B, C], store, _offline(), PARAMS)
    only_a = triple_id("ent:tesk works", "built", "ent:orrin bridge")
    assert store.existing_ids("Triple", [only_a]) == {only_a}
    gw.purge_documents(store, [A.id])
    assert store.existing_ids("Triple", [only_a]) == set()
    assert _related(store, only_a) == 0
    rows = _founded(store)
    assert [r["id"] for r in rows] == [FOUNDED]
    assert [d for d, _ in _provenance(store, FOUNDED)] == sorted([B.id, C.id])
    # the node's first provenance moved to a surviving chunk (the smallest chunk id)
    first = min(writes.chunk_ids_of_documents(store, [B.id, C.id]))
    assert rows[0]["chunk"] == first and rows[0]["doc"] == first.split("#")[0] and rows[0]["sentence"] == FACT
    assert _related(store, FOUNDED) == 1
    # a rebuild of the deleted document gives the graph a build of all three gives
    build([A], store, _offline(), PARAMS)
    assert [d for d, _ in _provenance(store, FOUNDED)] == sorted([A.id, B.id, C.id])


def test_a_workspace_of_the_previous_schema_gives_a_clear_error(tmp_path: Path) -> None:
    assert SCHEMA_VERSION == "2"
    with GraphStore.open(tmp_path / "old", embedder_id=EMB.id, dim=EMB.dim) as old:
        old.set_meta("schema_version", "1")  # what kgviz wrote before facts were merged
    with pytest.raises(SchemaVersionError) as err:
        GraphStore.open(tmp_path / "old", embedder_id=EMB.id, dim=EMB.dim)
    assert "v1" in str(err.value) and "rebuild" in err.value.user_message()
