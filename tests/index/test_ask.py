"""kgviz.index.ask: the one task call both build stages make per item (extraction per chunk, the KET
skeleton's descriptions per entity and relationship). A failed item is returned with what it cost and
what the model said; a key, configuration or recording problem stops the build."""
from __future__ import annotations

import pytest

from kgviz.errors import AuthenticationError, MissingKeyError, RateLimitError, RecordingMissError
from kgviz.facts.triples import ExtractionOutput
from kgviz.index.ask import ask
from kgviz.prompts.extraction import EXTRACT_TRIPLES_TASK_NAME
from kgviz.prompts.ket_describe import DESCRIBE_SKELETON_TASK_NAME
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.providers.scripted import ScriptedLLM
from kgviz.reasoning import Reasoner

EMB = HashingEmbedder(64)
CHUNK = "The Orrin Bridge crosses the River Vell at Dunmore. It was designed by Mira Tesk."
ITEM = {"text": CHUNK, "kind": "entity", "item": "Mira Tesk"}


def _reasoner(reply: str | BaseException) -> tuple[Reasoner, ScriptedLLM]:
    def script(prompt: str) -> str:
        if isinstance(reply, BaseException):
            raise reply
        return reply

    llm = ScriptedLLM(script)
    return Reasoner(llm, EMB), llm


def test_a_reply_the_task_reads_gives_its_value_cost_and_raw_text() -> None:
    reasoner, _ = _reasoner("Description: Mira Tesk designed the Orrin Bridge.")
    asked = ask(reasoner, DESCRIBE_SKELETON_TASK_NAME, **ITEM)
    assert not asked.failed and asked.error == ""
    assert asked.value == "Mira Tesk designed the Orrin Bridge."
    assert asked.raw == "Description: Mira Tesk designed the Orrin Bridge."
    assert asked.usage.calls == 1 and asked.usage.input_tokens > 0 and asked.usage.output_tokens > 0


def test_an_unreadable_reply_is_a_failed_item_that_keeps_its_cost_and_the_models_words() -> None:
    reasoner, llm = _reasoner("**Description:**")  # a label and nothing after it
    asked = ask(reasoner, DESCRIBE_SKELETON_TASK_NAME, **ITEM)
    assert asked.failed and asked.value is None and "no description" in asked.error
    assert asked.raw == "**Description:**"  # what the model said, for the report
    assert asked.usage.calls == 1 and asked.usage.output_tokens > 0  # the failed call was paid for
    assert llm.calls == 1  # a fresh reply is not asked again


def test_a_provider_failure_is_a_failed_item_and_the_stage_goes_on() -> None:
    reasoner, _ = _reasoner(RateLimitError("HTTP 429 after 3 retries", hint="wait a minute"))
    asked = ask(reasoner, EXTRACT_TRIPLES_TASK_NAME, text=CHUNK, max_triples=10, title="")
    assert asked.failed and asked.value is None and asked.raw == ""
    assert asked.error == "HTTP 429 after 3 retries — wait a minute"
    assert asked.usage.calls == 0 and asked.usage.input_tokens == 0


@pytest.mark.parametrize("fatal", [MissingKeyError("OPENAI_API_KEY is not set"),
                                   AuthenticationError("the key was rejected"),
                                   RecordingMissError("no recorded reply for this request")])
def test_a_key_or_recording_problem_stops_the_build(fatal: Exception) -> None:
    reasoner, _ = _reasoner(fatal)
    for task, inputs in ((DESCRIBE_SKELETON_TASK_NAME, ITEM),
                         (EXTRACT_TRIPLES_TASK_NAME, {"text": CHUNK, "max_triples": 10, "title": ""})):
        with pytest.raises(type(fatal)):
            ask(reasoner, task, **inputs)


def test_offline_the_tasks_heuristic_answers_and_there_is_no_reply() -> None:
    asked = ask(Reasoner(OfflineLLM(), EMB), EXTRACT_TRIPLES_TASK_NAME, text=CHUNK, max_triples=10, title="")
    assert not asked.failed and asked.raw == ""
    assert isinstance(asked.value, ExtractionOutput) and asked.value.triples


def test_an_error_outside_the_rule_is_not_swallowed() -> None:
    reasoner, _ = _reasoner(ValueError("a bug in a script"))
    with pytest.raises(ValueError):
        ask(reasoner, DESCRIBE_SKELETON_TASK_NAME, **ITEM)
