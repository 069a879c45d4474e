"""KG-Infused RAG as algorithm plus narrator: every step carries the typed record of the paper
stage it implements, the record names that stage and the algorithm-box line the player lights, and
the step's figures are the record's (the deciding scores order the triple selection)."""
from __future__ import annotations

import json

from tests.methods.test_kg_infused import ScriptedLLM, emb, film_store, picker, run  # noqa: F401 - fixtures

from kgviz.methods import algorithm_lines
from kgviz.methods import kg_infused_records as R
from kgviz.methods.base import Tracer, TraceStep, record_data
from kgviz.methods.kg_infused_narrator import narrate_frontier
from kgviz.providers.offline import OfflineLLM

QUESTION = "Where was the director of Forbidden Ground born?"
RECORD_TYPES = {cls.__name__: cls for cls in (
    R.SeedEntities, R.RoundCandidates, R.TripleSelection, R.Frontier, R.SubgraphSummary, R.QueryExpansion,
    R.DualRetrieval, R.BudgetFill, R.PassageNote, R.KgNote, R.AnswerInput)}


def _records(steps: list[TraceStep], kind: str) -> list[tuple[TraceStep, dict]]:
    """The steps carrying a record of ``kind``, with the record as a saved trace holds it (JSON)."""
    return [(s, json.loads(json.dumps(s.record))) for s in steps if s.record.get("type") == kind]


def test_every_step_names_its_paper_line_and_the_box_line_it_lights(film_store, emb) -> None:  # noqa: F811
    store, _ = film_store
    _, steps = run(store, OfflineLLM(), QUESTION, emb, budget_tokens=2000, passage_search="hybrid")
    assert [s.record["type"] for s in steps] == [
        "SeedEntities", "RoundCandidates", "TripleSelection", "Frontier", "RoundCandidates", "TripleSelection",
        "Frontier", "SubgraphSummary", "QueryExpansion", "DualRetrieval", "PassageNote", "KgNote", "BudgetFill",
        "AnswerInput"]
    algorithm_lines.annotate("kg-infused", steps)
    for s in steps:
        cls = RECORD_TYPES[s.record["type"]]
        assert s.record["line"] == cls.LINE and cls.LINE.startswith("§3.")
        # the record's own line and the box rule that lights the player's line agree
        assert s.data[algorithm_lines.DATA_KEY] == cls.BOX_LINE, s.title
        assert algorithm_lines.KG_INFUSED.line(cls.BOX_LINE)  # a line the box has


def test_offline_selection_is_its_records_scores_in_order(film_store, emb) -> None:  # noqa: F811
    store, _ = film_store
    top_m, floor = 2, 0.1
    _, steps = run(store, OfflineLLM(), QUESTION, emb, offline_top_m=top_m, offline_min_score=floor)
    records = _records(steps, "TripleSelection")
    selections = [(s, r) for s, r in records if r["candidates"]]
    assert selections
    for step, rec in records:  # a round without candidates asks no chooser
        assert (rec["by"] == "") == (not rec["candidates"]) == step.title.endswith("skipped")
    for step, rec in selections:
        score, order = rec["score"], rec["order"]
        assert sorted(order) == sorted(rec["candidates"])
        assert [score[i] for i in order] == sorted(score.values(), reverse=True)
        # the heuristic takes the best top_m scoring at least the floor, and says why each other was left out
        assert rec["selected"] == [i for i in order[:top_m] if score[i] >= floor]
        assert rec["by"] == "offline heuristic" and set(rec["rule"]) == set(order) - set(rec["selected"])
        for i, why in rec["rule"].items():
            assert ("below offline_min_score" in why) == (score[i] < floor)
        # the step shows the record's numbers: score, its terms, rank, reason
        assert step.scores == score and step.data["selected"] == rec["selected"]
        for n in (n for n in step.nodes if n.table == "Triple"):
            assert n.score == score[n.id] and n.rank == order.index(n.id) + 1
            assert abs(sum(n.score_parts.values()) - n.score) < 1e-3
            assert n.reason == rec["rule"].get(n.id, "")


def test_a_models_selection_keeps_the_cosine_and_the_model_decides(film_store, emb) -> None:  # noqa: F811
    store, _ = film_store
    _, steps = run(store, ScriptedLLM(picker({"genre"})), QUESTION, emb, max_rounds=1)
    (cand_step, cands), = _records(steps, "RoundCandidates")
    (step, rec), = _records(steps, "TripleSelection")
    cosine = {f["id"]: f["score"] for f in cands["candidates"]}
    assert rec["by"] == "model" and rec["rule"] == {} and rec["score"] == cosine == cand_step.scores
    assert rec["order"] == rec["by_cosine"] == sorted(cosine, key=lambda i: (-cosine[i], i))
    genre = [f["id"] for f in cands["candidates"] if f["relation"] == "genre"]
    assert genre and rec["selected"] == genre
    # a triple with a higher cosine than the model's pick says the model decided
    low = min(cosine[i] for i in genre)
    above = [n for n in step.nodes if n.role == "rejected" and n.score is not None and n.score > low + 1e-9]
    assert all("the model's selection, not the cosine, decided" in n.reason for n in above)


def test_round_and_frontier_records_match_their_steps(film_store, emb) -> None:  # noqa: F811
    store, _ = film_store
    _, steps = run(store, OfflineLLM(), QUESTION, emb, max_triples_per_entity=1, direction="both")
    for step, rec in _records(steps, "RoundCandidates"):
        assert [f["id"] for f in rec["candidates"]] == list(step.scores)
        assert rec["direction"] == step.data["direction"] == "both"
        assert all(c["kept"] <= 1 and c["kept"] <= c["total"] for c in rec["per_entity"].values())
    frontiers = _records(steps, "Frontier")
    for step, rec in frontiers:
        assert [e["id"] for e in rec["frontier"]] == step.data["frontier"]
        assert rec["memory_size"] == step.data["memory_size"]
    last_step, last = frontiers[-1]
    assert last["stop"] in ("no_triple", "no_new_entity", "max_rounds") and last_step.data["stop"]
    assert all(not rec["stop"] for _, rec in frontiers[:-1])


def test_dual_retrieval_record_holds_both_rankings_and_the_split(film_store, emb) -> None:  # noqa: F811
    store, _ = film_store
    out, steps = run(store, OfflineLLM(), QUESTION, emb, passage_search="dense")
    (step, rec), = _records(steps, "DualRetrieval")
    assert rec["question_passages"] == [c for c, _ in rec["question_ranking"]][: rec["k_p"] // 2]
    assert set(rec["duplicates"]) <= set(rec["question_passages"])
    assert not set(rec["expanded_passages"]) & set(rec["question_passages"])
    want = dict(rec["expanded_ranking"]) | dict(rec["question_ranking"])
    assert step.scores == want
    (_, ctx), = _records(steps, "AnswerInput")
    assert ctx["items"] == [i.id for i in out.items] and ctx["tokens"] == out.n_tokens


def test_records_survive_the_trace_round_trip(film_store, emb) -> None:  # noqa: F811
    store, _ = film_store
    _, steps = run(store, OfflineLLM(), QUESTION, emb)
    for step in steps:
        back = TraceStep.from_dict(json.loads(json.dumps(step.to_dict())))
        assert back.record == json.loads(json.dumps(step.record)) and back.record["type"]


def test_the_narrator_words_a_stop_from_the_record_alone() -> None:
    tracer = Tracer()
    rec = R.Frontier(round=2, frontier=(R.Named("e:1", "Budapest"),), over_cap=(R.Named("e:2", "Vienna"),),
                     already_active=(), memory_size=3, activated=4, stop="max_rounds", max_rounds=2,
                     max_entities_per_round=1, heads=1, direction_setting="auto")
    step = narrate_frontier(tracer, rec)
    assert step.title == "Round 2: activation frontier — stop (max_rounds=2 reached)"
    assert step.data["stop"] == "max_rounds=2 reached" and step.data["expanded_next"] is False
    assert [(n.id, n.role, n.label) for n in step.nodes] == [("e:1", "chosen", "Budapest"),
                                                             ("e:2", "rejected", "Vienna")]
    assert "1 dropped by max_entities_per_round=1" in step.detail
    assert "1 of the selected triples' next entities are heads" in step.ours
    assert step.record == record_data(rec) and step.record["line"] == R.Frontier.LINE
