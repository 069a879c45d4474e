"""KET's in-memory views (kgviz.methods.ket_cache): the triple cosines of the skeleton channel's
tie-break come from the exact search's memory-mapped unit rows, not from a copy of every triple
vector (issue 29); without vector files they are fetched by id and a bounded memo keeps them."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.support.arrays import mapped as is_mapped
from tests.support.fixture_graph import FixtureGraph, build_fixture_graph

from kgviz.graph import ket_view, reads
from kgviz.index.ket import META_KEYWORD_SIGNATURE, KetParams, build_ket_index
from kgviz.methods import ket_cache
from kgviz.methods.ket_descriptions import description_view
from kgviz.providers.embedders import HashingEmbedder
from kgviz.vectors import unit_rows


def _all_triples(kg: FixtureGraph) -> list[str]:
    return [str(r["id"]) for r in reads.triple_facts_all(kg.store)]


def _expected(kg: FixtureGraph, ids: list[str], qv: np.ndarray) -> dict[str, float]:
    """cos(triple, q) as the whole-table copy computed it: unit rows of the stored vectors, one dot each."""
    stored = kg.store.get_embeddings("Triple", ids)
    return {t: float(unit_rows(stored[t][None, :])[0] @ qv) if t in stored else 0.0 for t in ids}


def test_triple_cosines_read_the_files_and_hold_no_copy(kg: FixtureGraph) -> None:
    ids = _all_triples(kg)[:7] + ["no-such-triple"]
    qv = unit_rows(kg.embedder.embed(["Who designed the Harbour Library?"]).astype(np.float32))[0]
    ket_cache.forget(kg.store)
    got = ket_cache.triple_cosines(kg.store, ids, qv)
    assert got == _expected(kg, ids, qv)  # bit for bit
    assert got["no-such-triple"] == 0.0 and any(v > 0 for v in got.values())
    assert ket_cache._key(kg.store) not in ket_cache._TRIPLES  # nothing remembered: the file is the copy


def test_without_vector_files_the_fetched_vectors_are_bounded(kg: FixtureGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = _all_triples(kg)
    assert len(ids) > 6
    qv = unit_rows(kg.embedder.embed(["Where was Owen Hale born?"]).astype(np.float32))[0]
    monkeypatch.setattr(kg.store, "unit_vectors", lambda table, wanted: None)  # HNSW opted into: no files
    monkeypatch.setattr(ket_cache, "TRIPLE_MEMO_MAX", 4)
    ket_cache.forget(kg.store)
    try:
        assert ket_cache.triple_cosines(kg.store, ids[:6], qv) == _expected(kg, ids[:6], qv)
        assert len(ket_cache._TRIPLES[ket_cache._key(kg.store)][1]) == 6
        # past the bound the memo starts over with what the next question needs
        assert ket_cache.triple_cosines(kg.store, ids[6:8], qv) == _expected(kg, ids[6:8], qv)
        assert sorted(ket_cache._TRIPLES[ket_cache._key(kg.store)][1]) == sorted(ids[6:8])
    finally:
        ket_cache.forget(kg.store)


def test_views_read_meta_once_per_database_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The keyword view's signature and the descriptions' stamp are read once per state of the
    database (GraphStore.derived): a comparison ran two statements per KET run for them. A write
    (a new signature) is seen by the next call, which reloads the view."""
    kg = build_fixture_graph(tmp_path / "ws", HashingEmbedder())
    try:
        build_ket_index(kg.store, kg.embedder, KetParams(beta=0.5))
        view = ket_cache.keyword_view(kg.store)
        assert view is not None and description_view(kg.store) is None  # offline: no descriptions
        statements: list[str] = []
        real = kg.store.query

        def query(cypher: str, params: Any = None) -> Any:
            statements.append(cypher)
            return real(cypher, params)

        monkeypatch.setattr(kg.store, "query", query)
        for _ in range(3):
            assert ket_cache.keyword_view(kg.store) is view
            assert description_view(kg.store) is None
        assert statements == []
        kg.store.set_meta(META_KEYWORD_SIGNATURE, "another build")
        again = ket_cache.keyword_view(kg.store)
        assert again is not view and again is not None and again.signature == "another build"
        assert again.kw_ids == view.kw_ids
        assert any("Meta" in s for s in statements)
    finally:
        ket_cache.forget(kg.store)
        kg.store.close()


def test_keyword_matrix_is_held_by_column_and_scores_as_the_row_product(tmp_path: Path) -> None:
    """Hashing keyword vectors are mostly zeros: the view holds them as CSC, which the keyword
    pool multiplies at the question's nonzero columns only, every cosine equal to the CSR
    (row by row) product's, bit for bit."""
    from kgviz.graph.search import row_scores

    kg = build_fixture_graph(tmp_path / "ws", HashingEmbedder())
    try:
        build_ket_index(kg.store, kg.embedder, KetParams(beta=0.5))
        view = ket_cache.keyword_view(kg.store)
        assert view is not None and view.kw_matrix.format == "csc"
        rows = view.kw_matrix.tocsr()
        for q in ("Who designed the Harbour Library?", "Which sea is Valencia on?", "river"):
            qv = np.asarray(kg.embedder.embed([q]), dtype=np.float32)[0]
            assert 0 < np.count_nonzero(qv) < len(qv)
            got = row_scores(view.kw_matrix, qv)
            assert np.array_equal(got.view(np.uint32), (rows @ qv).view(np.uint32))
    finally:
        ket_cache.forget(kg.store)
        kg.store.close()


# --- the view stored in the workspace (issue 29: ~10 s per process at 10,000 passages) ----------------
def _same_view(a: ket_cache.KeywordView, b: ket_cache.KeywordView) -> None:
    import scipy.sparse as sp

    for name in ("signature", "kw_ids", "kw_words", "sub_ids", "sub_chunk", "chunk_label", "sub_index", "by_chunk",
                 "word_row"):
        assert getattr(a, name) == getattr(b, name), name
    for name in ("kw_matrix", "kw_sub", "sub_matrix", "sub_tokens", "kw_df"):
        x, y = getattr(a, name), getattr(b, name)
        if sp.issparse(x):
            assert sp.issparse(y) and x.format == y.format and x.shape == y.shape, name
            for part in ("data", "indices", "indptr"):
                assert getattr(x, part).dtype == getattr(y, part).dtype, (name, part)
                assert np.array_equal(getattr(x, part), getattr(y, part)), (name, part)
        else:
            assert not sp.issparse(y) and x.dtype == y.dtype and np.array_equal(x, y), name


@pytest.fixture()
def ket_graph(tmp_path: Path):
    kg = build_fixture_graph(tmp_path / "ws", HashingEmbedder())
    build_ket_index(kg.store, kg.embedder, KetParams(beta=0.5))
    ket_cache.forget(kg.store)
    yield kg
    ket_cache.forget(kg.store)
    kg.store.close()


def _no_graph_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any) -> Any:
        raise AssertionError("the view was made from the graph, not mapped from the workspace")

    monkeypatch.setattr(ket_cache, "_load", refuse)


def test_the_keyword_view_is_stored_once_and_mapped_by_the_next_process(ket_graph: FixtureGraph,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    made = ket_cache.keyword_view(ket_graph.store)
    assert made is not None
    folder = ket_view.view_folder(ket_graph.store)
    assert (folder / "key.json").exists()
    reference = ket_cache._load(ket_graph.store, made.signature)
    ket_cache.forget(ket_graph.store)  # a new process: nothing in memory
    with monkeypatch.context() as m:
        _no_graph_reads(m)
        mapped = ket_cache.keyword_view(ket_graph.store)
    assert mapped is not None and mapped is not made
    _same_view(mapped, reference)
    assert is_mapped(mapped.kw_matrix.data) and is_mapped(mapped.sub_matrix.indices) and not is_mapped(reference.kw_matrix.data)
    # the product a question makes: bit for bit the one of the view made from the graph
    from kgviz.graph.search import row_scores

    qv = np.asarray(ket_graph.embedder.embed(["Who designed the Harbour Library?"]), dtype=np.float32)[0]
    assert np.array_equal(row_scores(mapped.kw_matrix, qv).view(np.uint32),
                          row_scores(reference.kw_matrix, qv).view(np.uint32))
    rows = np.arange(min(5, len(mapped.sub_ids)))
    assert np.array_equal(mapped.sub_matrix[rows] @ qv, reference.sub_matrix[rows] @ qv)


def test_a_stored_view_of_another_keyword_layer_is_never_used(ket_graph: FixtureGraph,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    first = ket_cache.keyword_view(ket_graph.store)
    assert first is not None
    # a rebuilt layer (new signature): made from the graph again, and stored under the new key
    ket_graph.store.set_meta(META_KEYWORD_SIGNATURE, "another build")
    ket_cache.forget(ket_graph.store)
    loads: list[str] = []
    real = ket_cache._load
    monkeypatch.setattr(ket_cache, "_load", lambda store, sig: loads.append(sig) or real(store, sig))
    again = ket_cache.keyword_view(ket_graph.store)
    assert loads == ["another build"] and again is not None and again.signature == "another build"
    assert '"another build"' in (ket_view.view_folder(ket_graph.store) / "key.json").read_text()
    # same signature, fewer keyword rows (a layer a killed build left half written): not the stored one
    ket_graph.store.execute("MATCH (k:Keyword) WITH k ORDER BY k.id LIMIT 1 DETACH DELETE k")
    ket_cache.forget(ket_graph.store)
    fewer = ket_cache.keyword_view(ket_graph.store)
    assert loads == ["another build"] * 2 and fewer is not None and len(fewer.kw_ids) == len(again.kw_ids) - 1


@pytest.mark.parametrize("damage", ["truncated", "other shape", "key not json"])
def test_a_damaged_stored_view_is_made_again(ket_graph: FixtureGraph, caplog: pytest.LogCaptureFixture,
                                             damage: str) -> None:
    made = ket_cache.keyword_view(ket_graph.store)
    assert made is not None
    folder = ket_view.view_folder(ket_graph.store)
    if damage == "truncated":
        raw = (folder / "kw_matrix.data.npy").read_bytes()
        (folder / "kw_matrix.data.npy").write_bytes(raw[: len(raw) - 8])
    elif damage == "other shape":
        np.save(folder / "sub_tokens.npy", np.zeros(2, dtype=np.int64))
    else:
        (folder / "key.json").write_text("{")
    ket_cache.forget(ket_graph.store)
    with caplog.at_level("WARNING", logger="kgviz.graph.vector_file"):
        again = ket_cache.keyword_view(ket_graph.store)
    assert again is not None
    _same_view(again, ket_cache._load(ket_graph.store, made.signature))
    assert any("damaged" in r.getMessage() for r in caplog.records)
    ket_cache.forget(ket_graph.store)  # stored whole again: the next process maps it
    assert vector_file_arrays(ket_graph) is not None


def vector_file_arrays(kg: FixtureGraph) -> Any:
    from kgviz.graph import vector_file

    sig = kg.store.get_meta(META_KEYWORD_SIGNATURE)
    return vector_file.load_arrays(ket_view.view_folder(kg.store), ket_view.view_key(kg.store, sig))
