"""One answer's verdict: is it right (against the gold answer) and is it grounded (every claim
supported by the method's own context)? Two different facts, and both matter: "grounded but
wrong" is the classic extraction error (the context itself says the wrong thing), "right but
unsupported" an answer from the model's memory or a judge that missed the support.

This module is the only place that turns (failed, abstained, correctness, claim labels) into a
label and a colour; Compare, the case file, Evaluate's per-question view and the CLI all read
it, so a colour means the same everywhere. Green only when both hold; without a gold answer
correctness is unknown and the colour says only what was checked (grounded or not).

Correct = exact match (SQuAD normalisation) or the gold answer contained in the answer (Acc),
the project's two answer metrics; F1 is shown beside them, never decides.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from kgviz.offline.judge import OFFLINE_JUDGE_LABEL

UNSUPPORTED = ("not_found", "contradicted")

GREEN, RED, ORANGE, AMBER, GREY, SLATE, INK = ("#2e7d32", "#c62828", "#d84315", "#a15c00", "#757575", "#607d8b",
                                               "#37474f")


@dataclass(frozen=True)
class Mark:
    """One labelled fact about an answer: ``name`` is "correct" or "grounded"; ``ok`` None when
    it could not be decided (no gold answer, a judge reply that could not be read)."""

    name: str
    ok: bool | None
    text: str

    @property
    def colour(self) -> str:
        # a mark that holds is ink, not green: green belongs to the overall badge alone, and only
        # when both facts hold (a green "grounded" beside a wrong answer would read as right)
        return GREY if self.ok is None else INK if self.ok else RED

    @property
    def symbol(self) -> str:
        return "?" if self.ok is None else "✓" if self.ok else "✗"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "text": self.text}


@dataclass(frozen=True)
class Outcome:
    """The answer's overall label and colour plus its two marks (none for a failed run or an
    abstention: there is no answer to mark)."""

    kind: str  # a stable key, e.g. "grounded_wrong" (tests and exports read it)
    label: str  # what a reader sees, e.g. "grounded but wrong"
    colour: str
    correct: Mark | None = None
    grounded: Mark | None = None

    @property
    def marks(self) -> list[Mark]:
        return [m for m in (self.correct, self.grounded) if m is not None]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": self.label, "colour": self.colour,
                "correct": self.correct.to_dict() if self.correct else None,
                "grounded": self.grounded.to_dict() if self.grounded else None}


def _num(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x else "0"


def correctness(em: float, f1: float, acc: float) -> Mark:
    if em >= 1.0:
        return Mark("correct", True, f"matches gold (EM 1 · F1 {_num(f1)})")
    if acc >= 1.0:
        return Mark("correct", True, f"contains the gold answer (EM 0 · F1 {_num(f1)})")
    return Mark("correct", False, f"does not match gold (EM 0 · F1 {_num(f1)})")


def groundedness(labels: Sequence[str]) -> Mark:
    n = len(labels)
    bad = sum(label in UNSUPPORTED for label in labels)
    if bad:
        return Mark("grounded", False, f"{bad} of {n} claim{'s' * (n != 1)} not supported by its context")
    if not n:
        return Mark("grounded", None, "no claim to check")
    unread = sum(label not in ("supported", *UNSUPPORTED) for label in labels)
    if unread:
        return Mark("grounded", None, f"{unread} of {n} judge repl{'ies' if unread != 1 else 'y'} unreadable")
    return Mark("grounded", True, f"{'all ' if n > 1 else ''}{n} claim{'s' * (n != 1)} supported by its context")


# (correct?, grounded?) -> (kind, label, colour); grounded None = not fully verified
_WITH_GOLD = {
    (True, True): ("right_grounded", "right and grounded", GREEN),
    (True, False): ("right_unsupported", "right but unsupported", AMBER),
    (True, None): ("right_unverified", "right, support not fully verified", AMBER),
    (False, True): ("grounded_wrong", "grounded but wrong", ORANGE),
    (False, False): ("wrong_unsupported", "wrong and unsupported", RED),
    (False, None): ("wrong_unverified", "wrong, support not fully verified", RED),
}


# every kind's reader-facing label (filters list kinds by these)
KIND_LABELS = {"failed": "method failed", "abstained": "abstained", "unverified": "not fully verified",
               "hallucinated": "hallucination", "grounded": "grounded (no gold answer to check)",
               **{kind: label for kind, label, _ in _WITH_GOLD.values()}}


def outcome(*, failed: bool, abstained: bool, labels: Sequence[str],
            metrics: Mapping[str, float] | None = None) -> Outcome:
    """The verdict of one answer. ``labels``: its claims' judge labels; ``metrics``: em, f1, acc
    against the gold answer, or None when there is no gold answer."""
    if failed:
        return Outcome("failed", "method failed", GREY)
    if abstained:
        return Outcome("abstained", "abstained", SLATE)
    grounded = groundedness(labels)
    if metrics is None:
        if grounded.ok is None:
            return Outcome("unverified", "not fully verified", AMBER, None, grounded)
        if not grounded.ok:
            bad = sum(label in UNSUPPORTED for label in labels)
            return Outcome("hallucinated", f"hallucination ({bad} unsupported claim{'s' * (bad != 1)})", RED,
                           None, grounded)
        return Outcome("grounded", "grounded (no gold answer to check)", GREEN, None, grounded)
    correct = correctness(float(metrics.get("em", 0.0)), float(metrics.get("f1", 0.0)),
                          float(metrics.get("acc", 0.0)))
    kind, label, colour = _WITH_GOLD[(bool(correct.ok), grounded.ok)]
    return Outcome(kind, label, colour, correct, grounded)


def of_verdict(verdict: Any, metrics: Any = None) -> Outcome:
    """From a ``kgviz.verify.judge.Verdict`` and ``kgviz.verify.metrics.Metrics`` (or None)."""
    m = None if metrics is None else {"em": metrics.em, "f1": metrics.f1, "acc": metrics.acc}
    return outcome(failed=verdict.failed, abstained=verdict.abstained, labels=[c.label for c in verdict.claims],
                   metrics=m)


def of_record(record: Any) -> Outcome:
    """From an evaluation record (``kgviz.evaluate.runner.EvalRecord``): its verdict dict and metrics."""
    v = record.verdict or {}
    labels = v.get("labels") or [c.get("label", "") for c in v.get("claims", [])]
    metrics = record.metrics if record.metrics and record.answers else None
    return outcome(failed=bool(record.error), abstained=bool(record.abstained), labels=labels, metrics=metrics)


def judge_caution(judge: str) -> str:
    """How far to trust the claim verdicts, for every surface that shows one."""
    if not judge:
        return ""
    if judge == OFFLINE_JUDGE_LABEL or judge.startswith("offline"):
        return (f"Claims are judged by the {OFFLINE_JUDGE_LABEL}: a sentence rule (one sentence of the evidence "
                "must state the answer with the question's relation, linked to the names the question gives). "
                "Between two named options it compares their dates or counts, and a yes/no answer only when the "
                "question compares two countries. It is weaker than an LLM judge and strict rather than kind: it "
                "misses paraphrase and says \"not found\" whenever a deciding fact is missing from the context, "
                "so a right answer often reads \"not found\"; read \"grounded\" and hallucination marks as "
                "indicative.")
    return (f"Claims are judged by an {judge}: small models judge generously (a 1.5B judge called wrong answers "
            "supported), so \"grounded\" may be too kind.")
