"""Claim verdicts: the offline check and an LLM judge (a scripted fake LLM, no network)."""
from __future__ import annotations

import json
from typing import Any, Sequence

import pytest

from kgviz.methods.base import ContextItem, RetrievedContext
from kgviz.providers.base import LLM, LLMBase
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.run import Run
from kgviz.types import Completion, Message, Usage
from kgviz.offline.judge import OFFLINE_JUDGE_LABEL, check_claim, checkables
from kgviz.verify.judge import verify_run

CHUNK = ("The Tidewell Line is a ferry company. It was founded in 1898 by Edda Lunn in Kellhaven. "
         "Its ships sailed between Kellhaven and Tarrow.")
TRIPLE = "Agnes Vohl born in Tarrow"
QUESTION = "In what year was the Tidewell Line founded?"


def make_run(answer: str, question: str = QUESTION, *, error: str = "", method: str = "text-rag",
             items: Sequence[tuple[str, str, str]] = (("doc:a#c0", "chunk", CHUNK),
                                                      ("tri:1", "triple", TRIPLE))) -> Run:
    ctx = RetrievedContext(items=[ContextItem(i, k, t, n_tokens=len(t.split())) for i, k, t in items])
    return Run(method=method, question=question, params={}, context=ctx, answer=answer, trace=[],
               usage=Usage(), mode="offline", error=error)


@pytest.fixture
def offline() -> Reasoner:
    return Reasoner(OfflineLLM(), HashingEmbedder())


def test_supported_short_answer_links_its_evidence(offline: Reasoner) -> None:
    v = verify_run(make_run("1898"), offline)
    assert v.judge == OFFLINE_JUDGE_LABEL
    assert [c.label for c in v.claims] == ["supported"]
    assert v.claims[0].evidence == ["doc:a#c0"]
    assert not v.hallucinated and not v.abstained


def test_planted_unsupported_claim_is_flagged(offline: Reasoner) -> None:
    answer = "The Tidewell Line was founded in 1898 by Edda Lunn. Its first captain was Marcus Bell."
    v = verify_run(make_run(answer, "Tell me about the Tidewell Line."), offline)
    assert [c.label for c in v.claims] == ["supported", "not_found"]
    assert "Marcus Bell" in v.claims[1].reason
    assert v.claims[1].evidence == []
    assert v.hallucinated and v.unsupported == 1


def test_contradicted_number_short_and_long(offline: Reasoner) -> None:
    short = verify_run(make_run("1899"), offline)
    assert [c.label for c in short.claims] == ["contradicted"]
    assert short.claims[0].evidence == ["doc:a#c0"] and "1898" in short.claims[0].reason
    assert short.hallucinated
    long = verify_run(make_run("The Tidewell Line was founded in 1901 by Edda Lunn in Kellhaven.",
                               "When and by whom was the Tidewell Line founded?"), offline)
    assert [c.label for c in long.claims] == ["contradicted"]


def test_wrong_name_present_elsewhere_is_not_found(offline: Reasoner) -> None:
    # "Tarrow" and "Tidewell Line" both occur, but no passage says the line was founded in Tarrow
    v = verify_run(make_run("The Tidewell Line was founded in Tarrow.", "Where was the Tidewell Line founded?"),
                   offline)
    assert [c.label for c in v.claims] == ["not_found"]


def test_abstention_and_failure_are_not_hallucinations(offline: Reasoner) -> None:
    a = verify_run(make_run("insufficient information"), offline)
    assert a.abstained and not a.hallucinated and a.claims == []
    f = verify_run(make_run("", error="boom"), offline)
    assert f.failed and not f.hallucinated and not f.abstained
    none = verify_run(make_run("1898", items=()), offline)  # no context: nothing can support it
    assert [c.label for c in none.claims] == ["not_found"] and none.hallucinated


def test_checkables_and_direct_check() -> None:
    kinds = {(c.text, c.kind) for c in checkables("The Harbour Library opened in 1998 with 400,000 books.")}
    assert kinds == {("Harbour Library", "name"), ("1998", "year"), ("400,000", "number")}
    res = check_claim("Its ships sailed between Kellhaven and Tarrow.", [("c1", CHUNK)])
    assert res.label == "supported" and res.evidence == ("c1",)


def test_verdict_dict_for_the_cli(offline: Reasoner) -> None:
    d = verify_run(make_run("1899"), offline).to_dict()
    assert d["labels"] == ["contradicted"] and d["hallucinated"] is True and d["abstained"] is False
    assert d["evidence_ids"] == ["doc:a#c0"]
    json.dumps(d)


# --- an LLM judge through the Reasoner ---------------------------------------------------------
class ScriptedLLM(LLMBase):
    """Implements kgviz.providers.base.LLM; replies from a script, records what it was asked."""

    provider = "scripted"
    model = "judge-1"

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        self.calls.append({"prompt": messages[-1].content, "system": system, "schema": json_schema})
        return Completion(self.replies.pop(0), Usage(input_tokens=100, output_tokens=20, calls=1), self.model,
                          self.provider)


def test_scripted_llm_is_an_llm() -> None:
    assert isinstance(ScriptedLLM([]), LLM)


def test_llm_judge_parses_json_verdicts_and_maps_evidence_numbers() -> None:
    llm = ScriptedLLM([
        json.dumps({"claims": ["The Tidewell Line was founded in 1898.", "Marcus Bell captained its first ship."]}),
        json.dumps({"verdict": "supported", "evidence": [1], "reason": "passage 1 says so"}),
        "```json\n" + json.dumps({"verdict": "not_found", "evidence": [], "reason": "no captain named"}) + "\n```",
    ])
    answer = "The Tidewell Line was founded in 1898, and Marcus Bell captained its first ship in its first year."
    v = verify_run(make_run(answer, "Tell me about the Tidewell Line."), Reasoner(llm, HashingEmbedder()))
    assert v.judge == "LLM judge (scripted:judge-1)"
    assert [c.label for c in v.claims] == ["supported", "not_found"]
    assert v.claims[0].evidence == ["doc:a#c0"]
    assert v.claims[0].start == 0  # located verbatim in the answer
    assert v.hallucinated
    assert v.usage.calls == 3 and v.usage.input_tokens == 300
    split, judge = llm.calls[0], llm.calls[1]
    assert split["schema"]["required"] == ["claims"]
    assert judge["schema"]["properties"]["verdict"]["enum"] == ["supported", "contradicted", "not_found"]
    assert "[1] (doc:a#c0)" in judge["prompt"] and "[2] (tri:1) Agnes Vohl born in Tarrow" in judge["prompt"]
    assert "The Tidewell Line was founded in 1898." in judge["prompt"]


def test_short_answer_needs_no_split_call() -> None:
    llm = ScriptedLLM([json.dumps({"verdict": "contradicted", "evidence": ["doc:a#c0"], "reason": "says 1898"})])
    v = verify_run(make_run("1899"), Reasoner(llm, HashingEmbedder()))
    assert len(llm.calls) == 1
    assert [(c.label, c.evidence) for c in v.claims] == [("contradicted", ["doc:a#c0"])]


@pytest.mark.parametrize("reply", ["The claim is supported.", '{"verdict": "probably", "evidence": []}',
                                   '{"verdict": "supported", "evidence": [1', "[]"])
def test_malformed_judge_reply_is_labelled_unparsed_not_a_crash(reply: str) -> None:
    v = verify_run(make_run("1898"), Reasoner(ScriptedLLM([reply]), HashingEmbedder()))
    [claim] = v.claims
    assert claim.label == "unparsed"
    assert claim.raw_output == reply
    assert claim.reason  # a readable parse error
    assert v.errors and not v.hallucinated  # unparsed is shown, not counted as a hallucination
    assert v.to_dict()["counts"]["unparsed"] == 1


def test_malformed_split_reply_judges_the_whole_answer_visibly() -> None:
    llm = ScriptedLLM(["claims: one, two", json.dumps({"verdict": "supported", "evidence": [1], "reason": "ok"})])
    answer = "The Tidewell Line was founded in 1898. It was founded by Edda Lunn in the town of Kellhaven."
    v = verify_run(make_run(answer, "Tell me about the Tidewell Line."), Reasoner(llm, HashingEmbedder()))
    assert [c.label for c in v.claims] == ["supported"]
    assert v.claims[0].text == answer
    assert any("claim split failed" in e for e in v.errors)
    assert v.usage.calls == 2  # the unparseable split call is still accounted


# --- issue 15: the judge's label must agree with its own reason and evidence ---------------------
class _JudgeSays(LLMBase):
    """A judge LLM that always replies with one JSON verdict."""

    provider, model = "fake", "judge-1.5b"

    def __init__(self, verdict: dict[str, Any]) -> None:
        self.reply = json.dumps(verdict)

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        return Completion(self.reply, Usage(input_tokens=10, output_tokens=5, calls=1), self.model, self.provider)


@pytest.mark.parametrize("reply, judge_said", [
    ({"verdict": "supported", "evidence": [], "reason": "The context says so."}, "supported"),
    ({"verdict": "supported", "evidence": [7], "reason": "Passage 7 says so."}, "supported"),  # no such passage
    ({"verdict": "supported", "evidence": [1], "reason": "The context does not mention Cape May."}, "supported"),
    ({"verdict": "supported", "evidence": [1], "reason": "Passage 1 contradicts the claim."}, "supported"),
    ({"verdict": "contradicted", "evidence": [], "reason": "Wrong."}, "contradicted"),
])
def test_label_contradicting_its_reason_or_evidence_is_downgraded(reply: dict, judge_said: str) -> None:
    v = verify_run(make_run("Cape May"), Reasoner(_JudgeSays(reply), HashingEmbedder()))
    (claim,) = v.claims
    assert claim.label == "not_found" and claim.judge_label == judge_said
    assert "counted as not_found" in claim.adjustment
    assert v.hallucinated and v.disagreements == 1
    d = v.to_dict()
    assert d["judge_disagreements"] == 1 and d["claims"][0]["judge_label"] == judge_said
    assert any("cited no passage" in e or "reason says" in e for e in v.errors)


def test_a_consistent_judge_label_stands() -> None:
    reply = {"verdict": "supported", "evidence": [1], "reason": "Passage 1 says it was founded in 1898."}
    v = verify_run(make_run("1898"), Reasoner(_JudgeSays(reply), HashingEmbedder()))
    assert [c.label for c in v.claims] == ["supported"] and v.claims[0].evidence == ["doc:a#c0"]
    assert v.disagreements == 0 and v.claims[0].judge_label == "" and not v.hallucinated
    honest = {"verdict": "not_found", "evidence": [], "reason": "The context does not mention it."}
    v = verify_run(make_run("Cape May"), Reasoner(_JudgeSays(honest), HashingEmbedder()))
    assert [c.label for c in v.claims] == ["not_found"] and v.disagreements == 0


# --- issue 23: evidence is source text only; a reason that echoes the prompt is no verdict ---------
NOTE = "The Tidewell Line was founded in 1898 by Edda Lunn (the method's own summary)."


def test_a_methods_note_is_never_shown_to_the_judge_nor_cited() -> None:
    llm = ScriptedLLM([json.dumps({"verdict": "supported", "evidence": [1], "reason": "passage 1 says 1898"})])
    run = make_run("1898", items=(("note:kg-infused", "note", NOTE), ("doc:a#c0", "chunk", CHUNK)))
    v = verify_run(run, Reasoner(llm, HashingEmbedder()))
    prompt = llm.calls[0]["prompt"]
    assert NOTE not in prompt and "note:kg-infused" not in prompt
    assert "[1] (doc:a#c0)" in prompt  # the first source item is passage 1
    assert v.claims[0].evidence == ["doc:a#c0"] and v.reasoning_ids == ["note:kg-infused"]
    assert v.to_dict()["reasoning_ids"] == ["note:kg-infused"]


def test_a_context_of_notes_only_supports_nothing_and_asks_no_judge() -> None:
    llm = ScriptedLLM([])  # any call would fail: nothing is left to judge against
    v = verify_run(make_run("1898", items=(("note:kg-infused", "note", NOTE),)), Reasoner(llm, HashingEmbedder()))
    assert llm.calls == [] and [c.label for c in v.claims] == ["not_found"]
    assert "note:kg-infused" in v.claims[0].reason and "reasoning, not evidence" in v.claims[0].reason
    assert v.hallucinated
    offline = verify_run(make_run("1898", items=(("note:kg-infused", "note", NOTE),)),
                         Reasoner(OfflineLLM(), HashingEmbedder()))
    assert [c.label for c in offline.claims] == ["not_found"] and offline.claims[0].evidence == []


@pytest.mark.parametrize("reason", ["One short sentence", "1 short sentence", "two short sentences", "not_found",
                                   "Supported.", ""])
def test_a_reason_that_echoes_the_prompt_is_unparsed(reason: str) -> None:
    reply = json.dumps({"verdict": "supported", "evidence": [1], "reason": reason})
    v = verify_run(make_run("1898"), Reasoner(ScriptedLLM([reply]), HashingEmbedder()))
    (claim,) = v.claims
    assert claim.label == "unparsed" and claim.raw_output == reply
    assert "not about the claim" in claim.reason and not v.hallucinated


def test_a_reason_about_the_claim_stands() -> None:
    reply = json.dumps({"verdict": "supported", "evidence": [1], "reason": "Passage 1: founded in 1898."})
    v = verify_run(make_run("1898"), Reasoner(ScriptedLLM([reply]), HashingEmbedder()))
    assert [c.label for c in v.claims] == ["supported"]


def test_the_echo_values_are_the_prompts_own() -> None:
    from kgviz.prompts.verify import JUDGE_CLAIM, JUDGE_CLAIM_FORMAT_VALUES

    assert all(f'"{v}"' in JUDGE_CLAIM for v in JUDGE_CLAIM_FORMAT_VALUES)
