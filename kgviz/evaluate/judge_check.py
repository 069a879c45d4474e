"""How far to trust the claim judge (issue 22.3): on questions with gold answers, how often it calls
right answers supported and how often it calls wrong answers supported.

* right: answers that match a gold answer (EM 1);
* wrong: answers that are clearly wrong (EM 0 and F1 < ``WRONG_F1_BELOW``); answers in between
  (a partial overlap with the gold) are in neither group.

An answer counts as *judged supported* when every one of its claims is ``supported``. Runs that
failed, abstained or have no claim say nothing about the judge and are left out; so are answers
with an ``unparsed`` claim (the judge gave no label), which are counted on their own. A good judge
has a high first rate and a low second one; a judge that calls everything supported has both high.
A rate over zero answers is None ("n/a"), never 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

WRONG_F1_BELOW = 0.5  # ours: an answer sharing half the gold's words is not "clearly wrong"
DEFINITION = (f"An answer is judged supported when every claim of it is supported. Right = EM 1; wrong = EM 0 "
              f"and F1 < {WRONG_F1_BELOW}. Failed, abstaining and unparsed answers are left out.")
RIGHT_LABEL = "right answers (EM 1) judged supported"
WRONG_LABEL = f"wrong answers (EM 0, F1 < {WRONG_F1_BELOW}) judged supported"


@dataclass(frozen=True)
class JudgedRun:
    """What the check needs of one run: its scores against the gold and its claim labels."""

    em: float
    f1: float
    labels: tuple[str, ...]
    abstained: bool = False
    failed: bool = False

    @property
    def judged(self) -> bool:
        return not self.failed and not self.abstained and bool(self.labels) and "unparsed" not in self.labels

    @property
    def supported(self) -> bool:
        return self.judged and all(label == "supported" for label in self.labels)

    @property
    def group(self) -> str:
        if self.em >= 1.0:
            return "right"
        if self.f1 < WRONG_F1_BELOW:
            return "wrong"
        return "partial"


@dataclass(frozen=True)
class Rate:
    supported: int
    n: int

    @property
    def rate(self) -> float | None:
        return self.supported / self.n if self.n else None

    def to_dict(self) -> dict[str, Any]:
        return {"supported": self.supported, "n": self.n, "rate": self.rate}

    def text(self) -> str:
        if self.rate is None:
            return "n/a (no such answers)"
        return f"{100 * self.rate:.1f} % ({self.supported} of {self.n})"


@dataclass(frozen=True)
class JudgeCheck:
    judge: str
    right: Rate
    wrong: Rate
    unparsed: int  # answers left out because a claim's judge reply could not be parsed

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "right": self.right.to_dict(), "wrong": self.wrong.to_dict(),
                "unparsed": self.unparsed, "right_label": RIGHT_LABEL, "wrong_label": WRONG_LABEL,
                "definition": DEFINITION}

    def lines(self) -> list[str]:
        out = [f"judge check ({self.judge or 'claim judge'}): {RIGHT_LABEL}: {self.right.text()}; "
               f"{WRONG_LABEL}: {self.wrong.text()}"]
        if self.unparsed:
            out.append(f"  {self.unparsed} answer(s) left out: the judge's reply could not be parsed")
        return out


def judge_check(runs: Iterable[JudgedRun], judge: str = "") -> JudgeCheck:
    counts = {"right": [0, 0], "wrong": [0, 0]}
    unparsed = 0
    for r in runs:
        if not r.failed and not r.abstained and "unparsed" in r.labels:
            unparsed += 1
        if not r.judged or r.group not in counts:
            continue
        counts[r.group][1] += 1
        counts[r.group][0] += int(r.supported)
    return JudgeCheck(judge, Rate(*counts["right"]), Rate(*counts["wrong"]), unparsed)


def from_records(records: Sequence[Any]) -> list[JudgeCheck]:
    """One check per judge over evaluation records (kgviz.evaluate.runner.EvalRecord: ``metrics``,
    ``verdict``, ``abstained``, ``error``); empty when no record carries a verdict."""
    by_judge: dict[str, list[JudgedRun]] = {}
    for rec in records:
        verdict: Mapping[str, Any] = rec.verdict or {}
        if not verdict:
            continue
        by_judge.setdefault(str(verdict.get("judge", "")), []).append(JudgedRun(
            em=float(rec.metrics.get("em", 0.0)), f1=float(rec.metrics.get("f1", 0.0)),
            labels=tuple(verdict.get("labels") or ()), abstained=bool(rec.abstained),
            failed=bool(rec.error) or bool(verdict.get("failed"))))
    return [judge_check(runs, judge) for judge, runs in by_judge.items()]
