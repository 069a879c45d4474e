"""ket-rag and its variants (paper 004): channel budgets, stage sequence, one-channel variants,
skeleton scope (as built / simulated β / full), Algorithm 2 rankings, real node ids, offline."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest
from tests.support.fixture_graph import FixtureGraph, build_fixture_graph
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgviz.errors import ConfigError, MethodError
from kgviz.index.ket import KetParams, build_ket_index, core_ranking, n_core
from kgviz.methods.base import MethodContext, RetrievedContext, TraceStep, Tracer, registered
from kgviz.methods import ket_narrator
from kgviz.methods.ket_narrator import SHOWN_SEED_KEYWORDS
from kgviz.methods.ket_rag import KetFull, KetRag, KetRagParams, KeywordRag, KeywordRagParams, SkeletonRag
from kgviz.providers.embedders import HashingEmbedder
from kgviz.reasoning import Reasoner
from kgviz.run import Run, run_method
from kgviz.text import count_tokens
from kgviz.types import Completion, Message

QUESTION = "Where was the architect of the Harbour Library born?"
QUESTIONS = [QUESTION, "Which river flows into the Atlantic Ocean at Lisbon?", "Where was Owen Hale born?",
             "What did the composer from Wales write?"]


@pytest.fixture(scope="module")
def ket_kg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FixtureGraph]:
    """The shared fixture graph plus a KET index (β = 0.5 marks half the chunks as core; the KG
    itself covers every chunk, as after a full build)."""
    graph = build_fixture_graph(tmp_path_factory.mktemp("ket") / "ws", HashingEmbedder())
    build_ket_index(graph.store, graph.embedder, KetParams(beta=0.5))
    yield graph
    graph.store.close()


def retrieve(kg: FixtureGraph, method: Any, params: Any = None, question: str = QUESTION,
             ctx: MethodContext | None = None) -> tuple[RetrievedContext, list[TraceStep]]:
    tracer = Tracer((ctx or kg.ctx).reasoner)
    out = method.retrieve(question, ctx or kg.ctx, params if params is not None else method.Params(), tracer)
    return out, tracer.steps


def channel_items(steps: list[TraceStep], out: RetrievedContext, channel: str) -> list[Any]:
    ids = [i for s in steps if s.kind == "context" and s.data.get("channel") == channel for i in s.data.get("items", [])]
    by_id = {i.id: i for i in out.items}
    return [by_id[i] for i in ids]


def test_variants_are_registered_with_their_theta() -> None:
    methods = registered()
    for name in ("ket-rag", "skeleton-rag", "keyword-rag", "ket-full"):
        assert name in methods and methods[name].paper == "004"
    assert KetRagParams().theta == 0.4 and KetRag.presets["paper"].context_limit == 12000
    assert "theta" not in SkeletonRag.Params.__dataclass_fields__
    with pytest.raises(ConfigError):
        KetRagParams(theta=1.5)
    with pytest.raises(ConfigError):
        KetRagParams(pool_mode="greedy")


def test_stage_sequence_interleaves_the_two_channels(ket_kg: FixtureGraph) -> None:
    p = KetRagParams(context_limit=500)
    out, steps = retrieve(ket_kg, KetRag(), p)
    assert [s.kind for s in steps] == ["seed", "select", "context", "seed", "score", "context"]
    assert [s.data["channel"] for s in steps] == ["skeleton"] * 3 + ["keyword"] * 3
    assert [s.data["budget"] for s in steps] == [200, 200, 200, 600, 600, 300]
    skel_used = [s.data["used"] for s in steps[:3]]
    assert skel_used == sorted(skel_used) and skel_used[-1] <= 200
    assert steps[3].data["used"] == steps[4].data["used"]  # the candidate pool
    assert steps[5].data["used"] == sum(i.n_tokens for i in channel_items(steps, out, "keyword"))
    assert {n.table for n in steps[0].nodes} == {"Entity"} and any(n.role == "seed" for n in steps[0].nodes)
    assert {n.table for n in steps[1].nodes} <= {"Triple", "Entity"} and steps[1].edges
    assert {n.table for n in steps[2].nodes} <= {"SubChunk", "Chunk"}
    assert {e.rel for e in steps[2].edges} <= {"MENTIONS", "FROM_CHUNK", "SUB_CHUNK_OF"}
    assert {n.table for n in steps[3].nodes} == {"Keyword"}
    assert {e.rel for e in steps[4].edges} == {"HAS_KEYWORD"}
    assert "θ=0.4" in out.notes["ket-rag"]
    assert [i.kind for i in out.items][:1] == ["entity"] and out.items[-1].kind == "subchunk"



def test_keyword_seed_step_lists_the_most_similar_few_and_counts_all(ket_kg: FixtureGraph) -> None:
    # a big pool on the small fixture seeds (nearly) every keyword: the step must not draw them all
    p = KetRagParams(context_limit=20000, theta=0.0, keyword_match="embedding")
    out, steps = retrieve(ket_kg, KetRag(), p)
    seed, score = steps[0], steps[1]
    total = seed.data["seeded_total"]
    assert total > SHOWN_SEED_KEYWORDS  # the case the cap exists for
    seeded = [n for n in seed.nodes if n.role == "seed"]
    assert len(seeded) == SHOWN_SEED_KEYWORDS == len(seed.scores)
    assert all(n.table == "Keyword" and n.label for n in seeded)
    shown = [n.score for n in seeded]
    assert shown == sorted(shown, reverse=True)
    assert f"showing the {SHOWN_SEED_KEYWORDS} most similar of {total} seeded keywords" in seed.detail
    # the next step links the shown keywords to their sub-chunks, and only those
    ids = {n.id for n in seeded}
    assert score.edges and {e.target for e in score.edges} <= ids
    assert {n.id for n in score.nodes if n.table == "Keyword"} == ids
    # what is retrieved does not depend on how many keywords are drawn
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ket_narrator, "SHOWN_SEED_KEYWORDS", 3)
        again, steps3 = retrieve(ket_kg, KetRag(), p)
    assert [i.id for i in again.items] == [i.id for i in out.items]
    assert len([n for n in steps3[0].nodes if n.role == "seed"]) == 3 and steps3[0].data["seeded_total"] == total


def test_keyword_seed_step_on_a_small_pool_shows_every_seed(ket_kg: FixtureGraph) -> None:
    _, steps = retrieve(ket_kg, KeywordRag(), KeywordRagParams(context_limit=60))
    seed = steps[0]
    assert seed.data["seeded_total"] == len([n for n in seed.nodes if n.role == "seed"]) <= SHOWN_SEED_KEYWORDS
    assert "showing all" in seed.detail


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limit=st.integers(min_value=1, max_value=1500), theta=st.floats(min_value=0.0, max_value=1.0),
       q=st.sampled_from(QUESTIONS), mode=st.sampled_from(["paper", "code"]))
def test_channel_budgets_are_never_exceeded(ket_kg: FixtureGraph, limit: int, theta: float, q: str,
                                            mode: str) -> None:
    p = KetRagParams(context_limit=limit, theta=theta, pool_mode=mode)
    out, steps = retrieve(ket_kg, KetRag(), p, q)
    skel, kw = channel_items(steps, out, "skeleton"), channel_items(steps, out, "keyword")
    assert len(skel) + len(kw) == len(out.items)
    for item in out.items:
        assert item.n_tokens == count_tokens(item.text)
    assert count_tokens("\n".join(i.text for i in skel)) <= theta * limit + 1e-6
    assert count_tokens("\n".join(i.text for i in kw)) <= (1 - theta) * limit + 1e-6
    for s in steps:
        assert s.data["used"] <= s.data["budget"] or (s.kind != "context" and s.data["channel"] == "keyword"
                                                      and mode == "paper")
    if mode == "code":  # the code's pool never overflows either
        assert all(s.data["used"] <= s.data["budget"] for s in steps)
    assert len({i.id for i in out.items}) == len(out.items)  # no sub-chunk twice across channels


@pytest.mark.parametrize("method,params,channel", [
    (SkeletonRag(), None, "skeleton"), (KetRag(), KetRagParams(theta=1.0), "skeleton"),
    (KeywordRag(), None, "keyword"), (KetRag(), KetRagParams(theta=0.0), "keyword"),
    (KetFull(), None, "skeleton"),
])
def test_one_channel_variants(ket_kg: FixtureGraph, method: Any, params: Any, channel: str) -> None:
    out, steps = retrieve(ket_kg, method, params)
    assert steps and {s.data["channel"] for s in steps} == {channel}
    assert out.items
    assert list(out.notes) == [method.name]  # the Trace page titles the note by the variant that ran
    if channel == "keyword":
        assert {i.kind for i in out.items} == {"subchunk"}
    else:
        assert {"entity", "triple", "subchunk"} <= {i.kind for i in out.items}


def assert_refs_exist(kg: FixtureGraph, steps: list[TraceStep], out: RetrievedContext) -> None:
    by_table: dict[str, set[str]] = {}
    for s in steps:
        for n in s.nodes:
            by_table.setdefault(n.table, set()).add(n.id)
    kinds = {"entity": "Entity", "triple": "Triple", "subchunk": "SubChunk", "chunk": "Chunk"}
    for i in out.items:
        by_table.setdefault(kinds[i.kind], set()).add(i.id)
    for table, ids in by_table.items():
        assert kg.store.existing_ids(table, sorted(ids)) == ids, table
    known = set().union(*by_table.values())
    for s in steps:
        for e in s.edges:
            assert e.source in known and e.target in known, (s.title, e)


@pytest.mark.parametrize("q", QUESTIONS)
def test_every_node_edge_and_item_exists_in_the_store(ket_kg: FixtureGraph, q: str) -> None:
    out, steps = retrieve(ket_kg, KetRag(), KetRagParams(context_limit=800), q)
    assert_refs_exist(ket_kg, steps, out)
    # edges are real graph edges: each HAS_KEYWORD pair is stored
    pairs = {(e.source, e.target) for s in steps for e in s.edges if e.rel == "HAS_KEYWORD"}
    stored = {(r["s"], r["k"]) for r in ket_kg.store.query(
        "MATCH (s:SubChunk)-[:HAS_KEYWORD]->(k:Keyword) RETURN s.id AS s, k.id AS k")}
    assert pairs and pairs <= stored


def test_relationships_and_text_units_follow_algorithm_2(ket_kg: FixtureGraph) -> None:
    out, steps = retrieve(ket_kg, SkeletonRag())
    seeds = {n.id for n in steps[0].nodes if n.role == "seed"}
    assert len(seeds) == 10  # k = 10 (Algorithm 2 line 1)
    adjacency = steps[1].data["adjacency"]
    chosen = [n.id for n in steps[1].nodes if n.table == "Triple" and n.role == "chosen"]
    assert chosen and [adjacency[t] for t in chosen] == sorted((adjacency[t] for t in chosen), reverse=True)
    rows = {r["id"]: r for r in ket_kg.store.query("MATCH (t:Triple) RETURN t.id AS id, t.subject_id AS s, "
                                                   "t.object_id AS o")}
    for t in chosen:
        assert adjacency[t] == (rows[t]["s"] in seeds) + (rows[t]["o"] in seeds) >= 1
    units = [n for n in steps[2].nodes if n.table == "SubChunk" and n.role == "chosen"]
    adj_units = [steps[2].scores[n.id] for n in units]
    assert units and adj_units == sorted(adj_units, reverse=True)


def test_simulated_skeleton_uses_only_top_beta_chunks(ket_kg: FixtureGraph) -> None:
    store = ket_kg.store
    ranks = store.query("MATCH (c:Chunk) RETURN c.id AS id, c.pagerank AS pr")
    top = set(core_ranking([r["id"] for r in ranks], [r["pr"] for r in ranks], "pagerank", 42)[: n_core(len(ranks), 0.5)])
    out, steps = retrieve(ket_kg, SkeletonRag(), SkeletonRag.Params(skeleton_beta=0.5))
    assert "simulated β=0.5" in steps[0].data["skeleton"] and steps[0].data["graph_beta"] == 1.0
    ids = {k: [i.id for i in out.items if i.kind == k] for k in ("entity", "triple", "subchunk")}
    assert ids["entity"] and ids["subchunk"]
    for sid in ids["subchunk"]:
        assert sid.split(".s")[0] in top
    for t in ids["triple"]:
        chunks = {r["c"] for r in store.query("MATCH (t:Triple)-[:FROM_CHUNK]->(c:Chunk) WHERE t.id = $t "
                                              "RETURN c.id AS c", {"t": t})}
        assert chunks & top
    for e in ids["entity"]:
        chunks = {r["c"] for r in store.query("MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) WHERE e.id = $e "
                                              "RETURN c.id AS c", {"e": e})}
        assert chunks & top
    # random selection picks another set, with the build's seed
    _, rsteps = retrieve(ket_kg, SkeletonRag(), SkeletonRag.Params(skeleton_beta=0.5, core_selection="random"))
    assert "random" in rsteps[0].data["skeleton"]


class ExplodingLLM:
    """Not offline, and fails the test if anything asks it to complete: retrieval needs no LLM."""

    provider = "fake"
    model = "never-called"

    @property
    def is_offline(self) -> bool:
        return False

    def complete(self, messages: Sequence[Message], **kw: Any) -> Completion:
        raise AssertionError("KET-RAG retrieval called the LLM")


def test_retrieval_needs_no_llm_and_runs_end_to_end(ket_kg: FixtureGraph) -> None:
    ctx = MethodContext(ket_kg.store, Reasoner(ExplodingLLM(), ket_kg.embedder))
    out, steps = retrieve(ket_kg, KetRag(), ctx=ctx)
    assert out.items and sum(s.usage.calls for s in steps) == 0
    run = run_method("ket-rag", QUESTION, ket_kg.ctx)
    assert run.ok, run.error
    assert [s.kind for s in run.trace][-1] == "answer"
    again = Run.from_dict(json.loads(json.dumps(run.to_dict())))
    assert [s.data for s in again.trace] == [s.data for s in run.trace]


@pytest.fixture
def fresh_graph(tmp_path: Path) -> Iterator[FixtureGraph]:
    graph = build_fixture_graph(tmp_path / "ws", HashingEmbedder())
    yield graph
    graph.store.close()


def test_graph_without_ket_index(fresh_graph: FixtureGraph) -> None:
    out, steps = retrieve(fresh_graph, KetFull())
    assert "no KET index" in steps[0].data["skeleton"]
    assert {i.kind for i in out.items} >= {"entity", "triple", "chunk"}  # whole chunks as text units
    with pytest.raises(MethodError, match="keyword index"):
        retrieve(fresh_graph, KeywordRag())
    with pytest.raises(MethodError, match="PageRank"):
        retrieve(fresh_graph, SkeletonRag(), SkeletonRag.Params(skeleton_beta=0.5))


def test_full_kg_variant_says_when_the_graph_is_only_a_skeleton(fresh_graph: FixtureGraph) -> None:
    build_ket_index(fresh_graph.store, fresh_graph.embedder, KetParams(beta=0.8), skeleton_beta=0.8)
    _, steps = retrieve(fresh_graph, KetFull())
    assert steps[0].data["graph_beta"] == 0.8 and "rebuild with β=1" in steps[0].data["warning"]
    _, steps = retrieve(fresh_graph, KetRag())
    assert "skeleton as built" in steps[0].data["skeleton"] and not steps[0].data["warning"]


def test_budget_arithmetic_matches_the_paper() -> None:
    from kgviz.methods.ket_params import KetRetrievalParams

    for limit, theta in [(12000, 0.4), (1001, 0.3), (7, 0.5), (100, 0.1)]:
        cfg = KetRetrievalParams(variant="ket-rag", context_limit=limit, theta=theta)
        assert cfg.skeleton_budget == math.floor(theta * limit + 1e-9) <= theta * limit + 1e-9
        assert cfg.keyword_budget <= (1 - theta) * limit + 1e-9
        assert cfg.skeleton_budget + cfg.keyword_budget >= limit - 1


STORIES = [
    ("Mira Tesk", "Mira Tesk was born in Aldport in 1890. Mira Tesk founded Tesk Works in 1921. "
                  "Tesk Works is located in Dunmore."),
    ("Orrin Bridge", "The Orrin Bridge crosses the River Vell at Dunmore. It was designed by Mira Tesk."),
    ("Kell Arden", "Kell Arden was born in Dunmore in 1902. Kell Arden founded the Dunmore Courier in 1930."),
    ("Aldport", "Aldport is the capital of Veyn. The University of Aldport was founded in 1850."),
    ("Jon Varr", "Jon Varr was born in Halberg in 1888. Jon Varr married Mira Tesk in 1915."),
    ("Halberg", "Halberg is located in Veyn. Halberg lies on the River Vell."),
    ("Dunmore Courier", "The Dunmore Courier is a newspaper. It is located in Dunmore."),
    ("Veyn", "Veyn is a small kingdom. Its capital is Aldport."),
]


def test_on_a_pipeline_built_skeleton(tmp_path: Path) -> None:
    """β = 0.5 build: ket-rag's skeleton channel only sees triples of core chunks, the trace gives
    the measured β, and every node it names exists."""
    from kgviz.graph.store import GraphStore
    from kgviz.index.pipeline import BuildParams, build
    from kgviz.ingest import document_from_text
    from kgviz.providers.offline import OfflineLLM

    emb = HashingEmbedder()
    store = GraphStore.open(tmp_path / "ws", embedder_id=emb.id, dim=emb.dim)
    docs = [document_from_text(t, title=n, source=f"{n}.txt") for n, t in STORIES]
    build(docs, store, Reasoner(OfflineLLM(), emb), BuildParams(ket_enabled=True, core_fraction=0.5))
    kg = FixtureGraph(store, emb, MethodContext(store, Reasoner(OfflineLLM(), emb)))
    core = {r["id"] for r in store.query("MATCH (c:Chunk) WHERE c.core RETURN c.id AS id")}
    out, steps = retrieve(kg, KetRag(), KetRagParams(context_limit=600), "Who founded Tesk Works?")
    assert steps[0].data["graph_beta"] == pytest.approx(len(core) / store.counts()["Chunk"])
    assert_refs_exist(kg, steps, out)
    skel = channel_items(steps, out, "skeleton")
    assert any(i.kind == "triple" for i in skel) and channel_items(steps, out, "keyword")
    for i in skel:
        if i.kind == "subchunk":
            assert i.id.split(".s")[0] in core
    run = run_method("ket-rag", "Who founded Tesk Works?", kg.ctx)
    assert run.ok and "Mira Tesk" in run.context.render()
    store.close()


def test_every_variant_resolves_to_one_ket_params_keyword_only() -> None:
    from kgviz.methods.ket_params import KetRetrievalParams

    with pytest.raises(TypeError):
        KetRagParams(4000)  # type: ignore[misc]  # keyword-only: no positional soup
    resolved = {type(p).__name__: p.resolve() for p in
                (KetRagParams(), SkeletonRag.Params(), KeywordRagParams(), KetFull.Params())}
    assert all(isinstance(r, KetRetrievalParams) for r in resolved.values())
    assert [r.variant for r in resolved.values()] == ["ket-rag", "skeleton-rag", "keyword-rag", "ket-full"]
    assert [r.theta for r in resolved.values()] == [0.4, 1.0, 0.0, 1.0]
    assert resolved["KetFullParams"].skeleton_beta == 1.0 and resolved["KeywordRagParams"].skeleton_beta == 0.0
    # a variant exposes only the fields it reads (the form and the run record show just those)
    from dataclasses import fields
    assert {f.name for f in fields(KeywordRagParams)} == {"context_limit", "pool_factor", "pool_mode", "keyword_match"}
