"""Baseline: no retrieval. The shared answer step asks the model from its own memory (prompt
NO_CONTEXT), which shows how much of an answer the graph methods actually owe to their context.
Offline there is no memory, so it always abstains (and says so)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kgviz.methods.base import MethodContext, RetrievedContext, Tracer, register


@dataclass(frozen=True)
class NoRetrievalParams:
    """No parameters: nothing is retrieved (KG-Retriever §4.1 "Naive LLM" baseline)."""


@register
class NoRetrieval:
    name: ClassVar[str] = "no-retrieval"
    title: ClassVar[str] = "No retrieval (model memory)"
    paper: ClassVar[str] = "baseline"
    Params: ClassVar[type] = NoRetrievalParams
    presets: ClassVar[dict[str, Any]] = {}
    no_context: ClassVar[bool] = True  # run.py: answer with NO_CONTEXT instead of ANSWER
    budget_param: ClassVar[str | None] = None  # nothing retrieved

    def retrieve(self, question: str, ctx: MethodContext, params: NoRetrievalParams, tracer: Tracer) -> RetrievedContext:
        tracer.step("context", "No retrieval",
                    "nothing is retrieved from the graph: the answer comes from the model's own memory")
        return RetrievedContext(notes={"retrieval": "none"})
