"""The build's ket stage makes and stores KET-RAG's keyword view (kgviz.graph.ket_view), so the
first question maps it instead of making it; the files are the bytes the first question would
have stored; a view the build cannot store is logged and the question path still works."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from kgviz.graph import ket_view, vector_file
from kgviz.graph.store import GraphStore
from kgviz.index import ket_build, ket_keywords, pipeline
from kgviz.index.ket import META_KEYWORD_SIGNATURE
from kgviz.ingest import load_paths
from kgviz.methods import ket_cache
from kgviz.methods.base import MethodContext
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.run import run_method
from kgviz.types import Document

ROOT = Path(__file__).resolve().parents[2]
EMB = HashingEmbedder()  # 768 dims: sparse matrices, as in a real offline build
QUESTION = "Who designed the bridge that Mira Tesk said was unsafe?"


def _docs() -> list[Document]:
    return load_paths([ROOT / "sample_data" / "corpus"]).documents


def _build(store: GraphStore, docs: list[Document]) -> Any:
    return pipeline.build(docs, store, Reasoner(OfflineLLM(), EMB), pipeline.BuildParams(workers=1))


def _files(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file of the view: (inode, mtime in ns, bytes)."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir())}


@pytest.fixture()
def store(tmp_path: Path) -> Any:
    s = GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim)
    yield s
    ket_cache.forget(s)
    s.close()


def _refuse_making(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any) -> Any:
        raise AssertionError("the first question made the keyword view")

    monkeypatch.setattr(ket_cache, "_load", refuse)
    monkeypatch.setattr(ket_view, "make_parts", refuse)


def test_the_build_stores_the_view_and_the_first_question_maps_it(store: GraphStore,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    report = _build(store, _docs())
    assert report.ket["keyword_view"] == ket_view.STORED
    folder = ket_view.view_folder(store)
    before = _files(folder)
    assert "key.json" in before and "kw_matrix.data.npy" in before
    ket_cache.forget(store)  # a new process: nothing in memory
    with monkeypatch.context() as m:
        _refuse_making(m)
        view = ket_cache.keyword_view(store)
        run = run_method("ket-rag", QUESTION, MethodContext(store, Reasoner(OfflineLLM(), EMB)))
    assert view is not None and view.signature == store.get_meta(META_KEYWORD_SIGNATURE)
    assert not run.error and run.context.items
    assert _files(folder) == before  # not written again: same inodes, times and bytes


def _long_docs(tmp_path: Path) -> list[Document]:
    """The sample corpus and a document of more than ten chunks (``#c10`` sorts before ``#c2``)
    whose words are not ASCII (``kw:zürich`` after ``kw:zone``, ``kw:ångström`` after both):
    ids made in an order that is not the graph's id order."""
    words = ["Zürich", "Ångström", "café", "zone", "naïve", "Øresund", "über", "Łódź", "delta", "alpha"]
    sentences = [f"The {words[i % 10]}{chr(97 + i % 26)} report {i} named {words[(3 * i) % 10]}{chr(97 + i % 23)} "
                 f"beside item{i % 37} near site{i % 53}." for i in range(600)]
    folder = tmp_path / "long"
    folder.mkdir()
    (folder / "long.txt").write_text(" ".join(sentences), "utf-8")
    return _docs() + load_paths([folder]).documents


def _make_parts_files(store: GraphStore, into: Path) -> dict[str, bytes]:
    """The view's files as ket_view.make_parts (from the graph) and store_parts would write them."""
    key = ket_view.view_key(store, str(store.get_meta(META_KEYWORD_SIGNATURE)))
    arrays = ket_view.parts_arrays(ket_view.make_parts(store))
    assert arrays is not None
    vector_file.write_arrays(into, key, arrays)
    return {p.name: p.read_bytes() for p in sorted(into.iterdir())}


def _vectors_into_the_graph_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The build writes the keyword layer's vectors into the graph as well (as before they were
    kept in the view only), so that make_parts can read them back for a comparison."""
    real = ket_build.build_keywords
    monkeypatch.setattr(ket_build, "build_keywords", lambda *a, **kw: real(*a, **{**kw, "vectors": True}))


@pytest.mark.parametrize("dim", [EMB.dim, 32])  # sparse (hashing, 768) and dense (32-d) vectors
def test_the_build_stores_make_parts_bytes_from_its_own_layer(tmp_path: Path, dim: int,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The build makes the view from the keyword layer it has just written, not from the graph;
    its files are, byte for byte, what make_parts + store_parts write from the stored graph."""
    _vectors_into_the_graph_too(monkeypatch)
    emb = HashingEmbedder(dim)
    s = GraphStore.open(tmp_path / "ws", embedder_id=emb.id, dim=emb.dim)
    try:
        report = pipeline.build(_long_docs(tmp_path), s, Reasoner(OfflineLLM(), emb), pipeline.BuildParams(workers=1))
        assert report.ket["keyword_view"] == ket_view.STORED
        folder = ket_view.view_folder(s)
        by_build = {name: data for name, (_, _, data) in _files(folder).items()}
        from_graph = _make_parts_files(s, tmp_path / "from_graph")
        assert ("kw_matrix.data.npy" in by_build) == (dim == EMB.dim)  # CSC for hashing 768, dense for 32
        assert sorted(by_build) == sorted(from_graph)
        assert [n for n in by_build if by_build[n] != from_graph[n]] == []
        parts = ket_view.stored_parts(s, ket_view.view_key(s, str(s.get_meta(META_KEYWORD_SIGNATURE))))
        assert parts is not None and any(w != w.encode("ascii", "ignore").decode() for w in parts.kw_words)
        assert any(c.endswith("#c10") for c in parts.sub_chunk)
    finally:
        ket_cache.forget(s)
        s.close()


def test_the_build_does_not_read_the_keyword_layer_back_out_of_kuzu(store: GraphStore,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the layer back was the ket stage's peak (issue 29: 9,750 MB at 100k passages)."""
    statements: list[str] = []
    real = store.query_arrow
    monkeypatch.setattr(store, "query_arrow",
                        lambda cypher, params=None: statements.append(cypher) or real(cypher, params))
    report = _build(store, _docs())
    assert report.ket["keyword_view"] == ket_view.STORED and report.counts["Keyword"] > 0
    # every keyword's and sub-chunk's vector, and every HAS_KEYWORD edge (kgviz.graph.reads)
    back = [c for c in statements if "k.emb IS NOT NULL" in c or "s.emb IS NOT NULL" in c or "RETURN k.id, s.id" in c]
    assert back == []
    assert any("Chunk" in c for c in statements)  # the recording saw the build's reads


def test_the_build_stores_the_bytes_the_first_question_would_store(store: GraphStore,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _vectors_into_the_graph_too(monkeypatch)
    _build(store, _docs())
    folder = ket_view.view_folder(store)
    by_build = {name: data for name, (_, _, data) in _files(folder).items()}
    shutil.rmtree(folder)  # as before this change: the first question makes and stores it
    ket_cache.forget(store)
    assert ket_cache.keyword_view(store) is not None
    by_question = {name: data for name, (_, _, data) in _files(folder).items()}
    assert sorted(by_question) == sorted(by_build)
    assert [n for n in by_build if by_build[n] != by_question[n]] == []


def test_a_later_build_keeps_an_up_to_date_view_and_replaces_a_stale_one(store: GraphStore) -> None:
    docs = _docs()
    _build(store, docs[:-2])
    folder = ket_view.view_folder(store)
    first = _files(folder)
    again = _build(store, docs[:-2])
    assert again.ket["keyword_view"] == ket_view.UP_TO_DATE and _files(folder) == first
    grown = _build(store, docs)  # a new keyword layer: a new view under its key
    assert grown.ket["keyword_view"] == ket_view.STORED
    signature = store.get_meta(META_KEYWORD_SIGNATURE)
    assert f'"{signature}"' in (folder / "key.json").read_text() and _files(folder) != first


def test_a_view_the_build_cannot_store_is_logged_and_questions_still_work(
        store: GraphStore, caplog: pytest.LogCaptureFixture) -> None:
    folder = ket_view.view_folder(store)
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the view's folder goes")  # the folder cannot be made
    with caplog.at_level("WARNING", logger="kgviz.graph.ket_view"):
        report = _build(store, _docs())
    assert report.ket["keyword_view"].startswith(ket_view.NOT_STORED + ": ")
    assert any("KET keyword view not stored" in r.getMessage() for r in caplog.records)
    assert report.counts["Keyword"] > 0 and "index" in report.seconds_by_stage  # the build finished
    ket_cache.forget(store)
    run = run_method("ket-rag", QUESTION, MethodContext(store, Reasoner(OfflineLLM(), EMB)))
    assert not run.error and run.context.items and os.path.isfile(folder)


def test_a_view_the_build_cannot_make_is_a_warning_and_the_first_question_makes_it(
        store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgviz.errors import GraphStoreError

    def fail(*_: Any) -> Any:
        raise GraphStoreError("the buffer pool is full")

    with monkeypatch.context() as m:
        m.setattr(ket_view, "parts_from_layer", fail)
        report = _build(store, _docs())
    assert report.ket["keyword_view"] == f"{ket_view.NOT_STORED}: the buffer pool is full"
    assert any("keyword view was not made (the buffer pool is full)" in w for w in report.warnings)
    assert "index" in report.seconds_by_stage and not (ket_view.view_folder(store) / "key.json").exists()
    ket_cache.forget(store)
    assert ket_cache.keyword_view(store) is not None  # made and stored by the first question, as before
    assert (ket_view.view_folder(store) / "key.json").exists()


def _with_vector(store: GraphStore, table: str) -> int:
    return int(store.query(f"MATCH (n:{table}) WHERE n.emb IS NOT NULL RETURN count(n) AS n")[0]["n"])


def test_the_layer_vectors_are_kept_in_the_view_only(store: GraphStore) -> None:
    """Issue 29: the Keyword COPY's 768-float column was most of the ket stage's time and memory,
    and only make_parts (the view made from the graph) read it back."""
    report = _build(store, _docs())
    assert report.ket["keyword_view"] == ket_view.STORED
    assert report.counts["Keyword"] > 0 and report.counts["SubChunk"] > 0
    assert _with_vector(store, "Keyword") == 0 and _with_vector(store, "SubChunk") == 0
    assert store.get_meta(ket_view.META_LAYER_VECTORS) == ket_view.IN_VIEW
    ket_cache.forget(store)
    run = run_method("ket-rag", QUESTION, MethodContext(store, Reasoner(OfflineLLM(), EMB)))
    assert not run.error and run.context.items


def test_a_lost_view_is_a_typed_error_and_the_next_build_makes_it_again(store: GraphStore) -> None:
    from kgviz.errors import GraphStoreError

    docs = _docs()
    _build(store, docs)
    folder = ket_view.view_folder(store)
    before = {name: data for name, (_, _, data) in _files(folder).items()}
    ctx = MethodContext(store, Reasoner(OfflineLLM(), EMB))
    answer = run_method("ket-rag", QUESTION, ctx)
    shutil.rmtree(folder)
    ket_cache.forget(store)
    with pytest.raises(GraphStoreError, match="keyword view is missing or damaged") as err:
        ket_cache.keyword_view(store)
    assert "run the build again" in err.value.hint
    again = _build(store, docs)  # the same documents: the layer's signature is unchanged
    assert again.ket["keyword_view"] == ket_view.STORED and again.ket["keywords_rebuilt"]
    assert any("keyword view, the only copy" in w for w in again.warnings)
    assert {name: data for name, (_, _, data) in _files(folder).items()} == before
    ket_cache.forget(store)
    assert run_method("ket-rag", QUESTION, ctx).context.items == answer.context.items


def test_a_view_the_build_cannot_store_leaves_the_vectors_in_the_graph(
        store: GraphStore, caplog: pytest.LogCaptureFixture) -> None:
    folder = ket_view.view_folder(store)
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the view's folder goes")
    report = _build(store, _docs())
    assert report.ket["keyword_view"].startswith(ket_view.NOT_STORED + ": ")
    assert _with_vector(store, "Keyword") == report.counts["Keyword"] > 0
    assert _with_vector(store, "SubChunk") == report.counts["SubChunk"]
    assert store.get_meta(ket_view.META_LAYER_VECTORS) == ket_view.IN_GRAPH


def test_a_build_killed_before_its_view_is_stored_makes_layer_and_view_again(
        store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _docs()
    with monkeypatch.context() as m:
        def killed(*_: Any, **__: Any) -> Any:
            raise KeyboardInterrupt

        m.setattr(ket_view, "ensure_stored", killed)
        with pytest.raises(KeyboardInterrupt):
            _build(store, docs)
    assert store.get_meta(ket_view.META_LAYER_VECTORS) == ket_view.IN_VIEW and _with_vector(store, "Keyword") == 0
    again = _build(store, docs)
    assert again.ket["keyword_view"] == ket_view.STORED and again.ket["keywords_rebuilt"]
    ket_cache.forget(store)
    run = run_method("ket-rag", QUESTION, MethodContext(store, Reasoner(OfflineLLM(), EMB)))
    assert not run.error and run.context.items


def test_the_view_lets_the_layer_vectors_go_as_it_takes_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The layer holds its keywords in id order, the view's, and the view's keyword matrix lets
    the build's copy of their vectors go a block at a time as its second pass reads them, then
    all of it, before the sub-chunks' matrix is made; the sub-chunks' once theirs is; the
    descriptions' sentences before the view is made (issue 29: the ket stage's peak). The
    stored view is the same (the byte-for-byte tests above)."""
    seen: list[Any] = []
    real_unit_blocks, real_rows = ket_view.unit_blocks, ket_build.layer_rows

    def unit_blocks(n: int, dim: int, rows: Any, *, columns: bool = False, read: Any = None) -> Any:
        seen.append(("keyword matrix" if columns else "sub-chunk matrix", n))
        return real_unit_blocks(n, dim, rows, columns=columns, read=read)

    def layer_rows(layer: Any) -> Any:
        assert layer.keywords.sentences is None and layer.keywords.word_sent is None
        assert layer.keywords.ids == sorted(layer.keywords.ids)
        rows = real_rows(layer)
        release = rows.release_vectors

        def recorded(kind: str, stop: Any) -> None:
            release(kind, stop)
            blocks = layer.keywords.vectors.blocks if kind == "keywords" else []
            seen.append((kind, stop, sum(b is not None for b in blocks)))

        rows.release_vectors = recorded
        return rows

    monkeypatch.setattr(ket_view, "unit_blocks", unit_blocks)
    monkeypatch.setattr(ket_build, "layer_rows", layer_rows)
    monkeypatch.setattr(ket_view, "BLOCK_ROWS", 8)  # several blocks of this small layer
    monkeypatch.setattr(ket_keywords, "KEYWORD_BLOCK", 16)
    s = GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim)
    try:
        report = pipeline.build(_long_docs(tmp_path), s, Reasoner(OfflineLLM(), EMB), pipeline.BuildParams(workers=1))
        assert report.ket["keyword_view"] == ket_view.STORED
        n_kw = seen[0][1]
        assert seen[0][0] == "keyword matrix" and n_kw > 48
        progressive = [x for x in seen if x[0] == "keywords" and x[1] is not None]
        assert [x[1] for x in progressive] == [min(stop, n_kw) for stop in range(8, n_kw + 8, 8)]
        # each block of 16 rows goes once both its halves are read
        assert [x[2] for x in progressive] == [-(-n_kw // 16) - stop // 16 for stop in [x[1] for x in progressive]]
        assert seen[1 + len(progressive):] == [("keywords", None, 0), ("sub-chunk matrix", seen[-2][1]),
                                                ("subchunks", None, 0)]
    finally:
        ket_cache.forget(s)
        s.close()
