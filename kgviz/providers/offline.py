"""The offline mode's LLM: it exists so that every part of kgviz can hold "an LLM", but it never
completes text. ``kgviz.reasoning.Reasoner`` checks ``is_offline`` and runs each task's
deterministic heuristic instead, labelling the result as offline."""
from __future__ import annotations

from typing import Any, Sequence

from kgviz.errors import ProviderError
from kgviz.provider_specs import OFFLINE_MODEL
from kgviz.providers.base import LLMBase
from kgviz.types import Completion, Message


class OfflineLLM(LLMBase):
    provider = "offline"
    model = OFFLINE_MODEL

    @property
    def is_offline(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "OfflineLLM()"

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        raise ProviderError(
            "the offline mode has no language model to complete free text: each reasoning task runs "
            "its own deterministic heuristic through kgviz.reasoning.Reasoner instead",
            hint="call Reasoner.run(task, ...) rather than llm.complete(), or pick an LLM provider "
            "(anthropic:<model>, openai:<model>, openai-compatible:<model>@<url>)",
        )
