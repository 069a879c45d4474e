"""Task "extract_triples": one chunk of text -> ExtractionOutput (triples + malformed count).

With an LLM: the EXTRACT_TRIPLES prompt and the tolerant parser (``kgviz.index.parse``). A reply
with no readable triple and no explicit NONE (an empty reply included) raises LLMOutputError,
so it is never cached as "no facts"; the build records it as a failed extraction with its raw
output, so the user can see what the model said, and the next build asks again. Offline: the
deterministic pattern extractor (``kgviz.index.heuristic``).

Inputs: ``text`` (the chunk), optional ``max_triples``.
"""
from __future__ import annotations

from typing import Any

from kgviz.errors import LLMOutputError
from kgviz.index.heuristic import HEURISTIC_DESCRIPTION, extract_offline
from kgviz.index.parse import parse_triples
from kgviz.index.triples import ExtractionOutput
from kgviz.prompts.extraction import EXTRACT_TRIPLES_SYSTEM, render_extract_triples
from kgviz.providers.base import Embedder
from kgviz.reasoning import Task, register

TASK_NAME = "extract_triples"
MAX_OUTPUT_TOKENS = 1024  # ours: 80 triples (the per-chunk cap) of ~12 tokens fit; a looping reply stops sooner


def _render(inputs: dict[str, Any]) -> str:
    return render_extract_triples(str(inputs["text"]))


def _parse(raw: str, inputs: dict[str, Any]) -> ExtractionOutput:
    out = parse_triples(raw, inputs.get("max_triples"))
    if out.status == "failed":
        reason = out.warnings[-1] if out.warnings else "no triples in the reply"
        raise LLMOutputError(reason, hint="the chunk is retried on the next build")
    return out


def _offline(inputs: dict[str, Any], embedder: Embedder) -> tuple[ExtractionOutput, str]:
    return extract_offline(str(inputs["text"]), inputs.get("max_triples")), HEURISTIC_DESCRIPTION


EXTRACT_TRIPLES_TASK = register(
    Task(
        name=TASK_NAME,
        prompt_name="EXTRACT_TRIPLES",
        render=_render,
        parse=_parse,
        offline=_offline,
        system=EXTRACT_TRIPLES_SYSTEM,
        max_tokens=MAX_OUTPUT_TOKENS,
    )
)
