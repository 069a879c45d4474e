"""Task "extract_triples": one chunk of text -> ExtractionOutput (triples + malformed count).

With an LLM: the EXTRACT_TRIPLES prompt and the tolerant parser (``kgviz.index.parse``); a reply
with no readable triple is *not* an error here: the build records it as a failed extraction
with its raw output, so the user can see what the model said. Offline: the deterministic
pattern extractor (``kgviz.index.heuristic``).

Inputs: ``text`` (the chunk), optional ``max_triples``.
"""
from __future__ import annotations

from typing import Any

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
    return parse_triples(raw, inputs.get("max_triples"))


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
