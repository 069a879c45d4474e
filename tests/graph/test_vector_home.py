"""The Document, Chunk, Entity and Triple vectors kept in the exact search's vector files only
(kgviz.graph.vector_home, issue 29): what a build stores where, what reads give, and what happens
when the files are lost, a build stops before storing them, a merge stops part way, or a curated
KG is imported into such a workspace."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgviz.errors import GraphStoreError
from kgviz.graph import memory_reads, reads, search, vector_file, vector_home
from kgviz.graph.store import GraphStore
from kgviz.index import pipeline
from kgviz.index.import_kg import import_kg
from kgviz.index.pipeline import build
from tests.support.data import write_kg_files
from tests.support.index_fakes import corpus
from tests.index.test_index_pipeline import EMB, SMALL, offline, open_store  # noqa: F401  (open_store: the fixture)

TSV = "\n".join([
    "head\trelation\ttail\thead_qid\ttail_qid\tsplit\tquestion_id",
    "Orrin Bridge\tdesigner\tEdda Lunn\tQ1\t\teval\tq1",
    "Edda Lunn\tplace of birth\tKellhaven\t\t\teval\tq1",
    "Kellhaven\tcountry\tLessary\t\t\ttrain\t",
])


def legacy_build(monkeypatch: pytest.MonkeyPatch, store: GraphStore, docs: Any) -> None:
    """A build that keeps every vector in Kùzu (what kgviz did before vector_home)."""
    with monkeypatch.context() as m:
        m.setattr(pipeline, "_vectors_in_files", lambda store, new, spill: set())
        build(docs, store, offline(), SMALL)


def vectors(store: GraphStore, table: str) -> dict[str, bytes]:
    ids = [r["id"] for r in store.query(f"MATCH (n:{table}) RETURN n.id AS id")]
    return {i: v.tobytes() for i, v in store.get_embeddings(table, ids).items()}


def test_a_first_build_keeps_its_vectors_in_the_files_only(open_store, monkeypatch) -> None:
    store, twin = open_store("files"), open_store("graph")
    build(corpus(), store, offline(), SMALL)
    legacy_build(monkeypatch, twin, corpus())
    for table in vector_home.TABLES:
        assert vector_home.files_digest(vector_home.state(store, table)) == vector_file.stored_digest(store.path, table)
        assert store.query(f"MATCH (n:{table}) WHERE n.emb IS NOT NULL RETURN count(n) AS c")[0]["c"] == 0
        assert vector_home.state(twin, table) is None
        got = vectors(store, table)
        assert got and got == vectors(twin, table)  # every vector, bit for bit, as Kùzu held it
    q = EMB.embed(["Who designed Orrin Bridge?"])[0]
    for table in vector_home.TABLES:
        assert store.vector_search(table, q, 5) == twin.vector_search(table, q, 5)
    # the document layer's reads give the same rows and vectors
    docs = [r["id"] for r in store.query("MATCH (d:Document) RETURN d.id AS id ORDER BY id")]
    assert memory_reads.document_triples(store, docs).equals(memory_reads.document_triples(twin, docs))
    assert memory_reads.document_entities(store, docs).equals(memory_reads.document_entities(twin, docs))
    # and KG-Retriever's document neighbours with both ends' vectors, as the statement over Kùzu's
    edges = memory_reads.similar_documents_with_vectors(store, docs)
    assert edges.num_rows and _sorted(edges).equals(_sorted(reads.similar_documents(twin, docs, vectors=True)))


def _sorted(table: Any) -> Any:
    return table.sort_by([("src", "ascending"), ("dst", "ascending")])


def test_a_later_build_links_the_documents_and_chunks_it_adds(open_store, monkeypatch) -> None:
    """A later build's doc_layer and ket stages read every Document and Chunk vector before its
    index stage: its new rows' vectors are in the files by then, so SIMILAR_DOC and the KNN graph
    are those of a workspace that keeps its vectors in Kùzu."""
    store, twin = open_store("files"), open_store("graph")
    names = sorted(corpus(), key=lambda d: d.id)
    for docs in (names[:2], names[2:]):
        build(docs, store, offline(), SMALL)
        legacy_build(monkeypatch, twin, docs)
    for rel in ("SIMILAR_DOC", "KNN"):
        q = f"MATCH (a)-[r:{rel}]->(b) RETURN a.id AS src, b.id AS dst, r.weight AS w ORDER BY src, dst"
        got = store.query(q)
        assert got and got == twin.query(q)
        assert {r["src"] for r in got} >= {d.id for d in names[2:]} if rel == "SIMILAR_DOC" else True
    for table in ("Document", "Chunk"):
        assert vectors(store, table) == vectors(twin, table)


def test_lost_files_are_an_error_that_says_to_build_again(open_store) -> None:
    store = open_store()
    build(corpus(), store, offline(), SMALL)
    for p in (Path(store.path) / vector_file.VECTOR_DIR).glob("Triple.*"):
        p.unlink()
    store.execute("MATCH (m:Meta) WHERE m.key = $k DELETE m", {"k": "nothing"})  # a write: cached matrices go
    with pytest.raises(GraphStoreError, match="missing or damaged") as err:
        store.vector_search("Triple", EMB.embed(["Orrin Bridge"])[0], 3)
    assert "build the workspace again" in err.value.hint
    with pytest.raises(GraphStoreError, match="missing or damaged"):
        store.get_embeddings("Triple", ["anything"])


def test_a_build_stopped_before_its_index_stage_is_redone_by_the_next(open_store, monkeypatch) -> None:
    store, clean = open_store("stopped"), open_store("clean")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("stopped before the index stage")

    with monkeypatch.context() as m:
        m.setattr(pipeline.KetBuild, "write_stage", broken)
        with pytest.raises(RuntimeError, match="stopped before"):
            build(corpus(), store, offline(), SMALL)
    assert vector_home.state(store, "Triple") == vector_home.PENDING
    with pytest.raises(GraphStoreError, match="not stored yet: the first build of this workspace is still "
                                              "writing them, or it stopped before it did") as err:
        store.vector_search("Triple", EMB.embed(["Orrin Bridge"])[0], 3)
    assert "wait for the build to finish" in err.value.hint and "run the build again" in err.value.hint
    again = build(corpus(), store, offline(), SMALL)
    assert again.new_documents == len(corpus())  # purged and written again (offline: no LLM call either way)
    build(corpus(), clean, offline(), SMALL)
    for table in vector_home.TABLES:
        assert vectors(store, table) == vectors(clean, table)
        assert vector_home.state(store, table) == vector_home.state(clean, table)


def test_a_merge_stopped_part_way_leaves_the_previous_files(open_store, monkeypatch) -> None:
    store = open_store()
    names = sorted(corpus(), key=lambda d: d.id)
    build(names[:2], store, offline(), SMALL)
    before = vectors(store, "Triple")
    digest = vector_home.files_digest(vector_home.state(store, "Triple"))
    real = vector_file.write
    calls = {"n": 0}

    def dies_after_the_rows(workspace: Path, table: str, *args: Any, **kwargs: Any) -> Any:
        if table != "Triple":
            return real(workspace, table, *args, **kwargs)
        calls["n"] += 1
        real(workspace, table, *args, **kwargs)  # the new files whole, then the process "dies"
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(vector_file, "write", dies_after_the_rows)
        with pytest.raises(KeyboardInterrupt):
            build(names[2:], store, offline(), SMALL)
    assert calls["n"] == 1
    assert vector_file.stored_digest(store.path, "Triple") != digest  # the new files are there...
    assert vector_home.files_digest(vector_home.state(store, "Triple")) == digest  # ...but Meta names the old
    store.execute("MATCH (m:Meta) WHERE m.key = $k DELETE m", {"k": "nothing"})
    # a reader puts the previous files back, and every vector Meta names is there
    got = vectors(store, "Triple")
    assert {i: got[i] for i in before} == before
    assert vector_file.stored_digest(store.path, "Triple") == digest
    assert not list((Path(store.path) / vector_file.VECTOR_DIR).glob("*" + vector_file.PREVIOUS))
    # the next build writes the stopped documents again and merges their vectors
    build(names, store, offline(), SMALL)
    twin = open_store("twin")
    build(names[:2], twin, offline(), SMALL)
    build(names[2:], twin, offline(), SMALL)
    assert vectors(store, "Triple") == vectors(twin, "Triple")


def test_an_imported_kg_merges_its_vectors_into_the_files(open_store, tmp_path, monkeypatch) -> None:
    store, twin = open_store("files"), open_store("graph")
    kg = write_kg_files(tmp_path, TSV, "")
    build(corpus(), store, offline(), SMALL)
    legacy_build(monkeypatch, twin, corpus())
    before = vectors(store, "Triple")
    report = import_kg(store, EMB, kg[0])
    assert report.triples == 3
    import_kg(twin, EMB, kg[0])
    for table in vector_home.TABLES:
        assert store.query(f"MATCH (n:{table}) WHERE n.emb IS NOT NULL RETURN count(n) AS c")[0]["c"] == 0
        assert vectors(store, table) == vectors(twin, table)
        assert vector_home.files_digest(vector_home.state(store, table)) == vector_file.stored_digest(store.path, table)
    after = vectors(store, "Triple")
    assert {i: after[i] for i in before} == before and len(after) == len(before) + 3
    assert not search.has_vector_index(store, "Triple")  # no HNSW index over a column Kùzu holds no vector of
    with pytest.raises(GraphStoreError, match="cannot index them"):
        store.ensure_vector_index("Triple")


def test_an_import_whose_vectors_never_reached_the_files_embeds_them_next_time(open_store, tmp_path, monkeypatch) -> None:
    store = open_store()
    kg = write_kg_files(tmp_path, TSV, "")
    build(corpus(), store, offline(), SMALL)
    with monkeypatch.context() as m:
        def stopped(*args: Any, **kwargs: Any) -> None:
            raise KeyboardInterrupt
        m.setattr(search, "prepare_exact_search", stopped)
        with pytest.raises(KeyboardInterrupt):
            import_kg(store, EMB, kg[0])
    triples = [r["id"] for r in store.query("MATCH (t:Triple) WHERE t.origin = 'curated' RETURN t.id AS id")]
    assert len(triples) == 3 and not store.get_embeddings("Triple", triples)  # loaded, no vector anywhere
    again = import_kg(store, EMB, kg[0])
    assert again.triples == 0  # nothing loaded twice
    assert set(store.get_embeddings("Triple", triples)) == set(triples)


def test_tables_left_to_hnsw_or_an_unwritable_folder_keep_their_vectors_in_kuzu(open_store, monkeypatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(vector_file, "writable", lambda workspace: False)
        store = open_store("unwritable")
        build(corpus(), store, offline(), SMALL)
    with monkeypatch.context() as m:
        m.setattr(pipeline, "EXACT_MAX_ROWS", 1)
        hnsw = open_store("hnsw")
        build(corpus(), hnsw, offline(), SMALL)
    for s in (store, hnsw):
        for table in vector_home.TABLES:
            assert vector_home.state(s, table) is None
            assert s.query(f"MATCH (n:{table}) WHERE n.emb IS NOT NULL RETURN count(n) AS c")[0]["c"] > 0


def test_a_row_without_a_vector_reads_as_null_beside_rows_from_the_files(open_store) -> None:
    store = open_store()
    build(corpus(), store, offline(), SMALL)
    docs = [r["id"] for r in store.query("MATCH (d:Document) RETURN d.id AS id ORDER BY id")]
    table = memory_reads.document_entities(store, docs)
    ids = table.column("id").to_pylist()
    # one entity's vector is taken out of the files: it reads as having none, the others keep theirs
    kept = [i for i in sorted(set(ids)) if i != ids[0]]
    found = store.get_embeddings("Entity", kept)
    rows = np.array([found[i] for i in kept], dtype=np.float32)
    vector_file.write(Path(store.path), "Entity", kept, rows, search._normalised)
    vector_home.mark_files(store, "Entity", str(vector_file.stored_digest(store.path, "Entity")))
    again = memory_reads.document_entities(store, docs)
    emb = again.column("emb").to_pylist()
    assert all((v is None) == (i == ids[0]) for i, v in zip(ids, emb))
    assert np.array_equal(np.asarray(emb[ids.index(kept[0])], dtype=np.float32), found[kept[0]])
