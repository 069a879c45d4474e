"""Which runs of an evaluation a recording covers, checked before any result is scored or saved.

A recording (``recorded:<path>``, kgviz.providers.recorded) answers only the exact requests it
saw: another question, method, parameter or context budget changes a prompt (an equal budget of
4,000 tokens changes the answer prompt of a method recorded at its own budget), and the replay
stops with RecordingMissError. Which requests a run makes depends on the replies it gets, so the
only exact check is to replay it: each pending (question, method) is replayed once, retrieval,
answer and claim judge, through its own RecordedLLM (the same recorded replies, a fresh count of
repeated requests), and is covered when that replay asked for nothing the recording lacks. A
replay sends nothing anywhere and costs no tokens; the covered replays are handed to the
evaluation, which scores them, so nothing is replayed twice.

The caller then either stops with one line naming what is not recorded (``NotRecordedError``, the
CLI's default) or evaluates only the covered runs and says which were left out (the CLI's
``--only-recorded``, the Evaluate page).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from kgviz.errors import KgvizError, RecordingMissError
from kgviz.evaluate.qa import QAItem
from kgviz.methods.base import MethodContext
from kgviz.providers.recorded import RecordedLLM
from kgviz.reasoning import Reasoner
from kgviz.run import Run, run_method
from kgviz.verify.judge import verify_run

RUNS_FILE = "runs.jsonl"  # a recording folder's list of recorded (question, method) runs (kgviz.replay)
SHOWN = 6  # ours: question ids named per method before "…"


class NotRecordedError(RecordingMissError):
    """Some runs of an evaluation ask for replies the recording does not hold."""


def recorded_llm(ctx: MethodContext) -> RecordedLLM | None:
    llm = ctx.reasoner.llm
    return llm if isinstance(llm, RecordedLLM) else None


def recorded_methods(llm: RecordedLLM) -> list[str]:
    """Methods named in the recording folder's runs list (in first-seen order); [] without one.
    Only a default for a form: the replay check decides what is covered."""
    path = llm.path / RUNS_FILE if llm.path.is_dir() else llm.path.parent / RUNS_FILE
    if not path.is_file():
        return []
    names: dict[str, None] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("method"), str):
            names.setdefault(row["method"], None)
    return list(names)


@dataclass
class RecordingCoverage:
    """The outcome of the check: covered runs (with their replays) and the runs not recorded."""

    recording: str
    budget_tokens: int | None
    total: int  # runs checked
    n_questions: int  # questions of the evaluation ("every question" when a method misses them all)
    runs: dict[tuple[str, str], Run] = field(default_factory=dict)  # (qid, method) -> covered replay
    missing: list[tuple[str, str]] = field(default_factory=list)  # (qid, method) with no full recording
    first_miss: str = ""  # the first missing reply, as the replay named it

    @property
    def covered(self) -> int:
        return len(self.runs)

    def by_method(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for qid, method in self.missing:
            out.setdefault(method, []).append(qid)
        return out

    def describe_missing(self) -> str:
        """"skeleton-rag (every question), text-rag (s01, s04)": what is not recorded, by method."""
        parts = []
        for method, qids in self.by_method().items():
            if len(qids) == self.n_questions:
                parts.append(f"{method} (every question)")
            else:
                more = f", … {len(qids) - SHOWN} more" if len(qids) > SHOWN else ""
                parts.append(f"{method} ({', '.join(qids[:SHOWN])}{more})")
        return ", ".join(parts)

    def at_budget(self) -> str:
        return f"a context budget of {self.budget_tokens} tokens" if self.budget_tokens is not None \
            else "each method's own context budget"

    def line(self) -> str:
        """One line naming the coverage and what is not recorded."""
        if not self.missing:
            return f"the recording covers all {self.total} runs at {self.at_budget()}"
        return (f"the recording {self.recording} covers {self.covered} of {self.total} runs at "
                f"{self.at_budget()}; not recorded: {self.describe_missing()}")

    def to_dict(self) -> dict[str, Any]:
        return {"recording": self.recording, "budget_tokens": self.budget_tokens, "checked": self.total,
                "covered": self.covered, "not_recorded": [{"qid": q, "method": m} for q, m in self.missing],
                "first_miss": self.first_miss}


def check_recording(todo: Sequence[tuple[QAItem, str]], ctx: MethodContext, llm: RecordedLLM, *,
                    params: Mapping[str, Any], presets: Mapping[str, str], budget_tokens: int | None,
                    n_questions: int, progress: Callable[[int, int], None] | None = None) -> RecordingCoverage:
    """Replay every (item, method) of ``todo`` against the recording (module docstring)."""
    cov = RecordingCoverage(str(llm.path), budget_tokens, len(todo), n_questions)
    for n, (item, name) in enumerate(todo, 1):
        probe = RecordedLLM(llm.path, llm.recording)
        reasoner = Reasoner(probe, ctx.reasoner.embedder, prices=ctx.reasoner.prices)
        pctx = MethodContext(ctx.store, reasoner)
        run = run_method(name, item.question, pctx, params.get(name), preset=presets.get(name),
                         budget_tokens=budget_tokens, equal_budget=budget_tokens is not None)
        miss = run.error if probe.misses else ""
        if not probe.misses and not run.error:
            try:
                verify_run(run, reasoner)  # the judge's requests must be recorded too
            except KgvizError as exc:
                miss = exc.user_message()
        if probe.misses:
            cov.missing.append((item.id, name))
            cov.first_miss = cov.first_miss or miss
        else:
            cov.runs[(item.id, name)] = run
        if progress:
            progress(n, len(todo))
    return cov
