"""Task "extract_triples": one chunk of text -> ExtractionOutput (triples + malformed count).

With an LLM: the EXTRACT_TRIPLES prompt and the tolerant parser (``kgviz.facts.parse``). A reply
with no readable triple and no explicit NONE (an empty reply included) raises LLMOutputError,
so it is never cached as "no facts"; the build records it as a failed extraction with its raw
output, so the user can see what the model said, and the next build asks again. Offline: the
deterministic pattern extractor (``kgviz.offline.extract``).

Inputs: ``text`` (the chunk), optional ``max_triples``, optional ``title`` (the passage's title:
offline sentence facts use it; the prompt does not).
"""
from __future__ import annotations

from typing import Any

from kgviz.errors import LLMOutputError
from kgviz.facts.parse import parse_triples
from kgviz.facts.triples import ExtractionOutput
from kgviz.offline.extract import HEURISTIC_DESCRIPTION, extract_offline
from kgviz.offline.lexicon import split_predicate
from kgviz.prompts.extraction import (
    EXTRACT_TRIPLES_MAX_OUTPUT_TOKENS,
    EXTRACT_TRIPLES_PROMPT_NAME,
    EXTRACT_TRIPLES_SYSTEM,
    EXTRACT_TRIPLES_TASK_NAME,
    render_extract_triples,
)
from kgviz.providers.base import Embedder
from kgviz.tasks.base import Task, register

TASK_NAME = EXTRACT_TRIPLES_TASK_NAME
MAX_OUTPUT_TOKENS = EXTRACT_TRIPLES_MAX_OUTPUT_TOKENS


def _render(inputs: dict[str, Any]) -> str:
    return render_extract_triples(str(inputs["text"]))


def _parse(raw: str, inputs: dict[str, Any]) -> ExtractionOutput:
    out = parse_triples(raw, inputs.get("max_triples"), split_predicate=split_predicate)
    if out.status == "failed":
        reason = out.warnings[-1] if out.warnings else "no triples in the reply"
        raise LLMOutputError(reason, hint="the chunk is retried on the next build")
    return out


def _offline(inputs: dict[str, Any], embedder: Embedder) -> tuple[ExtractionOutput, str]:
    return extract_offline(str(inputs["text"]), inputs.get("max_triples"), str(inputs.get("title") or "")), HEURISTIC_DESCRIPTION


EXTRACT_TRIPLES_TASK = register(
    Task(
        name=TASK_NAME,
        prompt_name=EXTRACT_TRIPLES_PROMPT_NAME,
        render=_render,
        parse=_parse,
        offline=_offline,
        system=EXTRACT_TRIPLES_SYSTEM,
        max_tokens=MAX_OUTPUT_TOKENS,
    )
)
