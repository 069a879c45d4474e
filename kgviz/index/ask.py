"""One reasoning-task call made by a build stage for one item (a chunk to extract, a skeleton item to
describe), with the stage's failure rule in one place:

* a per-item failure (a provider error after the SDK's retries, a reply the task cannot read) is
  returned as the call's ``error`` with what the call cost and what the model said: the stage counts
  it, names it in its report and goes on;
* a missing or rejected API key, or a bad configuration (a recording miss is a ConfigError), is
  raised: every later call would fail the same way, so it stops the build.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgviz.errors import AuthenticationError, ConfigError, LLMOutputError, MissingKeyError, ProviderError
from kgviz.reasoning import Reasoner
from kgviz.types import Usage

FATAL = (AuthenticationError, MissingKeyError, ConfigError)


@dataclass(frozen=True)
class Asked:
    """What one call gave: ``value`` (None when it failed) or ``error`` (the user's message), the
    call's ``usage`` and the model's ``raw`` reply ("" offline or when there was none)."""

    value: Any
    error: str
    usage: Usage
    raw: str

    @property
    def failed(self) -> bool:
        return bool(self.error)


def ask(reasoner: Reasoner, task_name: str, **inputs: Any) -> Asked:
    """Run task ``task_name`` on ``inputs``: the value, or the failure as the module docstring says."""
    try:
        result = reasoner.run(task_name, **inputs)
    except FATAL:
        raise
    except LLMOutputError as exc:
        call = getattr(exc, "call", None)  # the reasoner attaches the failed call: its cost and raw reply
        if call is None:
            return Asked(None, exc.user_message(), Usage(), "")
        return Asked(None, exc.user_message(), call.usage, call.raw_output)
    except ProviderError as exc:
        return Asked(None, exc.user_message(), Usage(), "")
    return Asked(result.value, "", result.call.usage, result.call.raw_output)
