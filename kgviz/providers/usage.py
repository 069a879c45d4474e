"""Per-step usage accounting. ``kgviz.reasoning.Reasoner`` calls ``record(step, usage)`` once per
reasoning step (with ``usage.cost_usd`` already priced); the UI and reports read ``by_step()`` and
``total()``. Thread-safe because index builds record from a worker pool."""
from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from kgviz.types import Usage


class UsageLedger:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: dict[str, Usage] = {}  # insertion order = order steps first ran

    def record(self, step: str, usage: Usage) -> None:
        with self._lock:
            self._steps[step] = self._steps.get(step, Usage()) + usage

    def by_step(self) -> dict[str, Usage]:
        """A snapshot: later records do not change the returned objects."""
        with self._lock:
            return {step: replace(u) for step, u in self._steps.items()}

    def total(self) -> Usage:
        with self._lock:
            total = Usage()
            for u in self._steps.values():
                total = total + u
            return total

    def reset(self) -> None:
        with self._lock:
            self._steps.clear()

    def to_dict(self) -> dict[str, Any]:
        steps = self.by_step()
        total = Usage()
        for u in steps.values():
            total = total + u
        return {"steps": {s: u.to_dict() for s, u in steps.items()}, "total": total.to_dict()}
