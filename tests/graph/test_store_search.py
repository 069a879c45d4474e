"""GraphStore search: HNSW vector search (with and without filters), BM25, PageRank."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kgviz.graph.search as search_module
from kgviz.errors import GraphStoreError
from kgviz.graph.store import GraphStore

DIM = 16


@pytest.fixture()
def store(tmp_path: Path):
    s = GraphStore.open(tmp_path / "ws", embedder_id="test-16", dim=DIM)
    yield s
    s.close()


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)


def load_entities(store: GraphStore, n: int, seed: int, prefix: str, origin: str) -> np.ndarray:
    emb = unit(np.random.default_rng(seed).normal(size=(n, DIM)))
    rows = [{"id": f"{prefix}{i}", "name": f"{prefix}{i}", "origin": origin} for i in range(n)]
    for row, e in zip(rows, emb):
        row["emb"] = e
    store.bulk_load_nodes("Entity", rows)
    return emb


def exact_top(emb: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    return list(np.argsort(-(emb @ q))[:k])


def set_mode(store: GraphStore, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """exact: no index. index: HNSW, small filters searched exactly. hnsw-filter: HNSW and
    every safe filter through Kùzu's projected-graph filtered search. Both index modes lift the
    exact-search ceiling (EXACT_MAX_ROWS) so the small test tables really go through HNSW."""
    if mode != "exact":
        store.ensure_vector_index("Entity")
        monkeypatch.setattr(search_module, "EXACT_MAX_ROWS", 0)
    if mode == "hnsw-filter":
        monkeypatch.setattr(search_module, "EXACT_FILTER_MAX_ROWS", 0)
        monkeypatch.setattr(search_module, "FILTERED_HNSW_MIN_SHARE", 0.0)


MODES = ["exact", "index", "hnsw-filter"]


@pytest.mark.parametrize("indexed", [False, True])
def test_vector_search_finds_planted_neighbour(store: GraphStore, indexed: bool) -> None:
    emb = load_entities(store, 300, seed=1, prefix="c", origin="corpus")
    if indexed:
        store.ensure_vector_index("Entity")
        store.ensure_vector_index("Entity")  # idempotent
    assert store.has_vector_index("Entity") is indexed
    target = emb[123]
    query = unit(target + 0.05 * np.random.default_rng(9).normal(size=DIM))
    hits = store.vector_search("Entity", query, 5)
    assert hits[0][0] == "c123"
    assert hits[0][1] == pytest.approx(float(target @ query), abs=1e-4)
    sims = [s for _, s in hits]
    assert sims == sorted(sims, reverse=True) and len(hits) == 5
    assert [h[0] for h in hits] == [f"c{i}" for i in exact_top(emb, query, 5)]


@pytest.mark.parametrize("mode", MODES)
def test_vector_search_where_filter(store: GraphStore, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = load_entities(store, 300, seed=2, prefix="c", origin="corpus")
    curated = load_entities(store, 40, seed=3, prefix="k", origin="curated")
    set_mode(store, mode, monkeypatch)
    query = corpus[7]  # nearest overall is a corpus entity ...
    top = store.vector_search("Entity", query, 1)[0][0]
    # HNSW is approximate and its graph depends on the build's thread timing: one CI run in many
    # returned another corpus entity than the query's own vector, so only exact search pins c7
    assert top == "c7" if mode == "exact" else top.startswith("c")
    hits = store.vector_search("Entity", query, 5, where={"origin": "curated"})
    # ... but the filter keeps only curated ones, in the exact order
    assert [h[0] for h in hits] == [f"k{i}" for i in exact_top(curated, query, 5)]
    assert store.vector_search("Entity", query, 5, where={"origin": "none such"}) == []
    # a value that cannot be written into a projected-graph filter is searched exactly, verbatim
    store.bulk_load_nodes("Entity", [{"id": "q1", "origin": "it's \"odd\"", "emb": query}])
    assert store.vector_search("Entity", query, 3, where={"origin": "it's \"odd\""}) == [
        ("q1", pytest.approx(1.0, abs=1e-5))
    ]
    with pytest.raises(GraphStoreError, match="no column"):
        store.vector_search("Entity", query, 3, where={"nope": 1})


@pytest.mark.parametrize("mode", MODES)
def test_vector_search_where_int_and_combined(store: GraphStore, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    emb = unit(np.random.default_rng(7).normal(size=(120, DIM)))
    rows = [{"id": f"e{i}", "origin": "curated" if i % 2 else "corpus", "n_mentions": i % 3, "emb": emb[i]}
            for i in range(120)]
    store.bulk_load_nodes("Entity", rows)
    set_mode(store, mode, monkeypatch)
    query = emb[0]
    keep = [i for i in range(120) if i % 3 == 2 and i % 2 == 1]
    expected = [f"e{keep[j]}" for j in exact_top(emb[keep], query, 4)]
    hits = store.vector_search("Entity", query, 4, where={"n_mentions": 2, "origin": "curated"})
    assert [h[0] for h in hits] == expected


def test_vector_index_follows_inserts_and_deletes(store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    load_entities(store, 200, seed=4, prefix="old", origin="corpus")
    set_mode(store, "hnsw-filter", monkeypatch)  # index newer than these rows
    new = load_entities(store, 50, seed=5, prefix="new", origin="curated")  # rows newer than index
    assert store.vector_search("Entity", new[17], 1)[0][0] == "new17"
    assert store.vector_search("Entity", new[17], 1, where={"origin": "curated"})[0][0] == "new17"
    # SET on the indexed column is refused by Kùzu: replace by delete + insert
    with pytest.raises(GraphStoreError, match="index"):
        store.execute("MATCH (e:Entity {id: 'old0'}) SET e.emb = $v", {"v": new[0].tolist()})
    store.execute("MATCH (e:Entity {id: $id}) DETACH DELETE e", {"id": "new17"})
    assert all(h[0] != "new17" for h in store.vector_search("Entity", new[17], 10))
    store.bulk_load_nodes("Entity", [{"id": "new17", "origin": "curated", "emb": -new[17]}])
    assert store.vector_search("Entity", -new[17], 1)[0] == ("new17", pytest.approx(1.0, abs=1e-5))
    # rows without an embedding are never returned
    store.bulk_load_nodes("Entity", [{"id": "bare", "origin": "corpus"}])
    assert "bare" not in {h[0] for h in store.vector_search("Entity", new[3], 300)}


def test_vector_search_input_checks(store: GraphStore) -> None:
    load_entities(store, 3, seed=6, prefix="e", origin="corpus")
    with pytest.raises(GraphStoreError, match="dimension 3"):
        store.vector_search("Entity", [1.0, 0.0, 0.0], 2)
    assert store.vector_search("Entity", np.ones(DIM), 0) == []
    assert len(store.vector_search("Entity", np.ones(DIM), 10)) == 3
    with pytest.raises(GraphStoreError, match="not a vector column|no column"):
        store.vector_search("Extraction", np.ones(DIM), 2)


def test_fts_search_bm25_and_new_rows(store: GraphStore) -> None:
    store.bulk_load_nodes("Chunk", [
        {"id": "c1", "text": "The cat sat on the mat."},
        {"id": "c2", "text": "Dogs chase cats through Paris."},
        {"id": "c3", "text": "Quantum physics is hard."},
    ])
    with pytest.raises(GraphStoreError, match="No full-text index") as info:
        store.fts_search("cat", 3)
    assert "ensure_fts_index" in info.value.user_message()
    store.ensure_fts_index("Chunk")
    store.ensure_fts_index("Chunk")
    hits = store.fts_search("cats in Paris", 3)
    assert hits[0][0] == "c2" and {h[0] for h in hits} == {"c1", "c2"}
    assert hits[0][1] > hits[1][1] > 0
    # rows added after the index was built are searchable without a rebuild
    store.bulk_load_nodes("Chunk", [{"id": "c4", "text": "A zebra crossing in Paris."}])
    store.execute("CREATE (:Chunk {id: 'c5', text: 'zebra zebra zebra'})")
    assert [h[0] for h in store.fts_search("zebra", 5)] == ["c5", "c4"]
    store.execute("MATCH (c:Chunk {id: $id}) DETACH DELETE c", {"id": "c5"})
    assert [h[0] for h in store.fts_search("zebra", 5)] == ["c4"]


def test_fts_search_uses_the_index_under_a_repair_name(store: GraphStore) -> None:
    # an interrupted CREATE_FTS_INDEX blocks its name for good (kgviz.graph.search.FTS_NAME_ATTEMPTS):
    # the repaired index lives under another name, and search and ensure find it by its type
    store.bulk_load_nodes("Chunk", [{"id": "c1", "text": "the harbour master"}, {"id": "c2", "text": "a lighthouse"}])
    store.execute("CALL CREATE_FTS_INDEX('Chunk', 'chunk_fts_1', ['text'])")
    assert search_module.fts_index_of(store, "Chunk") == ("chunk_fts_1", ["text"])
    assert store.ensure_fts_index("Chunk") == search_module.PRESENT
    assert [h[0] for h in store.fts_search("harbour", 5)] == ["c1"]


def test_ensure_fts_index_reports_what_it_did(store: GraphStore) -> None:
    store.bulk_load_nodes("Chunk", [{"id": "c1", "text": "the harbour master"}])
    assert store.ensure_fts_index("Chunk") == search_module.CREATED
    assert store.ensure_fts_index("Chunk") == search_module.PRESENT


@pytest.mark.parametrize("query", [
    "it's \"quoted\"", "}", "cat)", "' OR 1=1 --", "\\", "", "   ", "*", "**", "?", "c?t", "$q", "ünï",
])
def test_fts_search_punctuation_never_fails(store: GraphStore, query: str) -> None:
    store.bulk_load_nodes("Chunk", [{"id": "c1", "text": "the cat's whiskers"}, {"id": "c2", "text": "dog"}])
    store.ensure_fts_index("Chunk")
    hits = store.fts_search(query, 5)
    # wildcards are not honoured: "*" must not return every chunk
    assert all(h[0] == "c1" for h in hits)
    if "cat" in query:
        assert [h[0] for h in hits] == ["c1"]


def test_pagerank_star_centre_highest(store: GraphStore) -> None:
    ids = ["hub"] + [f"leaf{i}" for i in range(6)] + ["island"]
    store.bulk_load_nodes("Chunk", [{"id": i} for i in ids])
    edges = [{"from": f"leaf{i}", "to": "hub", "kind": "semantic", "weight": 1.0} for i in range(6)]
    store.bulk_load_rels("KNN", edges, from_table="Chunk", to_table="Chunk")
    ranks = search_module.pagerank(store, "Chunk", "KNN", damping=0.85)
    assert set(ranks) == set(ids)
    assert max(ranks, key=ranks.get) == "hub"
    leaves = [ranks[f"leaf{i}"] for i in range(6)]
    assert max(leaves) - min(leaves) < 1e-9 and ranks["hub"] > 3 * leaves[0]
    assert ranks["island"] == pytest.approx(leaves[0])
    assert sum(ranks.values()) == pytest.approx(1.0)
    # damping matters: with less damping the hub collects less
    assert search_module.pagerank(store, "Chunk", "KNN", damping=0.5)["hub"] < ranks["hub"]
    with pytest.raises(GraphStoreError, match="does not connect"):
        search_module.pagerank(store, "Chunk", "MENTIONS")


@pytest.mark.parametrize("mode", MODES)
def test_tied_scores_are_cut_by_id_in_every_mode(store: GraphStore, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """80 rows share one score with the query (their vectors are identical); which of them make
    the top k is decided by id, not by the HNSW graph or the row order, in every search path."""
    q = unit(np.eye(DIM)[0])
    same = unit(np.eye(DIM)[0] + np.eye(DIM)[1])  # cosine 0.707 with q, for all 80 rows
    ids = [f"t{i:03d}" for i in range(80)]
    rng = np.random.default_rng(3)
    rows = [{"id": i, "name": i, "origin": "corpus", "emb": same} for i in rng.permutation(ids).tolist()]
    rows.append({"id": "best", "name": "best", "origin": "corpus", "emb": q})
    store.bulk_load_nodes("Entity", rows)
    set_mode(store, mode, monkeypatch)
    where = {"origin": "corpus"} if mode == "hnsw-filter" else None
    hits = store.vector_search("Entity", q, 5, where=where)
    assert [h[0] for h in hits] == ["best", "t000", "t001", "t002", "t003"]
    assert hits[1][1] == pytest.approx(hits[4][1])


def test_fts_ties_past_k_are_cut_by_id(store: GraphStore) -> None:
    """Identical texts score the same BM25; the top k of the tie are the lowest ids, however
    many rows tie beyond the first fetched window."""
    ids = [f"c{i:03d}" for i in range(60)]
    rng = np.random.default_rng(5)
    store.bulk_load_nodes("Chunk", [{"id": i, "text": "zebra crossing"} for i in rng.permutation(ids).tolist()])
    store.ensure_fts_index("Chunk")
    hits = store.fts_search("zebra", 3)
    assert [h[0] for h in hits] == ["c000", "c001", "c002"]


def test_small_tables_are_ranked_exactly_even_with_an_index(store: GraphStore) -> None:
    """Within EXACT_MAX_ROWS a search is exact (HNSW results differ from build to build), and
    the cached matrix ranks exactly like a fresh read of the rows."""
    load_entities(store, 400, seed=11, prefix="e", origin="corpus")
    store.ensure_vector_index("Entity")
    rng = np.random.default_rng(12)
    for _ in range(5):
        q = unit(rng.normal(size=DIM))
        hits = store.vector_search("Entity", q, 10)
        fresh = search_module._exact_search(store, "Entity", np.asarray(q, dtype=np.float32), 10, [])
        assert hits == fresh
        assert len(hits) == 10 and all(hits[i][1] >= hits[i + 1][1] for i in range(9))


def test_the_cached_matrix_follows_writes(store: GraphStore) -> None:
    load_entities(store, 50, seed=13, prefix="a", origin="corpus")
    q = unit(np.eye(DIM)[2])
    first = store.vector_search("Entity", q, 3)
    assert "planted" not in [h[0] for h in first]
    store.bulk_load_nodes("Entity", [{"id": "planted", "name": "planted", "origin": "corpus", "emb": q}])
    again = store.vector_search("Entity", q, 3)
    assert again[0][0] == "planted" and again[0][1] == pytest.approx(1.0, abs=1e-5)


def test_filtered_search_on_the_cached_matrix_equals_a_fresh_read(store: GraphStore) -> None:
    """A filtered exact search picks its rows from the cached matrix (grouped by the filter's
    values once per database state) and returns exactly what reading the matching rows gives."""
    load_entities(store, 300, seed=21, prefix="c", origin="corpus")
    load_entities(store, 60, seed=22, prefix="k", origin="curated")
    rng = np.random.default_rng(23)
    for _ in range(5):
        q = np.asarray(unit(rng.normal(size=DIM)), dtype=np.float32)
        for origin in ("corpus", "curated"):
            cond = [("origin", origin, "STRING")]
            hits = store.vector_search("Entity", q, 7, where={"origin": origin})
            assert hits == search_module._exact_search(store, "Entity", q, 7, cond)
            assert all(h[0].startswith({"corpus": "c", "curated": "k"}[origin]) for h in hits)


def test_the_filtered_rows_follow_writes(store: GraphStore) -> None:
    load_entities(store, 50, seed=24, prefix="k", origin="curated")
    q = unit(np.eye(DIM)[3])
    before = store.vector_search("Entity", q, 3, where={"origin": "curated"})
    assert "planted" not in [h[0] for h in before]
    store.bulk_load_nodes("Entity", [{"id": "planted", "name": "planted", "origin": "curated", "emb": q}])
    after = store.vector_search("Entity", q, 3, where={"origin": "curated"})
    assert after[0][0] == "planted"
    assert store.vector_search("Entity", q, 3, where={"origin": "corpus"}) == []


def sparse_unit_rows(n: int, seed: int, nonzero: int = 3) -> np.ndarray:
    """Unit rows with ``nonzero`` of DIM entries set (the hashing embedder's shape)."""
    rng = np.random.default_rng(seed)
    m = np.zeros((n, DIM), dtype=np.float32)
    for row in m:
        row[rng.choice(DIM, size=nonzero, replace=False)] = rng.normal(size=nonzero)
    return unit(m)


def test_sparse_rows_is_the_matrix_in_csc_made_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    m = sparse_unit_rows(50, seed=31)
    monkeypatch.setattr(search_module, "_SPARSE_BLOCK_ROWS", 7)
    csc = search_module.sparse_rows(m)
    assert csc is not None and csc.shape == m.shape and csc.format == "csc"
    assert csc.has_sorted_indices  # each column's entries in row order
    assert np.array_equal(csc.toarray(), m)
    dense = unit(np.random.default_rng(32).normal(size=(50, DIM)))
    assert search_module.sparse_rows(dense) is None  # model embeddings stay dense


def test_a_sparse_query_reads_only_its_columns_and_scores_bit_for_bit_as_the_whole_product() -> None:
    m = sparse_unit_rows(300, seed=35)
    csc = search_module.sparse_rows(m)
    assert csc is not None
    csr = csc.tocsr()  # the row-by-row product: each row's terms summed in column order
    rng = np.random.default_rng(36)
    for nonzero in (1, 3, 8, DIM):  # a hashing query, and one with no zero entry
        q = np.zeros(DIM, dtype=np.float32)
        q[rng.choice(DIM, size=nonzero, replace=False)] = rng.normal(size=nonzero)
        got = search_module.row_scores(csc, q)
        assert got.dtype == np.float32
        assert np.array_equal(got.view(np.uint32), (csr @ q).view(np.uint32))
        assert got == pytest.approx(m @ q, abs=1e-6)
    assert not np.any(search_module.row_scores(csc, np.zeros(DIM, dtype=np.float32)))


def test_a_sparse_table_is_searched_through_csc_with_the_dense_ranking(store: GraphStore,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    emb = sparse_unit_rows(400, seed=33)
    store.bulk_load_nodes("Entity", [{"id": f"e{i:03d}", "name": f"e{i}", "origin": "corpus", "emb": e}
                                     for i, e in enumerate(emb)])
    rng = np.random.default_rng(34)
    queries = [unit(rng.normal(size=DIM)) for _ in range(8)]
    dense_hits = [store.vector_search("Entity", q, 10) for q in queries]  # 400 rows: under the bound
    assert "Entity|csc" not in store._handle.matrices or store._handle.matrices["Entity|csc"][1] is None
    monkeypatch.setattr(search_module, "SPARSE_SEARCH_MIN_ROWS", 100)
    sparse_hits = [store.vector_search("Entity", q, 10) for q in queries]
    assert store._handle.matrices["Entity|csc"][1] is not None  # this time through the CSC copy
    for d, s in zip(dense_hits, sparse_hits):
        assert [h[0] for h in s] == [h[0] for h in d]
        assert [h[1] for h in s] == pytest.approx([h[1] for h in d], abs=1e-6)
    filtered = store.vector_search("Entity", queries[0], 5, where={"origin": "corpus"})
    assert [h[0] for h in filtered] == [h[0] for h in dense_hits[0][:5]]
    # a write makes a new CSC copy with the new row in it
    store.bulk_load_nodes("Entity", [{"id": "planted", "name": "planted", "origin": "corpus", "emb": queries[1]}])
    assert store.vector_search("Entity", queries[1], 1)[0][0] == "planted"


def _rank_by_rounding_every_row(ids: list[str], scores: np.ndarray, k: int,
                                rows: np.ndarray | None) -> list[tuple[str, float]]:
    """The ranking _rank must give: every score rounded, the k-th best rounded score the cut."""
    rounded = np.round(scores.astype(np.float64), search_module.TIE_DIGITS)
    pool = np.arange(len(ids)) if rows is None else rows
    order = sorted(pool.tolist(), key=lambda i: (-rounded[i], ids[i]))[:k]
    return [(ids[i], float(scores[i])) for i in order]


def test_rank_rounds_only_the_rows_near_the_cut_and_ranks_as_rounding_every_row() -> None:
    rng = np.random.default_rng(37)
    n = 400
    ids = [f"r{i:04d}" for i in rng.permutation(n)]
    matrix = np.eye(n, dtype=np.float32)  # row i scores query[i]
    for trial in range(60):
        # scores bunched on a few values, each a hair above or below a rounding boundary, and
        # exact zeros: ties at TIE_DIGITS decimals that only the id breaks
        base = rng.choice([0.0, 0.25, 0.5000005, 0.7, -0.1], size=n)
        noise = rng.choice([0.0, 1e-7, -1e-7, 4e-7, -6e-7, 3e-6], size=n)
        query = (base + noise).astype(np.float32)
        rows = np.sort(rng.choice(n, size=150, replace=False)) if trial % 2 else None
        for k in (1, 3, 10, 149, 150, 500):
            got = search_module._rank(ids, matrix, query, k, rows=rows)
            want = _rank_by_rounding_every_row(ids, query / np.float32(np.linalg.norm(query)), k, rows)
            assert [g[0] for g in got] == [w[0] for w in want]
            assert [g[1] for g in got] == [w[1] for w in want]


@pytest.mark.parametrize("step", [2, 5, 16])
def test_kth_best_through_a_sample_is_the_kth_largest(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    monkeypatch.setattr(search_module, "_SAMPLE_STEP", step)
    rng = np.random.default_rng(38)
    for n, k in ((50, 1), (400, 3), (1000, 10), (5000, 7), (300, 299)):
        for scores in (rng.normal(size=n).astype(np.float32),  # distinct
                       rng.choice([0.0, 0.1, 0.5], size=n).astype(np.float32),  # mostly ties
                       np.sort(rng.normal(size=n)).astype(np.float32)):  # the best at the end, none sampled
            assert search_module._kth_best(scores, k) == np.sort(scores)[n - k]
