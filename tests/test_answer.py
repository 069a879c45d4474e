"""The shared answer step: prompt rendering, reply parsing, the budget rule, the offline
extractive heuristic, and what lands in the trace."""
from __future__ import annotations

from typing import Any, Sequence

import pytest

from kgviz.answer import MIN_CUT_TOKENS, answer, fit_budget, truncate_tokens
from kgviz.errors import LLMOutputError
from kgviz.methods.base import ContextItem, RetrievedContext, Tracer
from kgviz.prompts.answer import INSUFFICIENT
from kgviz.providers.base import LLMBase
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner, get_task
from kgviz.text import count_tokens
from kgviz.types import Completion, Message, Usage

PASSAGES = [
    "Adam Collis is an American filmmaker and actor. He attended Duke University from 1986 to 1990.",
    "Love in the Ruins is a 1995 short film directed by Scott Derrickson. It was produced in Los Angeles.",
    "Tyler Bates (born June 5, 1965) is an American musician. He scored 12 films with James Gunn.",
]


class ScriptedLLM(LLMBase):
    """A non-offline LLM that replies with a fixed text and records what it was sent."""

    provider = "fake"
    model = "scripted"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.sent: list[tuple[list[Message], str | None]] = []

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        self.sent.append((list(messages), system))
        return Completion(self.reply, Usage(input_tokens=100, output_tokens=3, calls=1), self.model, self.provider)


@pytest.fixture(scope="module")
def offline() -> Reasoner:
    return Reasoner(OfflineLLM(), HashingEmbedder())


def _ctx(texts: list[str]) -> RetrievedContext:
    return RetrievedContext(items=[ContextItem(f"doc:x#c{i}", "chunk", t, source=f"t{i}") for i, t in enumerate(texts)])


@pytest.mark.parametrize("raw,expected", [
    ("Paris", "Paris"),
    ("Answer: Paris.", "Paris"),
    ("**Answer:** Scott Derrickson", "Scott Derrickson"),
    ("Final answer - 1965", "1965"),
    ("A: Paris", "Paris"),
    ("A-ha", "A-ha"),
    ("Answer:\nJune 5, 1965\nBecause the context says so.", "June 5, 1965"),
    ('"Los Angeles"', "Los Angeles"),
    ("Insufficient information.", INSUFFICIENT),
    ("The context gives insufficient information to answer.", INSUFFICIENT),
    ("J. R. R. Tolkien.", "J. R. R. Tolkien"),
    ("Washington, D.C.", "Washington, D.C."),  # an initial's period is part of the answer
    ("He was born in Oxford in the year 1892, in England.", "He was born in Oxford in the year 1892, in England."),
])
def test_parse_strips_prefixes_and_normalises_abstentions(raw: str, expected: str) -> None:
    assert get_task("answer").parse(raw, {}) == expected


@pytest.mark.parametrize("raw", ["", "   \n ", "Answer:"])
def test_parse_rejects_empty_replies(raw: str) -> None:
    with pytest.raises(LLMOutputError):
        get_task("answer").parse(raw, {})


def test_render_uses_answer_or_no_context_prompt() -> None:
    task = get_task("answer")
    with_ctx = task.render({"question": "Who?", "context": "[1] some evidence"})
    assert "[1] some evidence" in with_ctx and "Question: Who?" in with_ctx and "only" in with_ctx
    bare = task.render({"question": "Who?", "context": "[1] some evidence", "no_context": True})
    assert "some evidence" not in bare and "own knowledge" in bare
    assert task.prompt_name == "ANSWER" and "short answer" in (task.system or "")


def test_truncate_tokens_cuts_at_a_token_boundary() -> None:
    text = "Hello, world! Internationalisation is long."
    for n in range(0, count_tokens(text) + 2):
        cut = truncate_tokens(text, n)
        assert count_tokens(cut) == min(n, count_tokens(text))
        assert text.startswith(cut)


def test_fit_budget_keeps_in_order_cuts_the_first_overflow_and_drops_the_rest() -> None:
    items = [ContextItem(f"i{k}", "chunk", " ".join(["word"] * 30)) for k in range(4)]
    cut = fit_budget(items, 75)  # 30 + 30 fit; 15 tokens of room is below MIN_CUT_TOKENS
    assert [i.id for i in cut.items] == ["i0", "i1"]
    assert cut.dropped == ["i2", "i3"] and cut.truncated == []
    cut = fit_budget(items, 80)  # 20 tokens of room: the third item is cut
    assert [i.id for i in cut.items] == ["i0", "i1", "i2"]
    assert cut.truncated == ["i2"] and cut.dropped == ["i3"]
    assert cut.items[2].n_tokens == 20 and cut.used_tokens == 80
    assert sum(count_tokens(i.text) for i in cut.items) <= 80
    assert MIN_CUT_TOKENS == 16
    whole = fit_budget(items, 10_000)
    assert len(whole.items) == 4 and not whole.dropped and whole.used_tokens == 120


@pytest.mark.parametrize("question,expected", [
    ("Who directed Love in the Ruins?", "Scott Derrickson"),
    ("When was Tyler Bates born?", "June 5, 1965"),
    ("What year did Adam Collis start at Duke University?", "1986"),
    ("How many films did Tyler Bates score with James Gunn?", "12"),
    ("Where was Love in the Ruins produced?", "Los Angeles"),
    ("What nationality is Adam Collis?", "American"),
    ("Who is older, Adam Collis or Tyler Bates?", "Adam Collis"),
])
def test_offline_extractive_answers(offline: Reasoner, question: str, expected: str) -> None:
    tracer = Tracer(offline)
    assert answer(question, _ctx(PASSAGES), offline, tracer) == expected
    step = tracer.steps[-1]
    assert step.kind == "answer" and step.llm is not None
    assert step.llm.mode == "offline" and step.llm.heuristic.startswith("extractive")


def test_offline_abstains_without_relevant_or_any_context(offline: Reasoner) -> None:
    tracer = Tracer(offline)
    assert answer("What is the capital of Peru?", _ctx(PASSAGES), offline, tracer) == INSUFFICIENT
    assert tracer.steps[-1].data["abstained"] is True
    assert answer("Who directed Love in the Ruins?", RetrievedContext(), offline, tracer) == INSUFFICIENT


def test_offline_no_context_is_labelled_as_having_no_memory(offline: Reasoner) -> None:
    tracer = Tracer(offline)
    assert answer("Who directed Love in the Ruins?", _ctx(PASSAGES), offline, tracer, no_context=True) == INSUFFICIENT
    step = tracer.steps[-1]
    assert step.llm is not None and step.llm.prompt_name == "NO_CONTEXT"
    assert "no model memory" in step.llm.heuristic
    assert step.data["kept"] == []


def test_answer_step_records_budget_and_context_nodes(offline: Reasoner) -> None:
    tracer = Tracer(offline)
    answer("Who directed Love in the Ruins?", _ctx(PASSAGES), offline, tracer, budget_tokens=40)
    data = tracer.steps[-1].data
    assert data["budget_tokens"] == 40 and data["used_tokens"] <= 40
    assert data["kept"][0] == "doc:x#c0" and data["truncated"] + data["dropped"]
    assert {n.id for n in tracer.steps[-1].nodes} == set(data["kept"])
    assert all(n.table == "Chunk" for n in tracer.steps[-1].nodes)


def test_llm_path_renders_the_budgeted_context_and_accounts_usage() -> None:
    llm = ScriptedLLM("Answer: Scott Derrickson.")
    reasoner = Reasoner(llm, HashingEmbedder())
    tracer = Tracer(reasoner)
    out = answer("Who directed Love in the Ruins?", _ctx(PASSAGES), reasoner, tracer, budget_tokens=25)
    assert out == "Scott Derrickson"
    (messages, system), = llm.sent
    prompt = messages[0].content
    assert prompt.startswith("Answer the question using only")
    assert "[1] Adam Collis" in prompt and "Tyler Bates" not in prompt  # cut by the budget
    assert system and "short answer" in system
    step = tracer.steps[-1]
    assert step.llm is not None and step.llm.prompt == prompt and step.llm.mode == "fake:scripted"
    assert step.usage.input_tokens == 100 and tracer.usage.calls == 1


def test_unparseable_reply_leaves_an_error_step_with_the_raw_output() -> None:
    reasoner = Reasoner(ScriptedLLM("   "), HashingEmbedder())
    tracer = Tracer(reasoner)
    with pytest.raises(LLMOutputError):
        answer("Who?", _ctx(PASSAGES), reasoner, tracer)
    step = tracer.steps[-1]
    assert step.kind == "error" and step.llm is not None and step.llm.raw_output == "   "


def test_offline_answer_prefers_the_sentence_stating_the_asked_relation():
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.offline.answer import predicate_words
    from kgviz.reasoning import get_task

    question = "Who designed the bridge that the editor of the Kellhaven Courier said was unsafe?"
    assert predicate_words(question) == {"design"}
    assert predicate_words("In what year was the Tidewell Line founded?") == {"found"}
    passages = [
        "Mira Tesk, the editor of the Kellhaven Courier, said that the Orrin Bridge was unsafe.",
        "The Orrin Bridge was designed by Edda Lunn and opened in 1903.",
    ]
    answer, rule = get_task("answer").offline({"question": question, "passages": passages}, HashingEmbedder())
    assert answer == "Edda Lunn", rule


# --- issue 15: what real small models write -------------------------------------------------------
@pytest.mark.parametrize("raw,expected", [
    ("<think>The film is in [2]. Derrickson directed it.</think>\nScott Derrickson", "Scott Derrickson"),
    ("Looking at the context, item [2] names the director.\nAnswer: Scott Derrickson", "Scott Derrickson"),
    ("Based on the context provided, the answer is Scott Derrickson.", "Scott Derrickson"),
    ("The answer is: Los Angeles", "Los Angeles"),
    ("**Final answer:** 1965", "1965"),
])
def test_parse_reads_answers_wrapped_in_prose_and_think_blocks(raw: str, expected: str) -> None:
    inputs = {"question": "Who directed Love in the Ruins?", "passages": PASSAGES}
    assert get_task("answer").parse(raw, inputs) == expected


@pytest.mark.parametrize("raw", ["1", "[2]", "(3)", "Item 1", "passage #2", "1."])
def test_a_context_item_number_is_never_an_answer(raw: str) -> None:
    with pytest.raises(LLMOutputError, match="number of context item"):
        get_task("answer").parse(raw, {"question": "Who directed Love in the Ruins?", "passages": PASSAGES})


def test_a_number_the_context_states_is_a_fine_answer_to_a_number_question() -> None:
    parse = get_task("answer").parse
    how_many = {"question": "How many films did Tyler Bates score with James Gunn?",
                "passages": PASSAGES + ["He scored 3 films in 2001."]}
    assert parse("3", how_many) == "3"  # item [3] exists, but "3" is also the stated count
    assert parse("12", how_many) == "12"  # not an item number at all
    with pytest.raises(LLMOutputError):
        parse("[3]", how_many)  # brackets point at the item
    with pytest.raises(LLMOutputError):
        parse("2", how_many)  # an item number the context never states as a count


def test_empty_context_abstains_without_asking_the_model() -> None:
    llm = ScriptedLLM("Cape May")  # what a real model invented over an empty context
    reasoner = Reasoner(llm, HashingEmbedder())
    tracer = Tracer(reasoner)
    assert answer("Where was the ferry built?", RetrievedContext(), reasoner, tracer) == INSUFFICIENT
    assert llm.sent == []
    step = tracer.steps[-1]
    assert step.kind == "answer" and step.data["abstained"] is True and step.data["rule"] == "empty context"
    # the no-retrieval baseline still asks: it exists to show the model's own memory
    assert answer("Where was the ferry built?", RetrievedContext(), reasoner, tracer, no_context=True) == "Cape May"
