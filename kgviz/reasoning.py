"""The single choke point between methods and language models.

Methods never send free text to an LLM. They call ``Reasoner.run("task_name", **inputs)``, where a
*task* is a named reasoning step (extract triples, choose next hop, select triples, summarise a
subgraph, expand a query, write a note, answer, split claims, judge a claim, ...).

* With a provider, the task renders its named prompt constant, the LLM completes it, the task
  parses the reply (malformed replies raise ``LLMOutputError`` unless the task tolerates them).
* Offline, the task runs its deterministic heuristic instead (pattern extraction, embedding
  ranking, extractive answers). The result is labelled ``mode="offline"`` and names the heuristic.

Either way an ``LLMCall`` record is returned for the trace: task, prompt name, mode, rendered prompt,
raw output, usage (tokens, calls, latency, $).

Caching (issue 15): the reasoner is the one place that knows whether a reply was usable, so it
tells a caching LLM: ``accept`` after the task parsed the reply (and ``Task.usable`` agrees),
``reject`` otherwise. A *replayed* reply that no longer parses is rejected and asked once more,
so a failure cached by an older kgviz does not come back forever.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from kgviz.errors import KgvizError, LLMOutputError
from kgviz.providers.base import LLM, Embedder
from kgviz.tasks.base import Task, register, registered_tasks
from kgviz.types import Message, Usage

OFFLINE_MODE = "offline"

__all__ = ["OFFLINE_MODE", "LLMCall", "Reasoner", "Task", "TaskResult", "get_task", "register"]


def get_task(name: str) -> Task:
    """The task registered as ``name``. The first lookup imports every task module (explicitly,
    below); importing them at module level would make ``kgviz.reasoning`` pull in the whole index
    and verify layers for callers that only want ``Reasoner``'s types."""
    _load_tasks()
    try:
        return registered_tasks()[name]
    except KeyError:
        raise KgvizError(f"unknown reasoning task {name!r}; known: {sorted(registered_tasks())}") from None


def _load_tasks() -> None:
    # The explicit task registry: a module missing here is an ImportError, never skipped.
    from kgviz.tasks import answer, extraction, kg_infused, kg_rag, ket_describe, verify  # noqa: F401


@dataclass
class LLMCall:
    """What one reasoning step did; plain data, JSON-serialisable via ``to_dict``."""

    task: str
    prompt_name: str
    mode: str  # "offline" or "provider:model"
    prompt: str = ""  # rendered prompt (empty offline)
    system: str = ""
    raw_output: str = ""
    heuristic: str = ""  # offline: which heuristic produced the value
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    error: str = ""
    note: str = ""  # what the provider did to the reply, e.g. "reply cut: repetition after 212 tokens"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["usage"] = self.usage.to_dict()
        if not d["note"]:
            del d["note"]  # absent unless set: traces saved before the field stay comparable
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LLMCall":
        d = dict(d)
        return cls(usage=Usage.from_dict(d.pop("usage", {})), **d)


@dataclass
class TaskResult:
    value: Any
    call: LLMCall


class Reasoner:
    """Runs named tasks through an LLM (or offline heuristics) and accounts their usage.

    ``ledger`` (optional) receives every call's usage under the step name given to ``run`` (or
    the task name), so callers can show cost per step.
    """

    def __init__(self, llm: LLM, embedder: Embedder, ledger: Any | None = None, prices: Any | None = None) -> None:
        self.llm = llm
        self.embedder = embedder
        self.ledger = ledger
        self.prices = prices

    @property
    def mode(self) -> str:
        return OFFLINE_MODE if self.llm.is_offline else f"{self.llm.provider}:{self.llm.model}"

    @property
    def is_offline(self) -> bool:
        return bool(self.llm.is_offline)

    def run(self, task_name: str, *, step: str | None = None, **inputs: Any) -> TaskResult:
        task = get_task(task_name)
        if self.llm.is_offline:
            t0 = time.perf_counter()
            value, heuristic = task.offline(inputs, self.embedder)
            usage = Usage(latency_s=time.perf_counter() - t0)
            call = LLMCall(task.name, task.prompt_name, OFFLINE_MODE, heuristic=heuristic, usage=usage)
            self._record(step or task.name, usage)
            return TaskResult(value, call)
        prompt = task.render(inputs)
        for attempt in (1, 2):
            completion = self._complete(task, prompt)
            try:
                value = task.parse(completion.text, inputs)
                break
            except LLMOutputError as exc:
                self._reject(completion, str(exc))
                if completion.cached and attempt == 1:
                    continue  # a replayed reply that fails today (an older kgviz cached it): ask again
                call = self._call(task, prompt, completion, step)
                call.error = str(exc)
                exc.call = call  # type: ignore[attr-defined]  # lets callers keep the raw output
                raise
        call = self._call(task, prompt, completion, step)
        why_not = task.usable(value) if task.usable is not None else ""
        if why_not:
            self._reject(completion, why_not)
        elif not completion.cached:
            accept = getattr(self.llm, "accept", None)
            if accept is not None:
                accept(completion)
        return TaskResult(value, call)

    def _complete(self, task: Task, prompt: str) -> Any:
        return self.llm.complete(
            [Message("user", prompt)],
            system=task.system,
            max_tokens=task.max_tokens,
            json_schema=task.json_schema,
        )

    def _reject(self, completion: Any, reason: str) -> None:
        reject = getattr(self.llm, "reject", None)
        if reject is not None:
            reject(completion, reason)

    def _call(self, task: Task, prompt: str, completion: Any, step: str | None) -> LLMCall:
        """The trace record of one completion; its usage goes to the ledger here, once."""
        usage = completion.usage
        if self.prices is not None and not completion.cached:
            usage.cost_usd = self.prices.cost(self.llm.provider, self.llm.model, usage.input_tokens, usage.output_tokens)
        self._record(step or task.name, usage)
        return LLMCall(
            task.name,
            task.prompt_name,
            self.mode,
            prompt=prompt,
            system=task.system or "",
            raw_output=completion.text,
            usage=usage,
            cached=completion.cached,
            note=str(completion.raw.get("cut", "")),  # kgviz.providers.loop_guard
        )

    def _record(self, step: str, usage: Usage) -> None:
        if self.ledger is not None:
            self.ledger.record(step, usage)
