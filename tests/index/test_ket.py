"""KET-RAG indexing: the KNN chunk graph (sparse build == brute force), PageRank (== Kùzu's), core
chunk selection (β fraction, seeded random), sub-chunks + keyword nodes, store writes and the
Build-page helpers."""
from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from kgviz.errors import ConfigError
from kgviz.graph import search
from kgviz.graph.store import GraphStore
from kgviz.index import ket
from kgviz.index.ket import KetParams, build_ket_index, core_chunks, knn_degree_distribution, plan_core
from kgviz.index.ket_keywords import KeywordRules, build_keyword_layer
from kgviz.index.knn import LEXICAL, SEMANTIC, build_knn, content_words, pagerank
from kgviz.offline.stopwords import STOPWORDS
from kgviz.providers.embedders import HashingEmbedder, l2_normalise
from kgviz.text import count_tokens, split_sentences

EMB = HashingEmbedder(64)
VOCAB = ("harbour library lisbon tagus river valencia spain architect opera cardiff wales composer "
         "museum bridge tower castle port island mountain forest desert glacier canal railway "
         "station theatre festival orchestra painter poet novel treaty battle empire kingdom "
         "republic council senate harvest vineyard comet planet telescope engine turbine").split()


def synthetic_texts(n: int, seed: int = 7, words: int = 12) -> list[str]:
    """Sentences from a small vocabulary, so co-occurrence counts tie often (tests the tie rule)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        picked = rng.sample(VOCAB, words)
        out.append(f"The {picked[0]} and the {picked[1]} are near the {' '.join(picked[2:6])}. "
                   f"A {picked[6]} of {picked[7]} saw {' and '.join(picked[8:])}.")
    return out


def brute_force(texts: list[str], emb: np.ndarray, k: int, exclude: bool) -> set[tuple[int, int, str]]:
    """Algorithm 3 lines 3-6 pair by pair, with the same tie rule (best first, then lower index)."""
    words = [set(content_words(t)) for t in texts]
    e = l2_normalise(emb)
    edges: set[tuple[int, int, str]] = set()
    for i in range(len(texts)):
        lex = sorted(((len(words[i] & words[j]), j) for j in range(len(texts)) if j != i), key=lambda x: (-x[0], x[1]))
        lexical = [j for s, j in lex if s > 0][: k // 2]
        sem = sorted(((float(e[i] @ e[j]), j) for j in range(len(texts)) if j != i and not (exclude and j in lexical)),
                     key=lambda x: (-x[0], x[1]))
        semantic = [j for s, j in sem if s > 0][: k // 2]
        edges |= {(i, j, LEXICAL) for j in lexical} | {(i, j, SEMANTIC) for j in semantic}
    return edges


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("exclude", [True, False])
def test_sparse_knn_equals_brute_force(k: int, exclude: bool) -> None:
    texts = synthetic_texts(23)
    emb = EMB.embed(texts)
    g = build_knn(texts, emb, k, exclude_lexical=exclude, tile=5)  # several tiles, a ragged last one
    got = set(zip(g.src.tolist(), g.dst.tolist(), g.kind.tolist()))
    assert got == brute_force(texts, emb, k, exclude)
    words = [set(content_words(t)) for t in texts]
    for s, d, kind, w in zip(g.src.tolist(), g.dst.tolist(), g.kind.tolist(), g.weight.tolist()):
        expected = len(words[s] & words[d]) if kind == LEXICAL else float(l2_normalise(emb)[s] @ l2_normalise(emb)[d])
        assert w == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("k", [2, 4, 10])
def test_knn_degree_and_no_self_loops(k: int) -> None:
    texts = synthetic_texts(40, seed=3)
    g = build_knn(texts, EMB.embed(texts), k)
    assert not np.any(g.src == g.dst)
    def out_degree(kind: str | None = None) -> np.ndarray:
        mask = np.ones(g.src.size, bool) if kind is None else g.kind == kind
        return np.bincount(g.src[mask], minlength=g.n)

    assert out_degree(LEXICAL).max() <= k // 2 and out_degree(SEMANTIC).max() <= k // 2
    # these texts all share words and have positive cosines, so every chunk gets its full K
    assert (out_degree() == k).all()
    # paper line 5: semantic neighbours exclude the lexical ones, so no pair is linked twice
    pairs = list(zip(g.src.tolist(), g.dst.tolist()))
    assert len(pairs) == len(set(pairs))


def test_knn_skips_unrelated_chunks_and_rejects_odd_k() -> None:
    texts = ["alpha beta gamma delta", "alpha beta gamma epsilon", "zzzz qqqq"]
    g = build_knn(texts, EMB.embed(texts), 2)
    lex = {(s, d) for s, d, kind in zip(g.src.tolist(), g.dst.tolist(), g.kind.tolist()) if kind == LEXICAL}
    assert lex == {(0, 1), (1, 0)}  # the third text shares no keyword with anything
    with pytest.raises(ConfigError):
        build_knn(texts, EMB.embed(texts), 3)
    with pytest.raises(ConfigError):
        KetParams(k=1)


def dense_pagerank(n: int, src: np.ndarray, dst: np.ndarray, damping: float, undirected: bool) -> np.ndarray:
    a = np.zeros((n, n))
    for s, d in zip(src, dst):
        if undirected:
            a[s, d] = a[d, s] = 1.0
        else:
            a[s, d] += 1.0
    out = a.sum(axis=1)
    r = np.full(n, 1.0 / n)
    for _ in range(2000):
        spread = np.array([r[i] / out[i] if out[i] else 0.0 for i in range(n)]) @ a
        r = damping * (spread + r[out == 0].sum() / n) + (1 - damping) / n
    return r / r.sum()


@pytest.mark.parametrize("undirected", [False, True])
def test_pagerank_matches_dense_reference(undirected: bool) -> None:
    texts = synthetic_texts(30, seed=11)
    g = build_knn(texts, EMB.embed(texts), 2, exclude_lexical=not undirected)
    got = pagerank(g.n, g.src, g.dst, damping=0.85, undirected=undirected)
    assert got.sum() == pytest.approx(1.0)
    assert np.allclose(got, dense_pagerank(g.n, g.src, g.dst, 0.85, undirected), atol=1e-9)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GraphStore]:
    s = GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim)
    yield s
    s.close()


def load_chunks(store: GraphStore, texts: list[str], n_docs: int = 3) -> list[str]:
    docs = [{"id": f"doc:{d}", "title": f"Doc {d}", "source": "t", "sha256": str(d), "text": "", "n_tokens": 0}
            for d in range(n_docs)]
    ids = [f"doc:{i % n_docs}#c{i // n_docs}" for i in range(len(texts))]
    rows = [{"id": c, "doc_id": c.split("#")[0], "ord": int(c.split("#c")[1]), "text": t,
             "n_tokens": count_tokens(t), "emb": e} for c, t, e in zip(ids, texts, EMB.embed(texts))]
    store.bulk_load_nodes("Document", docs)
    store.bulk_load_nodes("Chunk", rows)
    store.bulk_load_rels("HAS_CHUNK", [{"from": r["doc_id"], "to": r["id"]} for r in rows],
                         from_table="Document", to_table="Chunk")
    return ids


def test_own_pagerank_is_kuzus_iteration_run_to_convergence(store: GraphStore) -> None:
    """Core chunks are chosen before the chunks are stored (only core chunks are extracted), so
    kgviz.index.knn.pagerank computes them; this pins it to Kùzu's page_rank on the same KNN
    edges. Kùzu stops after a fixed number of iterations (20 by default), so the same iteration
    cut off there must match it exactly, and the converged ranks stay close."""
    texts = synthetic_texts(25, seed=5)
    ids = load_chunks(store, texts)
    plan = plan_core(ids, texts, EMB.embed(texts), KetParams())
    ket.write_core(store, plan, skeleton_beta=1.0)
    kuzu = search.pagerank(store, "Chunk", "KNN", damping=0.85)
    assert set(kuzu) == set(plan.ids)
    g = plan.knn

    def gap(ranks: np.ndarray) -> float:
        return max(abs(kuzu[c] - v) for c, v in zip(plan.ids, ranks.tolist()))

    assert min(gap(pagerank(g.n, g.src, g.dst, damping=0.85, max_iter=i, tol=0.0)) for i in range(15, 26)) < 1e-9
    assert gap(plan.pagerank) < 5e-3


@pytest.mark.parametrize("beta", [0.1, 0.25, 0.5, 0.8, 1.0])
def test_pagerank_core_is_the_top_beta_fraction(beta: float) -> None:
    texts = synthetic_texts(37, seed=2)
    ids = [f"c{i:02d}" for i in range(37)]
    plan = plan_core(ids, texts, EMB.embed(texts), KetParams(beta=beta))
    assert len(plan.core) == math.ceil(beta * 37)
    pr = dict(zip(plan.ids, plan.pagerank.tolist()))
    worst_core = min(pr[c] for c in plan.core)
    assert all(pr[c] <= worst_core for c in set(ids) - plan.core)
    assert plan.core_in_order() == plan.ranking[: len(plan.core)]


def test_ceil_beta_has_no_float_noise() -> None:
    assert ket.n_core(10, 0.7) == 7 and ket.n_core(10, 0.71) == 8 and ket.n_core(3, 1.0) == 3


def test_random_selection_is_seeded_nested_and_order_free() -> None:
    texts = synthetic_texts(50, seed=4)
    ids = [f"c{i:02d}" for i in range(50)]
    emb = EMB.embed(texts)
    a = plan_core(ids, texts, emb, KetParams(beta=0.4, selection="random", seed=1))
    b = plan_core(ids[::-1], texts[::-1], emb[::-1], KetParams(beta=0.4, selection="random", seed=1))
    c = plan_core(ids, texts, emb, KetParams(beta=0.4, selection="random", seed=2))
    bigger = plan_core(ids, texts, emb, KetParams(beta=0.6, selection="random", seed=1))
    assert a.core == b.core and len(a.core) == 20
    assert a.core != c.core
    assert a.core < bigger.core
    p = plan_core(ids, texts, emb, KetParams(beta=0.4))
    assert p.core != a.core  # PageRank and uniform pick different chunks here
    # the KNN graph itself does not depend on input order either
    pr_a = dict(zip(p.ids, p.pagerank.tolist()))
    q = plan_core(ids[::-1], texts[::-1], emb[::-1], KetParams(beta=0.4))
    assert q.core == p.core and all(pr_a[c] == pytest.approx(v) for c, v in zip(q.ids, q.pagerank.tolist()))


CHUNKS = [
    ("d1#c0", "d1", "Marta Ruiz designed the Harbour Library in Lisbon. The library opened in 1998. "
                    "Its reading room faces the Tagus river."),
    ("d2#c0", "d2", "Lisbon is the capital of Portugal. The Tagus river reaches the ocean at Lisbon."),
    ("d3#c0", "d3", "Owen Hale wrote the opera Quiet Harbour. It was first staged in Cardiff in 2009."),
    ("d4#c0", "d4", "Cardiff is the capital of Wales. The library of Cardiff is old."),
]


def sentences_with(word: str, subchunk_texts: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for t in subchunk_texts:
        for s in split_sentences(t):
            if word in content_words(s):
                seen.setdefault(s, None)
    return list(seen)


def test_keyword_layer_nodes_descriptions_and_mean_embeddings() -> None:
    layer = build_keyword_layer(CHUNKS, EMB, KeywordRules(tau=1, keyword_df_floor=100))
    subs = {r["id"]: r for r in layer.subchunks}
    assert {r["chunk_id"] for r in layer.subchunks} == {c for c, _, _ in CHUNKS}
    assert all(r["id"].startswith(r["chunk_id"] + ".s") and r["n_tokens"] == count_tokens(r["text"]) for r in subs.values())
    assert len(layer.subchunks) == 8  # τ = 1: every chunk (several sentences) halves
    words = {k["word"]: k for k in layer.keywords}
    assert "tagus" in words and "lisbon" in words and "1998" in words
    assert not set(words) & STOPWORDS and all(len(w) >= 3 for w in words)
    texts = [r["text"] for r in layer.subchunks]
    for w in ("lisbon", "library", "capital", "cardiff"):
        sents = sentences_with(w, texts)
        assert words[w]["description"] == " ".join(sents)
        expected = l2_normalise(EMB.embed(sents).mean(axis=0, keepdims=True))[0]
        assert np.allclose(words[w]["emb"], expected, atol=1e-5)
        linked = {e["from"] for e in layer.has_keyword if e["to"] == f"kw:{w}"}
        assert linked == {sid for sid, r in subs.items() if w in content_words(r["text"])}
    for r in layer.subchunks:
        assert np.isclose(np.linalg.norm(r["emb"]), 1.0, atol=1e-5)


def test_keyword_links_are_index_arrays_whose_rows_and_tables_agree() -> None:
    """HAS_KEYWORD edges are kept as two index arrays (issue 29: a dict per edge was most of a
    gigabyte at 100k passages): iterating them gives the edge rows sorted by sub-chunk then
    keyword, and the Arrow slices the writer loads, put together, are the same rows."""
    rules = KeywordRules(tau=1, keyword_df_floor=20)
    layer = build_keyword_layer(CHUNKS, EMB, rules)
    rows = list(layer.has_keyword)
    assert len(rows) == len(layer.has_keyword) > 0
    position = {r["id"]: i for i, r in enumerate(layer.subchunks)}
    kw_position = {k["id"]: i for i, k in enumerate(layer.keywords)}
    keys = [(position[e["from"]], kw_position[e["to"]]) for e in rows]
    assert keys == sorted(set(keys))  # by sub-chunk, then keyword; no repeats
    sliced = [layer.has_keyword.table(start, start + 7).to_pylist() for start in range(0, len(rows), 7)]
    assert [e for part in sliced for e in part] == rows
    assert layer.has_keyword.table(len(rows), len(rows) + 7).num_rows == 0


def test_keyword_layer_drops_common_words_and_caps_descriptions() -> None:
    chunks = [(f"d{i}#c0", f"d{i}", f"Common words everywhere here. Item number{i} is unique to chunk{i}.")
              for i in range(12)]
    layer = build_keyword_layer(chunks, EMB, KeywordRules(tau=0, keyword_max_df=0.25, keyword_df_floor=2,
                                                          description_max_sentences=1))
    words = {k["word"]: k for k in layer.keywords}
    assert layer.df_limit == 3
    assert "common" not in words and "everywhere" not in words and layer.n_dropped_common >= 3
    assert "number3" in words and "chunk3" in words
    one = build_keyword_layer(CHUNKS, EMB, KeywordRules(tau=0, keyword_df_floor=100, description_max_sentences=1))
    lisbon = next(k for k in one.keywords if k["word"] == "lisbon")
    assert lisbon["description"].endswith("more sentences]") and lisbon["description"].count("Lisbon") >= 1


def test_build_ket_index_writes_the_store_and_is_idempotent(store: GraphStore) -> None:
    texts = synthetic_texts(20, seed=9)
    load_chunks(store, texts)
    report = build_ket_index(store, EMB, KetParams(beta=0.5), chunk_tokens=300)
    c = store.counts()
    assert report.n_chunks == 20 and report.n_core == 10 and report.keywords_rebuilt and report.tau == 1
    assert c["KNN"] == sum(report.knn_edges.values()) == 40
    # τ = 1 for 300-token chunks, but these short texts are already near the ~150-token target: kept whole
    assert c["SubChunk"] == c["SUB_CHUNK_OF"] == report.keyword_stats["subchunks"] == 20
    assert c["Keyword"] == report.keyword_stats["keywords"] > 20 and c["HAS_KEYWORD"] == report.keyword_stats["has_keyword"]
    assert store.query("MATCH (c:Chunk) WHERE c.core RETURN count(*) AS n")[0]["n"] == 10
    info = ket.ket_info(store)
    assert info["beta"] == 0.5 and info["skeleton_beta"] == 1.0 and info["n_core"] == 10
    again = build_ket_index(store, EMB, KetParams(beta=0.5), chunk_tokens=300)
    assert not again.keywords_rebuilt and store.counts() == c
    # a different β re-marks the core without touching the keyword layer
    build_ket_index(store, EMB, KetParams(beta=0.3), chunk_tokens=300)
    assert store.query("MATCH (c:Chunk) WHERE c.core RETURN count(*) AS n")[0]["n"] == 6
    assert store.counts()["KNN"] == 40 and store.counts()["Keyword"] == c["Keyword"]


def test_build_page_helpers(store: GraphStore) -> None:
    texts = synthetic_texts(15, seed=13)
    load_chunks(store, texts)
    assert ket.ket_info(store) == {}
    build_ket_index(store, EMB, KetParams(beta=0.4))
    hist = knn_degree_distribution(store)
    assert sum(hist.values()) == 15 and sum(d * n for d, n in hist.items()) == 2 * store.counts()["KNN"]
    top = core_chunks(store, limit=3)
    assert len(top) == 3 and [p for _, p, _ in top] == sorted((p for _, p, _ in top), reverse=True)
    core_ids = {r["id"] for r in store.query("MATCH (c:Chunk) WHERE c.core RETURN c.id AS id")}
    assert {c for c, _, _ in top} <= core_ids and len(core_ids) == 6
    assert all(0 < len(x) <= ket.EXCERPT_CHARS for _, _, x in top)


def test_skeleton_cost_compares_core_with_every_chunk() -> None:
    chunks = [(f"c{i}", t, count_tokens(t)) for i, t in enumerate(synthetic_texts(10))]
    cost = ket.skeleton_cost(chunks, {"c0", "c1"}, 0.2, expected_output_ratio=0.5, actual_input=100, actual_output=20)
    assert cost.n_core == 2 and cost.n_chunks == 10
    assert 0.15 < cost.skeleton_estimate_tokens / cost.full_estimate_tokens < 0.25
    d = cost.to_dict()
    assert d["full_extrapolated_tokens"] == round(120 * cost.full_estimate_tokens / cost.skeleton_estimate_tokens)
    assert 0.75 < d["estimated_saving"] < 0.85


# --- the build pipeline with KET enabled -------------------------------------------------------------
PEOPLE = ["Ana Pell", "Oskar Linde", "Mira Tesk", "Jon Varr", "Kell Arden", "Lena Ostrow", "Piet Haan", "Rosa Quell"]
TOWNS = ["Aldport", "Dunmore", "Halberg", "Veyn", "Sarnfield", "Castell", "Brenna"]
FIRMS = ["Tesk Works", "Pell Glassworks", "Linde Foundry", "Varr Press", "Ostrow Mills", "Haan Brewery"]


def synthetic_docs(n: int, seed: int = 21) -> list:
    """Short biographies the offline extractor reads triples from, with varied lengths."""
    from kgviz.ingest import document_from_text

    rng = random.Random(seed)
    docs = []
    for i in range(n):
        p, t, f, t2 = rng.choice(PEOPLE), rng.choice(TOWNS), rng.choice(FIRMS), rng.choice(TOWNS)
        text = (f"{p} was born in {t} in {rng.randint(1800, 1899)}. {p} founded {f} in {rng.randint(1900, 1950)}. "
                f"{f} is located in {t2}. " + " ".join(rng.sample(VOCAB, rng.randint(3, 12))) + ".")
        docs.append(document_from_text(text, title=f"Doc {i}", source=f"d{i}.txt"))
    return docs


def build_with(store: GraphStore, docs: list, llm: object | None = None, **fields: object) -> tuple[object, list]:
    from kgviz.index.pipeline import BuildParams, build
    from kgviz.providers.offline import OfflineLLM
    from kgviz.reasoning import Reasoner

    events: list = []
    report = build(docs, store, Reasoner(llm or OfflineLLM(), EMB), BuildParams(workers=2, **fields),
                   progress=events.append)
    return report, events


def test_ket_build_stages_extract_core_chunks_only(store: GraphStore) -> None:
    from kgviz.index.pipeline import STAGES

    report, events = build_with(store, synthetic_docs(30), ket_enabled=True, core_fraction=0.5)
    stages = list(dict.fromkeys(e.stage for e in events))
    assert stages == [s for s in STAGES if s in stages]
    assert stages[:3] == ["chunk", "knn", "extract"] and stages[-2:] == ["ket", "index"]
    c = report.counts
    n = c["Chunk"]
    core = {r["id"] for r in store.query("MATCH (c:Chunk) WHERE c.core RETURN c.id AS id")}
    assert len(core) == math.ceil(0.5 * n) == report.extracted_chunks
    extracted = {r["id"] for r in store.query("MATCH (x:Extraction) RETURN x.chunk_id AS id")}
    assert extracted == core  # Algorithm 3 line 9: the skeleton comes from core chunks only
    from_chunks = {r["c"] for r in store.query("MATCH (:Triple)-[:FROM_CHUNK]->(c:Chunk) RETURN DISTINCT c.id AS c")}
    assert from_chunks and from_chunks <= core
    # short documents stay one sub-chunk each (already near the ~150-token target)
    assert c["KNN"] == 2 * n and c["SubChunk"] == c["SUB_CHUNK_OF"] >= n and c["Keyword"] > 0 and c["HAS_KEYWORD"] > 0
    k = report.ket
    assert k["n_core"] == len(core) and k["skeleton_beta"] == pytest.approx(len(core) / n)
    assert ket.ket_info(store)["skeleton_beta"] == pytest.approx(len(core) / n)
    assert set(report.to_dict()["seconds_by_stage"]) == set(STAGES)
    # the knn stage's chunk vectors are the ones stored (embedded once, reused by the embed stage)
    rows = store.query("MATCH (c:Chunk) RETURN c.id AS id, c.text AS text ORDER BY c.id LIMIT 5")
    stored = store.get_embeddings("Chunk", [r["id"] for r in rows])
    assert np.allclose(np.stack([stored[r["id"]] for r in rows]), EMB.embed([r["text"] for r in rows]), atol=1e-6)


def test_default_build_has_a_full_kg_and_the_ket_layer(store: GraphStore) -> None:
    """BuildParams defaults: KET on with β = 1, so every chunk is extracted (a complete KG for the
    other methods) and every chunk is core; the keyword layer is there for ket-rag / keyword-rag."""
    report, events = build_with(store, synthetic_docs(8))
    c = report.counts
    assert report.extracted_chunks == c["Chunk"] == c["Extraction"]
    assert c["KNN"] == 2 * c["Chunk"] and c["Keyword"] > 0 and c["SubChunk"] >= c["Chunk"]
    info = ket.ket_info(store)
    assert info["beta"] == 1.0 and info["skeleton_beta"] == 1.0 and info["n_core"] == c["Chunk"]
    assert report.ket["cost"]["skeleton_estimate_tokens"] == report.ket["cost"]["full_estimate_tokens"]
    assert any(e.stage == "knn" and "β=1" in e.message for e in events)


def test_build_without_ket_has_no_ket_layer(store: GraphStore) -> None:
    report, events = build_with(store, synthetic_docs(8), ket_enabled=False)
    assert any(e.stage == "knn" and "off" in e.message for e in events)
    c = report.counts
    assert c["KNN"] == c["SubChunk"] == c["Keyword"] == 0 and report.ket == {}
    assert report.extracted_chunks == c["Chunk"]


@pytest.mark.slow
def test_skeleton_costs_about_beta_of_a_full_kg(tmp_path: Path) -> None:
    """A fake LLM counts tokens: the β = 0.8 skeleton's extraction costs at most (β + 0.05) of
    extracting every chunk of the same corpus (§5.3)."""
    from tests.support.index_fakes import ScriptedLLM

    docs = synthetic_docs(40, seed=5)
    totals = {}
    # extraction calls only: the skeleton's descriptions (one more call per chunk) are off
    for name, fields in {"full": {"ket_descriptions": False},
                         "skeleton": {"ket_enabled": True, "core_fraction": 0.8, "ket_descriptions": False}}.items():
        s = GraphStore.open(tmp_path / name, embedder_id=EMB.id, dim=EMB.dim)
        llm = ScriptedLLM()
        report, _ = build_with(s, docs, llm, **fields)
        u = report.usage_by_stage["extract"]
        totals[name] = (u.input_tokens + u.output_tokens, llm.calls, report)
        s.close()
    full, skel = totals["full"], totals["skeleton"]
    assert skel[1] == math.ceil(0.8 * full[1])
    assert skel[0] <= (0.8 + 0.05) * full[0]
    cost = skel[2].ket["cost"]
    assert cost["skeleton_actual_tokens"] == skel[0]
    assert cost["n_chunks"] == full[1] and cost["n_core"] == skel[1]
    assert cost["skeleton_estimate_tokens"] <= 0.85 * cost["full_estimate_tokens"]
    assert cost["full_extrapolated_tokens"] == pytest.approx(full[0], rel=0.1)


def test_incremental_ket_build_covers_every_chunk(store: GraphStore) -> None:
    docs = synthetic_docs(24, seed=8)
    build_with(store, docs[:16], ket_enabled=True, core_fraction=0.75)
    report, _ = build_with(store, docs, ket_enabled=True, core_fraction=0.75)
    c = report.counts
    assert report.new_documents == 8 and c["KNN"] == 2 * c["Chunk"]
    assert {r["c"] for r in store.query("MATCH (s:SubChunk) RETURN DISTINCT s.chunk_id AS c")} == \
        {r["c"] for r in store.query("MATCH (c:Chunk) RETURN c.id AS c")}
    extracted = len(store.query("MATCH (x:Extraction) RETURN x.chunk_id AS c"))
    assert report.ket["skeleton_beta"] == pytest.approx(extracted / c["Chunk"])
    late = report.ket["core_not_extracted"]
    assert (late > 0) == any("became core chunks" in w for w in report.warnings)


def test_top_1_per_row_is_the_general_top_k_cut_at_one() -> None:
    """K = 2 takes one neighbour of each kind through argmax (issue 29): the same rows, columns
    and values as the general path, ties by lower column, rows with nothing finite left out."""
    from kgviz.index import top_k

    rng = np.random.default_rng(3)
    scores = rng.integers(0, 4, size=(40, 30)).astype(np.float64)  # integer scores: many ties
    scores[scores == 0] = -np.inf
    scores[5] = -np.inf
    general = top_k.top_k_per_row(scores, 2)
    first = np.ones(general[0].size, dtype=bool)
    first[1:] = general[0][1:] != general[0][:-1]  # the first (best) entry of each row
    got = top_k.top_k_per_row(scores, 1)
    assert all(np.array_equal(a, b[first]) for a, b in zip(got, general))
    assert 5 not in got[0].tolist()


def symmetric_scores(n: int, seed: int) -> np.ndarray:
    """A symmetric matrix of small integer scores (many exact ties), zeros and negatives too."""
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.integers(-2, 4, size=(n, n)).astype(np.float32), 1)
    return upper + upper.T


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("with_skip", [False, True])
@pytest.mark.parametrize("share", [0, 2, 10**9])
def test_symmetric_top_k_equals_the_whole_rows(k: int, with_skip: bool, share: int, monkeypatch) -> None:
    """Only the tiles on and above the diagonal, read along their rows and down their columns
    (issue 29: half the products), give each row the same (column, value) picks as its whole row
    at once: best first, ties by lower column across tiles too, never the diagonal, a skipped pair
    never taken by its row (but still by the other row of the pair), values as float64. The
    columns merged down a tile are gathered (``share`` 0), masked over the whole tile (10**9) or
    either as their number says (2): the same picks."""
    from kgviz.index import top_k

    monkeypatch.setattr(top_k, "GATHER_MAX_SHARE", share)
    n = 41
    scores = symmetric_scores(n, seed=5 + k)
    skip = (np.array([0, 3, 3, 40, 17]), np.array([1, 2, 40, 3, 16])) if with_skip else None
    whole = scores.astype(np.float64)
    np.fill_diagonal(whole, -np.inf)
    if skip is not None:
        whole[skip] = -np.inf
    want = top_k.top_k_per_row(whole, k)
    made: list[tuple[int, int]] = []

    def product(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        made.append((r0, c0))
        return scores[r0:r1, c0:c1].copy()

    for tile in (1, 4, 10, 41, 64):
        made.clear()
        got = top_k.symmetric_top_k(product, n, k, skip=skip, tile=tile)
        assert all(np.array_equal(a, b) for a, b in zip(got, want)), tile
        assert got[2].dtype == np.float64
        assert all(c0 >= r0 for r0, c0 in made) and len(made) == len(set(made))  # each upper tile once
    if skip is not None:  # (3, 2) skipped for row 3 only: row 2 may still take column 3
        assert not any(r == 3 and c == 2 for r, c in zip(got[0].tolist(), got[1].tolist()))


def test_symmetric_top_k_takes_nothing_from_a_row_of_minus_infinity() -> None:
    """A row whose every score is -inf (only the diagonal, n = 1; or all skipped) gets no pick."""
    from kgviz.index import top_k

    one = top_k.symmetric_top_k(lambda r0, r1, c0, c1: np.zeros((r1 - r0, c1 - c0), np.float32), 1, 2)
    assert one[0].size == 0
    scores = symmetric_scores(6, seed=2)
    got = top_k.symmetric_top_k(lambda r0, r1, c0, c1: scores[r0:r1, c0:c1].copy(), 6, 1,
                              skip=(np.full(5, 4), np.array([0, 1, 2, 3, 5])), tile=2)
    assert 4 not in got[0].tolist() and sorted(got[0].tolist()) == [0, 1, 2, 3, 5]


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("with_skip", [False, True])
def test_symmetric_top_k_in_two_threads_equals_one_thread(k: int, with_skip: bool) -> None:
    """Two threads (issue 29: two tiles' products made at once, by the calling thread and one
    pool thread, the tiles merged in order) pick exactly what one thread picks, on many exact
    ties across tiles, with skipped pairs in most tiles."""
    import threading

    from kgviz.index import top_k

    n = 53
    scores = symmetric_scores(n, seed=11 + k)
    rng = np.random.default_rng(k)
    skip = (rng.integers(0, n, 60), rng.integers(0, n, 60)) if with_skip else None
    makers: set[str] = set()

    def product(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        makers.add(threading.current_thread().name)
        return scores[r0:r1, c0:c1].copy()

    for tile in (4, 7, 16, 53):
        one = top_k.symmetric_top_k(product, n, k, skip=skip, tile=tile, threads=1)
        assert makers == {threading.current_thread().name}
        makers.clear()
        two = top_k.symmetric_top_k(product, n, k, skip=skip, tile=tile, threads=2)
        assert all(np.array_equal(a, b) for a, b in zip(one, two)), tile
        if tile < n:  # one tile alone is made and merged in the calling thread
            assert len(makers) == 2 and threading.current_thread().name in makers  # and a pool thread
        makers.clear()


def test_symmetric_top_k_in_threads_raises_a_product_error() -> None:
    """A product that fails in a pool thread fails the call, as it does in one thread."""
    from kgviz.index import top_k

    def product(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        if c0 >= 8:
            raise ValueError("no such tile")
        return np.zeros((r1 - r0, c1 - c0), np.float32)

    for threads in (1, 2):
        with pytest.raises(ValueError, match="no such tile"):
            top_k.symmetric_top_k(product, 20, 1, tile=4, threads=threads)


def four_hot(n: int, dim: int, seed: int) -> np.ndarray:
    """Rows of four ones: unit rows of 0.5s, so every cosine is a multiple of 0.25 whatever order a
    BLAS kernel sums in (exact ties, bit for bit across tile widths)."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, dim), dtype=np.float32)
    for row in x:
        row[rng.choice(dim, 4, replace=False)] = 1.0
    return x


@pytest.mark.parametrize("exclude", [True, False])
def test_knn_in_column_tiles_equals_one_tile(exclude: bool) -> None:
    """Tiles of any width give the same graph as one tile: with exact cosines edge for edge and
    weight for weight; with hashing vectors the same edges, a cosine at most its last bit apart
    (BLAS picks its kernel by the matrix shape)."""
    texts = synthetic_texts(37, seed=5)
    for emb, tol in ((four_hot(37, 10, seed=2), 0.0), (EMB.embed(texts), 1e-7)):
        whole = build_knn(texts, emb, 4, exclude_lexical=exclude, tile=37)
        for tile in (1, 3, 16):
            tiled = build_knn(texts, emb, 4, exclude_lexical=exclude, tile=tile)
            for field in ("src", "dst", "kind"):
                assert np.array_equal(getattr(tiled, field), getattr(whole, field)), (tile, field)
            assert np.abs(tiled.weight - whole.weight).max() <= tol


@pytest.mark.parametrize("exclude", [True, False])
def test_knn_k2_is_the_brute_force_graph(exclude: bool) -> None:
    """The K = 2 graph from tiles is the one an all-pairs computation gives: per chunk the most
    shared keywords, then the best cosine (not the lexical neighbour under Algorithm 3 line 5),
    ties by lower index, nothing at a score <= 0."""
    from kgviz.index import knn

    texts = synthetic_texts(45, seed=9)
    emb = four_hot(45, 12, seed=4)  # exact cosines: no BLAS rounding between tile shapes
    got = build_knn(texts, emb, 2, exclude_lexical=exclude, tile=16)
    x, _ = knn.term_matrix(texts)
    lex = (x @ x.T).toarray().astype(np.float64)
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    sem = (unit @ unit.T).astype(np.float64)
    want = []
    for i in range(45):
        lex[i, i] = sem[i, i] = -np.inf
        j = int(np.argmax(lex[i]))
        if lex[i, j] > 0:
            want.append((i, j, LEXICAL, lex[i, j]))
            if exclude:
                sem[i, j] = -np.inf
        j = int(np.argmax(sem[i]))
        if sem[i, j] > 0:
            want.append((i, j, SEMANTIC, sem[i, j]))
    rows = list(zip(got.src.tolist(), got.dst.tolist(), got.kind.tolist(), got.weight.tolist()))
    assert rows == want


def test_the_extraction_estimate_counts_the_prompt_once_and_adds_the_chunk() -> None:
    """The skeleton cost adds each chunk's tokens to the prompt's, counted once (issue 29): equal to
    counting the whole rendered prompt, whatever the chunk starts or ends with."""
    from kgviz.prompts.extraction import EXTRACT_TRIPLES_SYSTEM, render_extract_triples

    texts = synthetic_texts(30, seed=4) + [
        "", " ", "x", "Überlänge-Wörterbuchverlag ist da", "(a) first.\n\n\n\nsecond line  ", "\u00e9t\u00e9\n#Heading\nbody",
        "a" * 40, "word!", "!word", "1921.", "\tTabs\tand  spaces\t", "Text: Triples:", "end\r\nwith\rreturns\n",
    ]
    for text in texts:
        want = count_tokens(EXTRACT_TRIPLES_SYSTEM) + count_tokens(render_extract_triples(text))
        assert ket.extraction_estimate(text, 10, 2.0) == (want, 20), repr(text)
