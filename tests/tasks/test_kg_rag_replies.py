"""kg-rag task parsers on replies real small models wrote (issue 15)."""
from __future__ import annotations

import pytest

from kgviz.reasoning import get_task
from kgviz.task_results import KgRagChoice
from kgviz.tasks.kg_rag import parse_decision, parse_plan, reason_says_insufficient

Q = {"question": "When was the director of Titanic born?", "max_hops": 5}


@pytest.mark.parametrize("raw", [
    "ENTITIES: Titanic; James Cameron RELATIONS: directed; born in HOPS: 2",
    "**ENTITIES:** Titanic; James Cameron **RELATIONS:** directed; born in **HOPS:** 2",
    "Here is the plan.\nENTITIES: Titanic; James Cameron\nRELATIONS: directed; born in\nHOPS: 2",
])
def test_plan_labels_on_one_line_or_bold_are_read(raw: str) -> None:
    plan = parse_plan(raw, Q)
    assert plan.entities == ("Titanic", "James Cameron")
    assert plan.relations == ("directed", "born in")
    assert plan.hops == 2 and plan.notes == ()


def test_a_reply_with_no_plan_is_not_worth_caching() -> None:
    task = get_task("kgrag_plan")
    guessed = parse_plan("I am not sure.", Q)
    assert len(guessed.notes) == 3 and task.usable is not None and task.usable(guessed)
    assert task.usable(parse_plan("ENTITIES: Titanic\nRELATIONS: directed\nHOPS: 2", Q)) == ""


def test_stop_with_a_reason_saying_insufficient_is_overruled() -> None:
    d = parse_decision("DECISION: STOP\nREASON: The facts are insufficient: they do not mention his birth.", Q)
    assert d.decision == "continue" and d.overruled == "stop"
    assert "STOP overruled to CONTINUE" in d.reason and "do not mention" in d.reason
    # reason first, as the prompt now asks
    assert parse_decision("REASON: his birth year is not stated\nDECISION: STOP", Q).decision == "continue"


@pytest.mark.parametrize("raw", [
    "DECISION: STOP\nREASON: James Cameron was born in 1954, which answers the question.",
    "REASON: The facts give his birth year; nothing is missing.\nDECISION: STOP",
])
def test_stop_with_a_sufficient_reason_stands(raw: str) -> None:
    d = parse_decision(raw, Q)
    assert d.decision == "stop" and d.overruled == ""


def test_continue_and_backtrack_are_never_overruled() -> None:
    assert parse_decision("DECISION: CONTINUE\nREASON: the year is missing", Q).decision == "continue"
    assert parse_decision("DECISION: BACKTRACK\nREASON: irrelevant, no information", Q).decision == "backtrack"


@pytest.mark.parametrize("reason,insufficient", [
    ("The facts are enough to answer.", False),
    ("The birth date is missing.", True),
    ("Cameron's birthplace is not stated.", True),
    ("The facts don't say when he was born.", True),
    ("We cannot answer yet.", True),
    ("Nothing is missing.", False),
])
def test_insufficiency_rule(reason: str, insufficient: bool) -> None:
    assert reason_says_insufficient(reason) is insufficient


def test_choice_and_decision_usability() -> None:
    choose, evaluate = get_task("kgrag_choose"), get_task("kgrag_evaluate")
    assert choose.usable is not None and evaluate.usable is not None
    assert choose.usable(KgRagChoice(()))
    assert choose.usable(KgRagChoice((), said_none=True)) == ""
    assert choose.usable(KgRagChoice((), from_choice_line=True)) == ""
    assert choose.usable(KgRagChoice(("tri:1",))) == ""
    assert evaluate.usable(parse_decision("maybe stop, maybe continue", Q))
    assert evaluate.usable(parse_decision("DECISION: STOP\nREASON: enough", Q)) == ""


# --- kg-infused: a note is kept whole (issue 15) ---------------------------------------------------
def test_clean_reply_keeps_the_whole_note() -> None:
    from kgviz.tasks.kg_infused import clean_reply

    note = ("Edda Lunn founded the Tidewell Line in 1898 in Kellhaven.\nIts ships sailed to Tarrow.\n"
            "Note: the facts did not mention who succeeded her.")
    assert clean_reply(note, ("note", "passage note")) == note
    assert clean_reply("Here is the note:\nNote: A.\nB.\nNote: C.", ("note",)) == "A.\nB.\nNote: C."
    assert clean_reply("<think>plan</think>\n```\nSummary: X\nY\n```", ("summary",)) == "X\nY"


def test_expanded_query_still_reads_after_its_label() -> None:
    from kgviz.tasks.kg_infused import clean_reply

    assert clean_reply("I will add the bridge.\nNew query: who founded X", ("new query",), after_label=True) == \
        "who founded X"


def test_think_blocks_are_not_read_as_answers() -> None:
    from kgviz.tasks.kg_rag import parse_choice

    cands = [{"n": 1, "id": "tri:a"}, {"n": 2, "id": "tri:b"}]
    got = parse_choice("<think>1 looks off, maybe 2? CHOICE: 1</think>\n2", {"candidates": cands, "width": 1})
    assert got.chosen == ("tri:b",)
    assert parse_decision("<think>DECISION: STOP</think>\nREASON: on track\nDECISION: CONTINUE", Q).decision == "continue"
    plan = parse_plan("<think>ENTITIES: nonsense</think>\nENTITIES: Titanic\nRELATIONS: directed\nHOPS: 2", Q)
    assert plan.entities == ("Titanic",)


def test_judge_json_after_a_think_block() -> None:
    task = get_task("judge_claim")
    raw = '<think>{"draft": true}</think>\n```json\n{"verdict": "supported", "evidence": [1], "reason": "Passage 1 says 1898."}\n```'
    res = task.parse(raw, {"items": [("doc:a#c0", "Founded in 1898.")], "claim": "1898"})
    assert res.label == "supported" and res.evidence == ("doc:a#c0",)


def test_a_looping_note_is_cut_at_the_repeat() -> None:
    from kgviz.tasks.kg_infused import clean_reply

    raw = "Edda Lunn founded it.\n" + "The ships sailed to Tarrow.\n" * 50
    assert clean_reply(raw, ("note",)) == "Edda Lunn founded it.\n" + "\n".join(["The ships sailed to Tarrow."] * 3)


@pytest.mark.parametrize("reason", [
    "Passage 1 says the ship lacked sails.",
    "The missing ship was found in 1900, as passage 2 states.",
    "The unknown soldier is buried in Kellhaven according to passage 1.",
])
def test_facts_about_the_world_are_not_read_as_insufficient_evidence(reason: str) -> None:
    assert not reason_says_insufficient(reason)
