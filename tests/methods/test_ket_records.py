"""KET-RAG's keyword channel as algorithm plus narrator: each of its steps carries the typed record
of the Algorithm 4 line it implements, and the step's figures are the record's."""
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
    # the skeleton channel's steps are not narrated from records yet
    assert all(not s.record for s in steps if s.data.get("channel") == "skeleton")


def test_a_record_survives_the_trace_round_trip(ket_kg: FixtureGraph) -> None:  # noqa: F811
    _, steps = retrieve(ket_kg, KetRag(), KetRagParams(context_limit=500))
    step = next(s for s in steps if s.record.get("type") == "KeywordFill")
    back = TraceStep.from_dict(json.loads(json.dumps(step.to_dict())))
    assert back.record == json.loads(json.dumps(step.record))
    plain = next(s for s in steps if not s.record)
    assert "record" not in plain.to_dict()  # steps without a record keep their old shape
