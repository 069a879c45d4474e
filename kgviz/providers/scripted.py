"""A scripted LLM: replies come from a Python function of the prompt.

It stands in for a provider where the LLM path must run without a model: the test suite (the
extraction pipeline, retries, caching) and the benchmark suite (worker speed-up with a fixed
delay per call). It is not offline: the reasoner renders prompts and parses its replies exactly
as it would a real model's. No provider spec selects it; code constructs it.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

from kgviz.providers.base import LLMBase
from kgviz.text import count_tokens
from kgviz.types import Completion, Message, Usage


class ScriptedLLM(LLMBase):
    """Answers every request with ``script(prompt)`` (the last message's text).

    ``delay_s`` is slept per call and reported as the call's latency (a stand-in for a slow
    server, never a measurement). ``calls`` counts requests, thread-safely (the build runs
    workers in threads). Tokens are counted from the texts, so cost and cache accounting work.
    A script may raise (a ProviderError, say) to play a failing server.
    """

    provider = "fake"

    def __init__(self, script: Callable[[str], str], *, delay_s: float = 0.0, model: str = "scripted-1") -> None:
        self.script = script
        self.delay_s = delay_s
        self.model = model
        self.calls = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ScriptedLLM(model={self.model!r}, delay_s={self.delay_s})"

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        with self._lock:
            self.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        prompt = messages[-1].content
        text = self.script(prompt)
        usage = Usage(input_tokens=count_tokens(prompt), output_tokens=count_tokens(text), calls=1,
                      latency_s=self.delay_s)
        return Completion(text=text, usage=usage, model=self.model, provider=self.provider, latency_s=self.delay_s)
