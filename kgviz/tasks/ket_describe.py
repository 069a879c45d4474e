"""Task "describe_skeleton": one skeleton entity or relationship, and the chunk it was read from ->
its description (KET-RAG Algorithm 1 line 3; the prompt is kgviz.prompts.ket_describe, ours
modelled on it).

Inputs: ``text`` (the chunk), ``kind`` ('entity' | 'relationship'), ``item`` (the entity's name, or
"subject | relation | object"). The value is the description: the reply's text with a leading
"Description:" label and wrapping quotes removed, its lines joined. An empty reply raises
LLMOutputError, so it is never cached; whether the description is grounded in the chunk is the
build's check (kgviz.index.ket_describe), not the parser's.

Offline there is no model to write descriptions: the value is "" and the skeleton keeps its
source-sentence descriptions (ours, marked so in the KET trace).
"""
from __future__ import annotations

import re
from typing import Any

from kgviz.errors import LLMOutputError
from kgviz.prompts.ket_describe import (
    DESCRIBE_SKELETON_MAX_OUTPUT_TOKENS,
    DESCRIBE_SKELETON_PROMPT_NAME,
    DESCRIBE_SKELETON_SYSTEM,
    DESCRIBE_SKELETON_TASK_NAME,
    render_describe_skeleton,
)
from kgviz.providers.base import Embedder
from kgviz.tasks.base import Task, register

OFFLINE_HEURISTIC = "no model to write descriptions offline: the skeleton keeps its source sentences"
_LABEL = re.compile(r"^\s*\**\s*description\s*\**\s*:\s*\**\s*", re.I)  # "Description:", "**Description:**"


def parse_description(raw: str) -> str:
    """The description in a reply ("" when there is none)."""
    lines = [ln.strip() for ln in (raw or "").splitlines() if ln.strip()]
    text = " ".join(_LABEL.sub("", ln) for ln in lines).strip()
    return text.strip("\"'“”` ").strip()


def _render(inputs: dict[str, Any]) -> str:
    return render_describe_skeleton(str(inputs["text"]), str(inputs["kind"]), str(inputs["item"]))


def _parse(raw: str, inputs: dict[str, Any]) -> str:
    text = parse_description(raw)
    if not text:
        raise LLMOutputError("the reply holds no description", hint="the item keeps its source text; the next build asks again")
    return text


def _offline(inputs: dict[str, Any], embedder: Embedder) -> tuple[str, str]:
    return "", OFFLINE_HEURISTIC


DESCRIBE_SKELETON_TASK = register(
    Task(
        name=DESCRIBE_SKELETON_TASK_NAME,
        prompt_name=DESCRIBE_SKELETON_PROMPT_NAME,
        render=_render,
        parse=_parse,
        offline=_offline,
        system=DESCRIBE_SKELETON_SYSTEM,
        max_tokens=DESCRIBE_SKELETON_MAX_OUTPUT_TOKENS,
    )
)
