"""What a reasoning task is (``Task``) and the table of registered tasks.

It lives below ``kgviz.reasoning`` (which runs tasks) and the task modules (which define them), so
the task modules do not import the module that imports them. ``kgviz.reasoning`` re-exports
``Task`` and ``register`` and owns the explicit list of task modules.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kgviz.providers.base import Embedder


@dataclass(frozen=True)
class Task:
    """A named reasoning step.

    render(inputs) -> user message text (uses a prompt constant from kgviz.prompts)
    parse(raw, inputs) -> value; raise LLMOutputError when the reply is unusable
    offline(inputs, embedder) -> (value, heuristic description)
    usable(value) -> "" when the parsed value is worth replaying from the cache, else the reason
        it is not (a parse that fell back to a heuristic, for one); the value is still returned
    """

    name: str
    prompt_name: str
    render: Callable[[dict[str, Any]], str]
    parse: Callable[[str, dict[str, Any]], Any]
    offline: Callable[[dict[str, Any], Embedder], tuple[Any, str]]
    system: str | None = None
    max_tokens: int = 1024
    json_schema: dict[str, Any] | None = None
    usable: Callable[[Any], str] | None = None


_REGISTRY: dict[str, Task] = {}


def register(task: Task) -> Task:
    """Add ``task`` under its name (a later registration of the same name replaces it)."""
    _REGISTRY[task.name] = task
    return task


def registered_tasks() -> dict[str, Task]:
    """The tasks registered so far, by name (a copy)."""
    return dict(_REGISTRY)
