"""KET-RAG's match modes (issue 12): 'lexical' seeds the question's own keywords rarest first (and
the entities it names) and ranks candidates by BM25 over them; 'hybrid' seeds the same way and fuses
the BM25 ranking with the cosine one; 'embedding' is the paper's cosine. 'auto' is lexical with the
hashing embedder, and with a neural one embedding in the keyword channel, hybrid in the skeleton."""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pytest
import scipy.sparse as sp
from tests.support.fixture_graph import FixtureGraph, build_fixture_graph

from kgviz.index.ket import KetParams, build_ket_index
from kgviz.index.knn import content_words
from kgviz.methods.base import Tracer, TraceStep
from kgviz.methods.ket_cache import KeywordView, keyword_view, named_entities
from kgviz.methods.ket_channels import RRF_K, _fused, match_mode
from kgviz.methods.ket_rag import KeywordRag, KeywordRagParams
from kgviz.providers.embedders import HashingEmbedder

QUESTION = "Where was the architect of the Harbour Library born?"


@pytest.fixture(scope="module")
def ket_kg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FixtureGraph]:
    graph = build_fixture_graph(tmp_path_factory.mktemp("ket_lex") / "ws", HashingEmbedder())
    build_ket_index(graph.store, graph.embedder, KetParams(beta=0.5))
    yield graph
    graph.store.close()


def _keyword_steps(kg: FixtureGraph, match: str, limit: int = 400) -> tuple[list[str], list[TraceStep]]:
    tracer = Tracer(kg.ctx.reasoner)
    out = KeywordRag().retrieve(QUESTION, kg.ctx, KeywordRagParams(context_limit=limit, keyword_match=match), tracer)
    return [i.id for i in out.items], tracer.steps


def _view(words: list[str], sub_kw: list[list[int]], tokens: list[int]) -> KeywordView:
    """A hand-made keyword layer: sub-chunk i holds the keywords sub_kw[i]."""
    rows = [k for ks in sub_kw for k in ks]
    cols = [i for i, ks in enumerate(sub_kw) for _ in ks]
    adj = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(words), len(sub_kw)))
    unit = np.eye(len(words), 4, dtype=np.float32)
    return KeywordView("sig", [f"kw:{w}" for w in words], words, unit, adj, [f"s{i}" for i in range(len(sub_kw))],
                       ["c"] * len(sub_kw), np.asarray(tokens), np.eye(len(sub_kw), 4, dtype=np.float32))


def test_auto_is_lexical_for_the_hashing_embedder_only() -> None:
    p = KeywordRagParams().resolve()
    assert p.keyword_match == p.entity_match == "auto"
    neural = "fastembed:BAAI/bge-small-en-v1.5"
    assert match_mode("auto", "hashing-768", channel="keyword") == "lexical"
    assert match_mode("auto", "hashing-768", channel="entity") == "lexical"
    assert match_mode("auto", neural, channel="keyword") == "embedding"  # the paper's cosine
    assert match_mode("auto", neural, channel="entity") == "hybrid"
    for mode in ("embedding", "lexical", "hybrid"):  # a named mode is taken as it is, whatever the embedder
        assert {match_mode(mode, e, channel=c) for e in ("hashing-768", neural) for c in ("keyword", "entity")} == {mode}


def test_fused_ranks_by_reciprocal_rank_of_bm25_and_cosine() -> None:
    bm25 = {"a": 9.0, "b": 5.0, "c": 0.0}
    cos = {"a": 0.1, "b": 0.9, "c": 0.5}
    fused = _fused(bm25, cos)
    # a: bm25 #1, cos #3; b: bm25 #2, cos #1; c: bm25 #3, cos #2
    assert fused["b"] == round(1 / (RRF_K + 2) + 1 / (RRF_K + 1), 9)
    assert sorted(fused, key=lambda k: -fused[k]) == ["b", "a", "c"]  # ranks 2+1, then 1+3, then 3+2


@pytest.mark.parametrize("match", ["lexical", "hybrid"])
def test_hybrid_keyword_channel_seeds_like_lexical_and_scores_by_fused_rank(ket_kg: FixtureGraph, match: str) -> None:
    lex_items, lex_steps = _keyword_steps(ket_kg, "lexical")
    items, steps = _keyword_steps(ket_kg, match)
    assert steps[0].data["match"] == match
    assert steps[0].data["question_keywords"] == lex_steps[0].data["question_keywords"]  # the same seeds
    scores = steps[1].scores
    if match == "hybrid":
        assert "reciprocal rank" in steps[1].detail
        cos = steps[1].data["cosines"]
        bm25 = lex_steps[1].scores
        assert scores == _fused(bm25, cos)
    else:
        assert "cosine breaks ties" in steps[1].detail


def test_question_keywords_come_rarest_first() -> None:
    view = _view(["harbour", "library", "architect"], [[0, 1], [0], [0, 2], [1]], [10, 10, 10, 10])
    # df: harbour 3, library 2, architect 1
    assert view.question_keywords(["library", "harbour", "architect", "unknown"]) == [2, 1, 0]
    assert view.question_keywords(["unknown"]) == []


def test_bm25_prefers_rare_matches_more_matches_and_shorter_units() -> None:
    # df: harbour 4, architect 3, library 1
    view = _view(["harbour", "library", "architect"], [[0], [2], [0, 2], [0, 2], [1], [0]], [10, 10, 10, 40, 10, 10])
    s = view.bm25(view.question_keywords(["harbour", "architect"]))
    assert s[1] > s[0]  # one match each: the rarer word weighs more
    assert s[2] > s[1]  # two matches beat one
    assert s[2] > s[3]  # the same matches in a longer sub-chunk score less
    assert s[4] == 0.0  # no question keyword
    assert not view.bm25([]).any()


def test_lexical_seeds_are_the_questions_keywords_and_the_trace_says_so(ket_kg: FixtureGraph) -> None:
    _, steps = _keyword_steps(ket_kg, "lexical")
    seed, score = steps[0], steps[1]
    view = keyword_view(ket_kg.store)
    assert view is not None
    asked = [w for w in dict.fromkeys(content_words(QUESTION)) if w in view.word_row]
    assert asked and sorted(seed.data["question_keywords"]) == sorted(asked)
    assert seed.data["match"] == "lexical" and "the question's own" in seed.detail
    drawn = [n.label for n in seed.nodes if n.role == "seed"]
    assert drawn[: len(asked)] == seed.data["question_keywords"]  # taken (and drawn) before any other keyword
    assert "BM25 over the question's keywords" in score.detail
    # candidates are listed best first by BM25 (cosine only breaks ties)
    listed = [score.scores[n.id] for n in score.nodes if n.table == "SubChunk"]
    assert listed == sorted(listed, reverse=True) and listed[0] > 0


def test_embedding_match_is_the_papers_cosine(ket_kg: FixtureGraph) -> None:
    lex_items, _ = _keyword_steps(ket_kg, "lexical", limit=120)
    emb_items, steps = _keyword_steps(ket_kg, "embedding", limit=120)
    seed, score = steps[0], steps[1]
    assert seed.data["match"] == "embedding" and "by cosine to the question" in seed.detail
    assert seed.data["question_keywords"] == [] and "cosines" not in score.data
    listed = [score.scores[n.id] for n in score.nodes if n.table == "SubChunk"]
    assert listed == sorted(listed, reverse=True)
    # lexically, the sub-chunk holding both 'architect' and 'born' leads, and it holds the answer
    (top,) = _texts(ket_kg, lex_items[:1])
    assert "architect born" in top and "Valencia" in top
    assert lex_items and emb_items


def _texts(kg: FixtureGraph, ids: list[str]) -> list[str]:
    from kgviz.graph import reads

    got = reads.subchunk_texts(kg.store, ids)
    return [got.get(i, "") for i in ids]


def test_named_entities_finds_the_longest_names_the_question_spells_out(ket_kg: FixtureGraph) -> None:
    names = {r["id"]: r["name"] for r in ket_kg.store.query("MATCH (e:Entity) RETURN e.id AS id, e.name AS name")}
    found = named_entities(ket_kg.store, "Who designed the harbour library, and where was MARTA RUIZ born?")
    assert [names[e] for e in found][:2] == ["Harbour Library", "Marta Ruiz"]  # longest first, case-folded
    assert named_entities(ket_kg.store, "Where was the architect born?") == []  # no name, no stopword hits


@pytest.mark.parametrize("match", ["lexical", "hybrid", "embedding"])
def test_skeleton_seeds_take_the_named_entities_first_when_lexical(ket_kg: FixtureGraph, match: str) -> None:
    from kgviz.methods.ket_rag import SkeletonRag, SkeletonRagParams

    q = "Where was the architect of the Harbour Library born?"
    tracer = Tracer(ket_kg.ctx.reasoner)
    SkeletonRag().retrieve(q, ket_kg.ctx, SkeletonRagParams(context_limit=600, entity_match=match), tracer)
    seed = tracer.steps[0]
    assert seed.data["match"] == match
    seeded = [n.label for n in seed.nodes if n.role == "seed"]
    if match != "embedding":
        assert seed.data["named"] and seeded[0] == "Harbour Library" and "named in the question" in seed.detail
    else:
        assert seed.data["named"] == [] and "entities nearest the question" in seed.detail


@pytest.mark.parametrize("match", ["lexical", "hybrid", "embedding"])
def test_lexical_skeleton_text_units_reach_one_hop_out(ket_kg: FixtureGraph, match: str) -> None:
    """The seed names Marta Ruiz; her relationship 'born in Valencia' brings in the chunks that
    mention Valencia (the Valencia article, which alone names its sea) only when lexical."""
    from kgviz.methods.ket_rag import SkeletonRag, SkeletonRagParams

    q = "On which sea lies the city where Marta Ruiz was born?"
    tracer = Tracer(ket_kg.ctx.reasoner)
    out = SkeletonRag().retrieve(q, ket_kg.ctx, SkeletonRagParams(context_limit=2000, seed_entities=1,
                                                                    entity_match=match), tracer)
    units = tracer.steps[-1]
    titles = {n.label.split(" · ")[0] for n in units.nodes if n.table in ("SubChunk", "Chunk")}
    texts = " ".join(i.text for i in out.items)
    if match != "embedding":
        assert "Valencia" in titles and "Mediterranean Sea" in texts
        assert "one hop out" in units.detail and "BM25" in units.detail
        assert ("reciprocal rank" in units.detail) == (match == "hybrid")
    else:
        assert "Valencia" not in titles and "Mediterranean Sea" not in texts
        assert "one hop out" not in units.detail


def test_text_unit_step_draws_few_links_per_chosen_chunk_and_keeps_them_all_in_data(ket_kg: FixtureGraph) -> None:
    """Every link of every chunk made the step unreadable once one hop out added chunks: only the
    chunks that gave a chosen unit get link edges, at most SHOWN_LINKS_PER_CHUNK each, relationships
    first; data['links'] lists them all."""
    from kgviz.methods.ket_narrator import SHOWN_LINKS_PER_CHUNK
    from kgviz.methods.ket_rag import SkeletonRag, SkeletonRagParams

    q = "On which sea lies the city where Marta Ruiz was born?"
    tracer = Tracer(ket_kg.ctx.reasoner)
    SkeletonRag().retrieve(q, ket_kg.ctx, SkeletonRagParams(context_limit=2000, entity_match="lexical"), tracer)
    units = tracer.steps[-1]
    chunk_of = {e.source: e.target for e in units.edges if e.rel == "SUB_CHUNK_OF"}
    chosen_units = {n.id for n in units.nodes if n.table == "SubChunk" and n.role == "chosen"}
    used = {chunk_of[u] for u in chosen_units}
    links: dict[str, list[str]] = {}
    for e in units.edges:
        if e.rel == "MENTIONS":
            links.setdefault(e.source, []).append(e.target)
        elif e.rel == "FROM_CHUNK":
            links.setdefault(e.target, []).append(e.source)
    assert links and set(links) <= used
    assert all(len(xs) <= SHOWN_LINKS_PER_CHUNK for xs in links.values())
    listed = units.data["links"]  # every link, as the panel names them
    assert all(len(xs) <= len(listed[c]) for c, xs in links.items())
    assert sum(len(v) for v in listed.values()) > sum(len(v) for v in links.values())
    labels = [x for v in listed.values() for x in v]
    assert "Marta Ruiz" in labels and any(" — " in x and "Valencia" in x for x in labels)
    assert not any(x.startswith(("ent:", "tri:")) for x in labels)  # names, not ids
    assert {n.role for n in units.nodes if n.table == "Chunk"} <= {"chosen", "rejected"}
