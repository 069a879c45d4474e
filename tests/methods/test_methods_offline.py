"""Offline end to end on the fixture graph: each baseline and KG-Retriever answers, its trace has the
documented stage sequence, every node and edge it names exists in the graph, and the Run survives a
JSON round trip."""
from __future__ import annotations

import json

import pytest
from tests.support.fixture_graph import FixtureGraph

from kgviz.errors import GraphStoreError
from kgviz.methods.base import TraceStep
from kgviz.run import Run, run_method, run_methods

STAGES = {
    "kg-retriever": ["seed", "expand", "score", "select", "context", "answer"],
    "text-rag": ["seed", "seed", "score", "context", "answer"],
    "bm25": ["seed", "context", "answer"],
    "dense": ["seed", "context", "answer"],
    "no-retrieval": ["context", "answer"],
}
CASES = [("Who designed the Harbour Library?", "Marta Ruiz"),
         ("Which river flows into the Atlantic Ocean at Lisbon?", "Tagus"),
         ("Where was Owen Hale born?", "Cardiff")]


def assert_refs_exist(kg: FixtureGraph, steps: list[TraceStep]) -> None:
    for s in steps:
        by_table: dict[str, list[str]] = {}
        for n in s.nodes:
            by_table.setdefault(n.table, []).append(n.id)
        for table, ids in by_table.items():
            assert kg.exist(table, ids), (s.title, table)
        known = {i for ids in by_table.values() for i in ids}
        for e in s.edges:
            assert e.role in ("candidate", "chosen", "rejected")
            # an edge's ends are in this step or were introduced by an earlier one
            earlier = {n.id for p in steps[: s.index + 1] for n in p.nodes}
            assert {e.source, e.target} <= known | earlier, (s.title, e)


@pytest.mark.parametrize("method", sorted(STAGES))
def test_offline_run(kg: FixtureGraph, method: str) -> None:
    for question, gold in CASES:
        run = run_method(method, question, kg.ctx)
        assert run.ok, run.error
        assert [s.kind for s in run.trace] == STAGES[method]
        assert run.mode == "offline" and run.answer
        if method == "no-retrieval":
            assert run.answer == "insufficient information"
        else:
            assert run.answer == gold, (method, question, run.context.render())
            assert kg.exist({"triple": "Triple", "chunk": "Chunk"}[run.context.items[0].kind],
                            [i.id for i in run.context.items])
        assert_refs_exist(kg, run.trace)
        back = Run.from_dict(json.loads(json.dumps(run.to_dict())))
        assert back == run


def test_run_methods_on_the_graph(kg: FixtureGraph) -> None:
    runs = run_methods(list(STAGES), "Who designed the Harbour Library?", kg.ctx,
                       params={"kg-retriever": {"strategy": "multi-hop"}}, presets={"text-rag": "dense-only"})
    assert [r.method for r in runs] == list(STAGES) and all(r.ok for r in runs)
    assert runs[0].params["strategy"] == "multi-hop" and runs[1].params["retriever"] == "dense"


def test_a_store_failure_mid_retrieval_keeps_the_partial_trace(kg: FixtureGraph,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise GraphStoreError("query failed: the database file is gone", hint="rebuild the workspace")

    # kg-retriever's statements and stored-vector reads come after its seed step (the neighbours
    # step reads the documents' vectors from the vector files)
    monkeypatch.setattr(kg.store, "query_arrow", broken)
    monkeypatch.setattr(kg.store, "stored_vectors", broken)
    runs = run_methods(["kg-retriever", "text-rag"], "Who designed the Harbour Library?", kg.ctx,
                       params={"kg-retriever": {"strategy": "attentive"}})
    bad, good = runs
    assert bad.error == "query failed: the database file is gone — rebuild the workspace"
    assert [s.kind for s in bad.trace] == ["seed", "error"] and bad.answer == ""
    assert good.ok and good.answer == "Marta Ruiz"
