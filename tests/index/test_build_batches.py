"""The build's bounded batches (issue 29): the write stage loads at most
``BuildParams.write_batch_rows`` rows per COPY and the embed stage spills its vectors, and the
stored graph and vector files are the same as with one load per table."""
from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
import scipy.sparse as sp

from tests.index.test_index_pipeline import EMB, open_store  # noqa: F401,F811  (the stores fixture, its embedder)
from tests.support.index_fakes import STORIES, corpus
from kgviz.errors import BuildError
from kgviz.graph import vector_file, vector_home
from kgviz.graph.store import GraphStore
from kgviz.index.pipeline import BuildParams, build
from kgviz.index.spill import SPILL_PREFIX
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner

SMALL = BuildParams(chunk_tokens=24, chunk_overlap=0, workers=2, batch_size=2, similar_docs_k=2, ket_descriptions=False)


def _value(v: Any) -> Any:
    if isinstance(v, list) and v and isinstance(v[0], float):
        return hashlib.sha1(np.asarray(v, dtype=np.float32).tobytes()).hexdigest()  # a vector, bit for bit
    return v


def stored_graph(store: GraphStore) -> dict[str, list[tuple]]:
    """Every row of every node table (every column, vectors bit for bit) and every edge of every
    rel table with its properties, order-free (an Entity's or Triple's vector wherever it is kept,
    kgviz.graph.vector_home); and the bytes of every file under vectors/ (the
    KET plan and keyword view included)."""
    catalog = store._catalog()
    out: dict[str, list[tuple]] = {}
    for table, columns in catalog.nodes.items():
        names = [c for c, _ in columns]
        rows = store.query(f"MATCH (n:{table}) RETURN " + ", ".join(f"n.{c} AS {c}" for c in names))
        if table in vector_home.TABLES:  # each row's vector where it is kept: Kùzu or the vector files
            vectors = store.get_embeddings(table, [r["id"] for r in rows])
            rows = [{**r, "emb": vectors[r["id"]].tolist() if r["id"] in vectors else None} for r in rows]
        if table == "Meta":  # where the vectors are kept is not part of the graph
            rows = [r for r in rows if not str(r["key"]).startswith(vector_home.KEY_PREFIX)]
        out[table] = sorted((tuple(_value(r[c]) for c in names) for r in rows), key=repr)
    for rel, props in catalog.rels.items():
        for a, b in catalog.pairs[rel]:
            ret = ", ".join([f"x.{store._pk(a)} AS f", f"y.{store._pk(b)} AS t"] + [f"r.{p} AS {p}" for p, _ in props])
            rows = store.query(f"MATCH (x:{a})-[r:{rel}]->(y:{b}) RETURN {ret}")
            out[f"{rel}:{a}->{b}"] = sorted((tuple(_value(v) for v in r.values()) for r in rows), key=repr)
    folder = Path(store.path) / vector_file.VECTOR_DIR
    out["files"] = sorted((str(p.relative_to(folder)), p.read_bytes()) for p in folder.rglob("*") if p.is_file())
    return out


def test_small_write_batches_store_the_same_graph(open_store, monkeypatch: pytest.MonkeyPatch) -> None:
    one = open_store("one")
    build(corpus(), one, Reasoner(OfflineLLM(), EMB), SMALL)
    store = open_store("batched")
    sizes: dict[str, list[int]] = {}
    real_nodes, real_rels = store.bulk_load_nodes, store.bulk_load_rels

    def nodes(table: str, rows: Any, **kw: Any) -> int:
        sizes.setdefault(table, []).append(len(rows))
        return real_nodes(table, rows, **kw)

    def rels(rel: str, rows: Any, **kw: Any) -> int:
        sizes.setdefault(rel, []).append(len(rows))
        return real_rels(rel, rows, **kw)

    real_copy = store.copy_edges_into_empty

    def copy(rel: str, batches: Any, scratch: Path, **kw: Any) -> int:  # a first build's edge loads
        def counted() -> Iterator[Any]:
            for rows in batches:
                sizes.setdefault(rel, []).append(len(rows))
                yield rows
        return real_copy(rel, counted(), scratch, **kw)

    monkeypatch.setattr(store, "bulk_load_nodes", nodes)
    monkeypatch.setattr(store, "bulk_load_rels", rels)
    monkeypatch.setattr(store, "copy_edges_into_empty", copy)
    report = build(corpus(), store, Reasoner(OfflineLLM(), EMB), dataclasses.replace(SMALL, write_batch_rows=3))
    for table in ("Chunk", "Entity", "Triple", "FROM_CHUNK", "MENTIONS", "RELATED",  # several loads each
                  "SubChunk", "Keyword", "HAS_KEYWORD"):
        assert len(sizes[table]) > 2 and max(sizes[table]) <= 3, (table, sizes[table])
    assert report.counts == one.counts()
    assert stored_graph(store) == stored_graph(one)


def test_the_embedder_sees_one_pass_of_batches_and_the_spill_goes(open_store, tmp_path: Path) -> None:
    """Vectors are spilled table by table, yet the embedder is called with the batches of one pass
    over every new text (full batches that span tables, then the rest): a neural embedder gives
    the vectors it gave before. The spill folder is gone when the build ends."""
    calls: list[int] = []

    class Counting(HashingEmbedder):
        def embed(self, texts: Any) -> Any:
            calls.append(len(texts))
            return super().embed(texts)

    params = dataclasses.replace(SMALL, ket_enabled=False, embed_batch_size=5)  # no KNN stage: every text here
    report = build(corpus(), open_store("ws"), Reasoner(OfflineLLM(), Counting(64)), params)
    c = report.counts
    total = c["Document"] + c["Chunk"] + c["Entity"] + c["Triple"]
    assert sum(calls) == total and calls[:-1] == [5] * (len(calls) - 1) and 0 < calls[-1] <= 5
    assert not list((tmp_path / "ws").glob(SPILL_PREFIX + "*"))


def test_a_failed_build_leaves_no_spill(open_store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgviz.index import graph_write

    def boom(*a: Any, **kw: Any) -> dict[str, int]:
        raise RuntimeError("disk gone")

    monkeypatch.setattr(graph_write, "write_edges", boom)
    with pytest.raises(RuntimeError, match="disk gone"):
        build(corpus(), open_store("ws"), Reasoner(OfflineLLM(), EMB), SMALL)
    assert not list((tmp_path / "ws").glob(SPILL_PREFIX + "*"))


def test_keyword_vectors_made_a_block_at_a_time_are_the_one_product(monkeypatch: pytest.MonkeyPatch) -> None:
    from kgviz.index import ket_keywords
    from kgviz.index.ket import KetParams

    chunks = [(f"doc:{i}#c0", f"doc:{i}", d.text) for i, d in enumerate(corpus())]
    rules = KetParams().keyword_rules(300)
    whole = ket_keywords.build_keyword_layer(chunks, EMB, rules)
    monkeypatch.setattr(ket_keywords, "KEYWORD_BLOCK", 3)
    blocks = ket_keywords.build_keyword_layer(chunks, EMB, rules)
    assert len(whole.keywords) > 3 * 3
    assert [k["id"] for k in blocks.keywords] == [k["id"] for k in whole.keywords]
    for a, b in zip(blocks.keywords, whole.keywords):
        assert a["emb"].tobytes() == b["emb"].tobytes()  # bit for bit


@pytest.mark.parametrize("dim", [768, 32])
def test_keyword_vectors_are_held_once_and_their_rows_made_a_batch_at_a_time(dim: int,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The layer holds the keyword vectors once, sparse where that is smaller (hashing, 768-d:
    ~16% non-zero; dense for vectors without zeros), and makes a keyword row (description, dense vector)
    only when it is read: the rows read a slice at a time are the rows read one by one, and are
    the vectors' values bit for bit."""
    from kgviz.index import ket_keywords
    from kgviz.index.ket import KetParams

    class Dense(HashingEmbedder):  # no zero entries, as a model's embeddings
        def embed(self, texts: Any) -> Any:
            return super().embed(texts) + np.float32(0.1)

    emb = HashingEmbedder(dim) if dim == 768 else Dense(dim)
    chunks = [(f"doc:{i}#c0", f"doc:{i}", d.text) for i, d in enumerate(corpus())]
    monkeypatch.setattr(ket_keywords, "KEYWORD_BLOCK", 4)
    layer = ket_keywords.build_keyword_layer(chunks, emb, KetParams().keyword_rules(300))
    rows, n = layer.keywords, len(layer.keywords)
    assert n > 3 * 4 and not isinstance(rows, list)
    dense = np.stack([r["emb"] for r in rows])
    assert dense.dtype == np.float32 and dense.shape == (n, dim)
    sparse = [sp.issparse(b) for b in rows.vectors.blocks]
    assert all(sparse) if dim == 768 else not any(sparse)
    if dim == 768:
        assert rows.vectors.nbytes() < 0.5 * dense.nbytes
    one_by_one = [rows[i] for i in range(n)]
    sliced = [r for start in range(0, n, 5) for r in rows[start:start + 5]]
    for a, b, c in zip(one_by_one, sliced, rows):
        assert a["id"] == b["id"] == c["id"] == f"kw:{a['word']}" and a["description"] == b["description"]
        assert a["emb"].tobytes() == b["emb"].tobytes() == c["emb"].tobytes()
    shuffled = np.random.default_rng(3).permutation(n)
    assert rows.vectors.take(shuffled).tobytes() == dense[shuffled].tobytes()
    made: list[int] = []
    real = ket_keywords.KeywordRows.table
    monkeypatch.setattr(ket_keywords.KeywordRows, "table", lambda self, a, b, **kw: made.append(min(b, len(self)) - a) or real(self, a, b, **kw))
    from kgviz.index import ket

    class Store:  # records the Keyword batches write_keyword_layer loads
        loaded: list[Any] = []

        def write_lock(self) -> Any:
            import contextlib
            return contextlib.nullcontext()

        def holds_rows(self, *a: Any) -> bool:
            return True  # the checked path: no scratch folder

        def bulk_load_nodes(self, table: str, batch: Any, new_rows: bool = False) -> None:
            if table == "Keyword":
                Store.loaded.append(batch)

        def bulk_load_rels(self, *a: Any, **kw: Any) -> None:
            pass

        def set_meta(self, *a: Any) -> None:
            pass

    monkeypatch.setattr(ket.writes, "delete_keyword_layer", lambda store: None)
    ket.write_keyword_layer(Store(), layer, "sig", batch_rows=6)  # type: ignore[arg-type]
    assert made == [6] * (n // 6) + ([n % 6] if n % 6 else [])  # a batch's rows, made when it is loaded
    assert [t.num_rows for t in Store.loaded] == [min(6, n - a) for a in range(0, n, 6)]
    loaded = [r for t in Store.loaded for r in t.to_pylist()]
    assert [(r["id"], r["word"], r["description"]) for r in loaded] == \
        [(r["id"], r["word"], r["description"]) for r in one_by_one]
    vectors = np.concatenate([t.column("emb").combine_chunks().flatten().to_numpy() for t in Store.loaded])
    assert vectors.tobytes() == dense.tobytes()
    assert layer.subchunks.texts is None  # written: the sub-chunks' texts are let go
    with pytest.raises(BuildError, match="let go"):
        layer.subchunks[0]


def test_vector_blocks_give_back_the_bits_they_were_given() -> None:
    from kgviz.index.ket_keywords import VectorBlocks

    rng = np.random.default_rng(5)
    m = rng.standard_normal((10, 16)).astype(np.float32)
    m[rng.random(m.shape) < 0.9] = 0.0  # sparse
    m[7, 3] = -0.0  # a negative zero: its block must not lose the sign
    blocks = VectorBlocks(16, 4)
    for b0 in range(0, 10, 4):
        blocks.append(m[b0:b0 + 4])
    assert [sp.issparse(b) for b in blocks.blocks] == [True, False, True]
    order = rng.permutation(10)
    assert blocks.take(order).tobytes() == m[order].tobytes() and blocks.rows(2, 9).tobytes() == m[2:9].tobytes()
    with pytest.raises(ValueError):
        blocks.append(m[:4])  # after a short block


@pytest.mark.parametrize("density", [0.1, 0.9])
def test_a_sparse_product_with_the_blocks_gives_the_dense_products_bits(density: float) -> None:
    """The keywords' vectors are (keyword x sentence) @ the sentences' vectors: with those held
    as CSR (hashing: mostly zero) the product is the one with the dense matrix, bit for bit,
    cancellations and negative values included; denser blocks come back as the dense matrix."""
    from kgviz.index.ket_keywords import VectorBlocks

    rng = np.random.default_rng(11)
    m = rng.standard_normal((50, 24)).astype(np.float32)
    m[rng.random(m.shape) > density] = 0.0
    m[3] = np.where(m[4] != 0, -m[4], np.float32(0))  # rows that cancel in a sum (no negative zero)
    blocks = VectorBlocks(24, 16)
    for b0 in range(0, 50, 16):
        blocks.append(m[b0:b0 + 16])
    held = blocks.matrix()
    assert sp.issparse(held) == (density < 0.5)
    weights = sp.random(30, 50, density=0.3, format="lil", random_state=3, dtype=np.float32)
    weights[2, 3] = weights[2, 4] = 1.0
    weights = weights.tocsr()
    got = weights @ held
    got = got.toarray() if sp.issparse(got) else got
    assert got.dtype == np.float32 and got.tobytes() == np.asarray(weights @ m).tobytes()
    assert VectorBlocks(24, 16).matrix().shape == (0, 24)


def test_embedding_in_blocks_gives_the_vectors_and_batches_of_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from kgviz.index import ket_keywords
    from kgviz.index.embed import embed_texts

    monkeypatch.setattr(ket_keywords, "KEYWORD_BLOCK", 10)  # 10 rows: blocks of 4 batches of 3 (12 rows)
    texts = [f"sentence {i} about Orrin Bridge and Edda Lunn" if i % 3 else f"line {i}" for i in range(29)]
    seen: list[list[str]] = []
    emb = HashingEmbedder()
    real = emb.embed
    monkeypatch.setattr(emb, "embed", lambda batch: seen.append(list(batch)) or real(batch))
    done: list[int] = []
    blocks = ket_keywords.embed_blocks(emb, texts, 3, done.append, None)
    got_batches, seen[:] = list(seen), []
    whole = embed_texts(emb, texts, 3)
    assert blocks.block_rows == 12 and len(blocks) == 29
    assert blocks.rows(0, 29).tobytes() == whole.tobytes()
    assert got_batches == seen  # the embedder saw the same batches
    assert done == sorted(done) and done[-1] == 29


def _batched_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every load takes the checked, batched path of a table that already holds rows."""
    monkeypatch.setattr(GraphStore, "holds_rows", lambda self, table, pair=None: True)


@pytest.mark.parametrize("incremental", [False, True])
def test_loads_into_empty_tables_store_what_the_checked_loads_store(
    open_store, monkeypatch: pytest.MonkeyPatch, incremental: bool
) -> None:
    """A first build loads each of its tables with one COPY per node batch (no key looked up) and
    one COPY of a file per edge table; a later build into the same workspace takes the checked
    path. Either way the graph, its node order and the vector files are those of every load
    checked and batched (the path before issue 29's write stage), built the same way."""
    names = sorted(STORIES)
    steps = [names[:2], names[2:]] if incremental else [names]
    params = dataclasses.replace(SMALL, write_batch_rows=4)
    fast = open_store("fast")
    for docs in steps:
        build(corpus(docs), fast, Reasoner(OfflineLLM(), EMB), params)
    with monkeypatch.context() as m:
        _batched_everywhere(m)
        checked = open_store("checked")
        for docs in steps:
            build(corpus(docs), checked, Reasoner(OfflineLLM(), EMB), params)
    assert stored_graph(fast) == stored_graph(checked)
    for table in ("Document", "Chunk", "Entity", "Triple"):
        assert node_order(fast, table) == node_order(checked, table)


def node_order(store: GraphStore, table: str) -> list[str]:
    return [r["id"] for r in store.query(f"MATCH (n:{table}) RETURN n.id AS id ORDER BY offset(id(n))")]


def test_a_first_build_copies_each_edge_table_once(open_store, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store("ws")
    copies: list[str] = []
    real = GraphStore._statement

    def spy(self: GraphStore, cypher: str, params: Any, *, write: bool, fetch: str) -> Any:
        if cypher.startswith("COPY"):
            copies.append(" ".join(cypher.split()[:2]) + (" file" if params is None else ""))
        return real(self, cypher, params, write=write, fetch=fetch)

    monkeypatch.setattr(GraphStore, "_statement", spy)
    build(corpus(), store, Reasoner(OfflineLLM(), EMB), dataclasses.replace(SMALL, write_batch_rows=3))
    # the keyword layer's edge tables too (they were one checked COPY per batch: issue 29)
    for rel in ("HAS_CHUNK", "FROM_CHUNK", "MENTIONS", "RELATED", "SUB_CHUNK_OF", "HAS_KEYWORD"):
        assert copies.count(f"COPY {rel} file") == 1, (rel, copies)
    assert copies.count("COPY Triple") > 2  # nodes: one COPY per batch
    assert all(c.endswith("file") for c in copies if c.split()[1] in ("FROM_CHUNK", "SUBJ", "OBJ", "MENTIONS"))


def test_a_failed_edge_load_leaves_no_file(open_store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = GraphStore._statement

    def fail_on_from_chunk(self: GraphStore, cypher: str, params: Any, *, write: bool, fetch: str) -> Any:
        if cypher.startswith("COPY FROM_CHUNK"):
            assert list((tmp_path / "ws").rglob("FROM_CHUNK-*.parquet"))  # the file is there while it loads
            raise OSError("disk full")
        return real(self, cypher, params, write=write, fetch=fetch)

    monkeypatch.setattr(GraphStore, "_statement", fail_on_from_chunk)
    with pytest.raises(OSError, match="disk full"):
        build(corpus(), open_store("ws"), Reasoner(OfflineLLM(), EMB), SMALL)
    assert not list((tmp_path / "ws").rglob("*.parquet"))
    assert not list((tmp_path / "ws").glob(SPILL_PREFIX + "*"))
