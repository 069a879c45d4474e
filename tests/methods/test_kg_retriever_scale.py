"""KG-Retriever's λ on the embedder's scale (issue 12, item 4): with the hashing embedder on the
sample graph the paper's absolute λ = 0.1 can never pass a second-hop entity (the trace says so),
while the default relative λ lets the multi-hop strategy retrieve beyond the one-hop strategy."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.methods.base import MethodContext, TraceStep
from kgviz.methods.kg_retriever import KGRetriever
from kgviz.run import run_method

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = [json.loads(line)["question"] for line in
             (ROOT / "sample_data" / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def _score(trace: list[TraceStep]) -> TraceStep:
    (s,) = [s for s in trace if s.kind == "score"]
    return s


def _hop2_triples(run_trace: list[TraceStep]) -> set[str]:
    """Context triples that touch an entity weighed through a second-hop document."""
    score = _score(run_trace)
    hop2 = {e for e, h in score.data["hop"].items() if h == 2}
    (select,) = [s for s in run_trace if s.kind == "select"]
    chosen = {n.id for n in select.nodes if n.table == "Triple" and n.role == "chosen"}
    return {e.source for e in select.edges if e.source in chosen and e.target in hop2}


def test_absolute_lambda_blocks_the_second_hop_and_the_trace_says_so(sample_graph: MethodContext) -> None:
    blocked = 0
    for q in QUESTIONS:
        run = run_method("kg-retriever", q, sample_graph, preset="paper", params={"strategy": "multi-hop"})
        assert run.ok, run.error
        score = _score(run.trace)
        (hop2,) = [h for h in score.data["hops"] if h["hop"] == 2]
        assert hop2["passed"] == 0 and hop2["best"] <= 0.1  # max w·cos on hashing cosines: far below 0.1
        assert hop2["blocked"] and f"hop 2: best score {hop2['best']:.3g} ≤ λ 0.1 — nothing can pass" in score.detail
        assert not _hop2_triples(run.trace)
        blocked += 1
    assert blocked == len(QUESTIONS) > 0


def test_relative_lambda_lets_multi_hop_retrieve_beyond_one_hop(sample_graph: MethodContext) -> None:
    """Second-hop entities now pass λ; with T out of the way (it ranks them below the top-N
    documents' entities, as the paper's T should) their triples reach the context, which the
    one-hop strategy's context lacks."""
    assert KGRetriever.Params().lam_mode == "relative" and KGRetriever.presets["paper"].lam_mode == "absolute"
    passed, beyond = [], []
    for q in QUESTIONS:
        multi = run_method("kg-retriever", q, sample_graph, {"strategy": "multi-hop", "max_t": 200})
        one = run_method("kg-retriever", q, sample_graph, {"strategy": "one-hop", "max_t": 200})
        assert multi.ok and one.ok
        hops = _score(multi.trace).data["hops"]
        for h in hops:  # a hop with a passing entity is never reported as blocked, and vice versa
            assert h["blocked"] == (h["passed"] == 0 and h["best"] is not None)
        if hops[2]["passed"]:
            passed.append(q)
        from_hop2 = _hop2_triples(multi.trace)
        assert from_hop2 <= {i.id for i in multi.context.items}
        if from_hop2 - {i.id for i in one.context.items}:
            beyond.append(q)
    # measured: second-hop entities pass in 12 of the 14 sample questions (0 with the paper's λ);
    # the floors leave room for extraction changes yet fail if the hop is blocked again
    assert len(passed) >= len(QUESTIONS) // 2, passed
    assert len(beyond) >= len(QUESTIONS) // 2, beyond
    # At the default T (20 triples) hop-0 and hop-1 entities outrank every second-hop triple on the
    # sample (their documents carry more sentence facts); with T capping entities (the public code's
    # reading) the second hop reaches the context of most sample questions (measured 8 of 14).
    by_entity = [q for q in QUESTIONS if _hop2_triples(
        run_method("kg-retriever", q, sample_graph, {"strategy": "multi-hop", "t_caps": "entities"}).trace)]
    assert len(by_entity) >= len(QUESTIONS) // 3, by_entity


@pytest.mark.parametrize("lam_mode", ["absolute", "relative"])
def test_per_hop_summary_counts_every_entity_once(sample_graph: MethodContext, lam_mode: str) -> None:
    run = run_method("kg-retriever", QUESTIONS[0], sample_graph, {"strategy": "multi-hop", "lam_mode": lam_mode})
    score = _score(run.trace)
    hops = score.data["hops"]
    assert [h["hop"] for h in hops] == [0, 1, 2]
    assert sum(h["entities"] for h in hops) == len(score.scores)
    kept = [n.id for n in score.nodes if n.table == "Entity" and n.role == "chosen"]
    assert sum(h["passed"] for h in hops) == len(kept)
    for h in hops:
        mine = [e for e, hop in score.data["hop"].items() if hop == h["hop"]]
        assert h["best"] == pytest.approx(max(score.scores[e] for e in mine))
