"""KG-Retriever as algorithm plus narrator: each step carries the typed record of the §3.2.2 line it
implements (the line the algorithm box lights for it), and the step's figures are the record's."""
from __future__ import annotations

import json

import pytest

from kgviz.methods import algorithm_lines
from kgviz.methods.base import TraceStep
from kgviz.run import run_method

from tests.methods.test_kg_retriever import Q, retrieve, step
from tests.support.fixture_graph import FixtureGraph

LINES = {"seed": "§3.2.2 line 1", "expand": "§3.2.2 line 2", "score": "§3.2.2 line 3 (Eq. 2)",
         "select": "§3.2.2 line 4", "context": "§3.2.2 line 5"}


def test_every_retrieval_step_names_the_line_the_box_lights(kg: FixtureGraph) -> None:
    run = run_method("kg-retriever", Q, kg.ctx, {"strategy": "multi-hop"})
    retrieval = [s for s in run.trace if s.kind != "answer"]
    assert [s.record["line"] for s in retrieval] == [LINES[s.kind] for s in retrieval]
    assert [s.record["type"] for s in retrieval] == ["TopDocuments", "Collaboration", "EntityFilter",
                                                     "TripleSelection", "TripleContext"]
    for s in retrieval:  # "§3.2.2 line N" is line N of the box (algorithm_lines.KG_RETRIEVER)
        assert s.record["line"].split()[2] == str(algorithm_lines.step_line(s))


@pytest.mark.parametrize("strategy", ["one-hop", "attentive", "multi-hop"])
def test_collaboration_links_give_each_document_its_weight(kg: FixtureGraph, strategy: str) -> None:
    steps, _ = retrieve(kg, strategy=strategy, top_n=2, k_neighbours=2)
    expand = step(steps, "expand")
    co = expand.record
    assert co["weights"] == expand.scores and co["hop_of"] == expand.data["hop"]
    best: dict[str, float] = {d: 1.0 for d, h in co["hop_of"].items() if h == 0}
    for link in co["links"]:
        assert (link["w"] is None) == (link["rank"] > co["k_neighbours"])
        if link["w"] is None:
            continue
        # w = the source's weight times its parts (the document cosine over the scale, capped at 1)
        want = 1.0 if strategy == "one-hop" else link["source_weight"] * min(1.0, link["doc_cosine"] / co["doc_scale"])
        assert link["w"] == pytest.approx(want)
        best[link["target"]] = max(best.get(link["target"], float("-inf")), link["w"])
    assert best == pytest.approx(co["weights"])  # a document keeps its largest weight over its paths
    # the edges drawn are the links looked at, in order: followed ones scored by w, the others by Eq. 1
    assert [(e.source, e.target, e.role, e.score) for e in expand.edges] == [
        (x["source"], x["target"], "rejected" if x["w"] is None else "chosen",
         x["edge_weight"] if x["w"] is None else x["w"]) for x in co["links"]]


@pytest.mark.parametrize("lam_mode", ["absolute", "relative"])
def test_the_entity_filter_record_is_eq_2(kg: FixtureGraph, lam_mode: str) -> None:
    steps, _ = retrieve(kg, "Which river flows past Lisbon near the Harbour Library?", strategy="attentive",
                        lam=0.1, lam_mode=lam_mode)
    score = step(steps, "score")
    f = score.record
    for e in f["ranked"]:
        assert e["score"] == pytest.approx(e["w"] * e["cosine"] / f["cos_scale"])
        assert score.scores[e["id"]] == e["score"]
    assert [e["id"] for e in f["ranked"]] == [n.id for n in score.nodes if n.table == "Entity"]
    assert set(f["kept"]) == {e["id"] for e in f["ranked"] if e["score"] > 0.1}
    assert set(f["below"]) == {e["id"] for e in f["ranked"] if e["score"] <= 0.1}
    assert [h["entities"] for h in f["hops"]] == [h["entities"] for h in score.data["hops"]]
    assert sum(h["entities"] for h in f["hops"]) == len(f["ranked"])


def test_selection_and_context_records_match_what_was_retrieved(kg: FixtureGraph) -> None:
    steps, context = retrieve(kg, "Which river flows into the Atlantic Ocean at Lisbon?", lam=0.0, max_t=3)
    sel, ctx = step(steps, "select").record, step(steps, "context").record
    assert list(sel["chosen"]) == list(ctx["items"]) == [i.id for i in context.items]
    assert sel["over_t"] and len(sel["chosen"]) == 3
    kept = set(step(steps, "score").record["kept"])
    score = {e["id"]: e["score"] for e in step(steps, "score").record["ranked"]}
    for t in sel["ranked"]:  # a triple's score is its best kept end's
        assert t["score"] == max(score[e] for e in (t["subject_id"], t["object_id"]) if e in kept)
    assert ctx["tokens"] == context.n_tokens == step(steps, "context").data["n_tokens"]


def test_an_empty_filter_still_records_its_lines(kg: FixtureGraph) -> None:
    steps, context = retrieve(kg, lam=5.0)
    assert context.items == [] and not step(steps, "score").record["kept"]
    sel, ctx = step(steps, "select"), step(steps, "context")
    assert (sel.record["type"], sel.record["ranked"], ctx.record["items"], ctx.record["tokens"]) == (
        "TripleSelection", [], [], 0)
    assert sel.data == {} and ctx.data == {}  # the words and figures of a run that keeps nothing, as before


def test_a_step_equals_itself_after_the_trace_round_trip(kg: FixtureGraph) -> None:
    steps, _ = retrieve(kg, strategy="multi-hop")
    for s in steps:
        assert TraceStep.from_dict(json.loads(json.dumps(s.to_dict()))) == s
