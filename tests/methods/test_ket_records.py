"""KET-RAG's two channels as algorithm plus narrator: each step carries the typed record of the
Algorithm 2 / Algorithm 4 line it implements, and the step's figures are the record's."""
from __future__ import annotations

import json

from tests.methods.test_ket_rag import ket_kg, retrieve  # noqa: F401 - the module-scoped KET fixture graph
from tests.support.fixture_graph import FixtureGraph

from kgviz.methods.base import TraceStep
from kgviz.methods.ket_rag import KetRag, KetRagParams


def test_keyword_steps_carry_their_algorithm_line_and_numbers(ket_kg: FixtureGraph) -> None:  # noqa: F811
    out, steps = retrieve(ket_kg, KetRag(), KetRagParams(context_limit=500))
    keyword = [s for s in steps if s.data.get("channel") == "keyword"]
    assert [s.record["line"] for s in keyword] == ["Alg. 4 line 2", "Alg. 4 line 3", "Alg. 4 line 4"]
    assert [s.record["type"] for s in keyword] == ["KeywordPool", "KeywordRanking", "KeywordFill"]
    pool, ranking, fill = (s.record for s in keyword)
    assert pool["tokens"] == keyword[0].data["used"] == sum(n for _, n in pool["pool"])
    assert pool["budget"] == keyword[0].data["budget"] == 600
    assert len(pool["seeds"]) == keyword[0].data["seeded_total"]
    assert list(ranking["ranked"]) == [n.id for n in keyword[1].nodes if n.table == "SubChunk"]
    assert ranking["score"] == keyword[1].scores
    assert list(fill["chosen"]) == keyword[2].data["items"] and set(fill["chosen"]) <= {i.id for i in out.items}
    assert fill["used"] == keyword[2].data["used"] <= fill["budget"] == 300


def test_skeleton_steps_carry_their_algorithm_line_and_numbers(ket_kg: FixtureGraph) -> None:  # noqa: F811
    out, steps = retrieve(ket_kg, KetRag(), KetRagParams(context_limit=500))
    skeleton = [s for s in steps if s.data.get("channel") == "skeleton"]
    assert [s.record["line"] for s in skeleton] == ["Alg. 2 line 1", "Alg. 2 line 2", "Alg. 2 line 3"]
    seeds, rels, units = (s.record for s in skeleton)
    # seeds: the entity+relationship half, filled in rank order until the first overflow
    assert seeds["used"] == skeleton[0].data["used"] == sum(n for e, n in seeds["sized"] if e in seeds["chosen"])
    assert seeds["entity_relationship_budget"] == skeleton[0].data["entity_relationship_budget"]
    assert [e for e, _ in seeds["sized"]] == [e["id"] for e in seeds["seeds"]]
    assert list(seeds["chosen"]) == [n.id for n in skeleton[0].nodes if n.role == "seed"]
    # relationships: ranked by (adjacency, other end's links, cosine), the step's score is adjacency
    keys = [(-r["adjacency"], -r["other_links"], -r["cosine"], r["id"]) for r in rels["ranked"]]
    assert keys == sorted(keys)
    assert {t: float(r["adjacency"]) for r in rels["ranked"] for t in [r["id"]] if t in skeleton[1].scores} \
        == skeleton[1].scores
    assert rels["used"] == skeleton[1].data["used"] <= rels["entity_relationship_budget"]
    assert set(rels["seeds"]) == set(seeds["chosen"])
    # text units: each ranked by the links of its chunk, the chosen ones are the channel's last items
    assert all(u["links"] == len(units["linked"].get(u["chunk"], ())) for u in units["ranked"])
    assert list(units["items"]) == skeleton[2].data["items"] == [i.id for i in out.items[: len(units["items"])]]
    assert list(units["items"][-len(units["chosen"]):]) == list(units["chosen"])
    assert units["used"] == skeleton[2].data["used"] <= units["budget"] == 200
    assert units["room"] == units["budget"] - rels["used"]


def test_a_skeleton_whose_seeds_do_not_fit_records_its_empty_line(ket_kg: FixtureGraph) -> None:  # noqa: F811
    _, steps = retrieve(ket_kg, KetRag(), KetRagParams(context_limit=500, text_unit_share=1.0))
    skeleton = [s for s in steps if s.data.get("channel") == "skeleton"]
    assert [s.record["type"] for s in skeleton] == ["SkeletonSeeds", "SkeletonEmpty"]
    assert skeleton[1].record["used"] == skeleton[1].data["used"] == 0


def test_a_record_survives_the_trace_round_trip(ket_kg: FixtureGraph) -> None:  # noqa: F811
    _, steps = retrieve(ket_kg, KetRag(), KetRagParams(context_limit=500))
    step = next(s for s in steps if s.record.get("type") == "KeywordFill")
    back = TraceStep.from_dict(json.loads(json.dumps(step.to_dict())))
    assert back.record == step.record  # records are stored in the shape JSON reads back
    assert all(TraceStep.from_dict(json.loads(json.dumps(s.to_dict()))) == s for s in steps if s.record)
    plain = TraceStep(0, "llm", "a step written without a record")
    assert "record" not in plain.to_dict()  # steps without a record keep their old shape
