"""The offline check judges the *answer* against the context, not the question it restates.

Regression: on sample question s07 the wrong answer "Mira Tesk" was labelled supported because
the claim 'The answer to "<question>" is Mira Tesk' shares most of its words with the passage
"Mira Tesk said that the Orrin Bridge was unsafe".
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.claims import short_claim
from kgviz.methods.base import ContextItem, RetrievedContext
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.run import Run
from kgviz.types import Usage
from kgviz.offline.judge import check_claim, question_relation
from kgviz.verify.judge import verify_run

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"
PARAPHRASE = "Who designed the bridge that Mira Tesk said was unsafe?"


def _doc(name: str) -> str:
    text = (SAMPLE / "corpus" / name).read_text(encoding="utf-8")
    return text.split("\n", 1)[1] if name.endswith(".md") else text


def _s07() -> str:
    for line in (SAMPLE / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["id"] == "s07":
            assert q["answers"] == ["Edda Lunn"]
            return q["question"]
    raise AssertionError("s07 missing from sample_data/questions.jsonl")


@pytest.fixture(scope="module")
def context() -> list[tuple[str, str]]:
    items = [("kellhaven", _doc("kellhaven.md")), ("tarrow", _doc("tarrow.txt")),
             ("orrin_bridge", _doc("orrin_bridge.md"))]
    joined = " ".join(t for _, t in items)
    assert "was designed by Edda Lunn" in joined and "Mira Tesk said that the Orrin Bridge was unsafe" in joined
    return items


def _judge(question: str, answer: str, items: list[tuple[str, str]], embedder: HashingEmbedder | None = None):
    claim = short_claim(question, answer)
    return check_claim(claim.text, items, embedder, focus=claim.focus, question=question)


@pytest.mark.parametrize("question", [_s07(), PARAPHRASE])
def test_wrong_answer_that_restates_the_question_is_not_supported(question: str,
                                                                   context: list[tuple[str, str]]) -> None:
    wrong = _judge(question, "Mira Tesk", context, HashingEmbedder())
    assert wrong.label == "not_found"
    assert "designed" in wrong.reason and wrong.evidence == ()
    right = _judge(question, "Edda Lunn", context, HashingEmbedder())
    assert right.label == "supported" and right.evidence == ("orrin_bridge",)


def test_triple_whose_relation_matches_supports_its_subject() -> None:
    triples = [("tri:1", "Mira Tesk said Orrin Bridge was unsafe"), ("tri:2", "Edda Lunn designed Orrin Bridge")]
    assert _judge(PARAPHRASE, "Edda Lunn", triples).evidence == ("tri:2",)
    assert _judge(PARAPHRASE, "Mira Tesk", triples).label == "not_found"
    # without the designing triple nothing links any answer to "designed"
    assert _judge(PARAPHRASE, "Edda Lunn", triples[:1]).label == "not_found"


def test_relation_words_leave_out_names_wh_phrase_and_relative_clause() -> None:
    rel = question_relation(PARAPHRASE, "Mira Tesk")
    assert rel.head == ("designed",) and rel.words == {"designed", "bridge"}
    assert question_relation("In what year was the Tidewell Line founded?", "1898").head == ("founded",)
    assert question_relation("How tall is the tower of Skellan Point Lighthouse?", "38 metres").head == ("tall",)
    assert question_relation("Who is the editor of the Kellhaven Courier?", "Mira Tesk").head == ("editor",)
    # a verb right after "which" is the predicate, not the answer's type
    assert question_relation("Which began earlier, the Saltwind Festival or the Saltwind Fair?",
                             "Saltwind Fair").head == ("began",)


def test_word_forms_of_the_predicate_match() -> None:
    items = [("c1", "Edda Lunn was the designer of the Orrin Bridge."),
             ("c2", "Mira Tesk said that the Orrin Bridge was unsafe.")]
    res = _judge(PARAPHRASE, "Edda Lunn", items)
    assert res.label == "supported" and "designer" in res.matched
    # the designer sentence alone never says it is the bridge Mira Tesk spoke of
    assert _judge(PARAPHRASE, "Edda Lunn", items[:1]).label == "not_found"


def test_long_claim_needs_its_own_verb() -> None:
    items = [("c1", "In 1949 the journalist Mira Tesk said that the Orrin Bridge was unsafe.")]
    assert check_claim("The Orrin Bridge was designed by Mira Tesk.", items).label == "not_found"
    assert check_claim("Mira Tesk said that the Orrin Bridge was unsafe.", items).label == "supported"


def test_verify_run_counts_the_restated_answer_as_a_hallucination(context: list[tuple[str, str]]) -> None:
    reasoner = Reasoner(OfflineLLM(), HashingEmbedder())
    ctx = RetrievedContext(items=[ContextItem(i, "chunk", t, n_tokens=len(t.split())) for i, t in context])

    def run(answer: str) -> Run:
        return Run(method="text-rag", question=_s07(), params={}, context=ctx, answer=answer, trace=[],
                   usage=Usage(), mode="offline")

    assert verify_run(run("Mira Tesk"), reasoner).hallucinated
    assert not verify_run(run("Edda Lunn"), reasoner).hallucinated
