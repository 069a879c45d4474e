"""Answer metrics with SQuAD normalisation: EM, F1, Acc (gold contained in the prediction) and
Coverage (gold contained in the retrieved context).

SQuAD normalisation: lowercase, drop punctuation, drop the articles a/an/the, collapse
whitespace. EM and F1 take the maximum over the gold answers. Containment (Acc, Coverage, the gold
funnel) is checked on whole normalised tokens, so gold "1898" is not found inside "18980". Both
(``normalize_answer``, ``contains``) live in ``kgviz.answer_norm``, below the offline judge that
uses them too.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

from kgviz.answer_norm import contains, normalize_answer
from kgviz.errors import EvaluationError


def _golds(golds: Iterable[str]) -> list[str]:
    out = [g for g in golds if isinstance(g, str) and g.strip()]
    if not out:
        raise EvaluationError("no gold answer given", hint="pass at least one non-empty gold answer")
    return out


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    return max(float(normalize_answer(prediction) == normalize_answer(g)) for g in _golds(golds))


def _f1_one(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:  # SQuAD: two empty answers agree, one empty answer scores 0
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Iterable[str]) -> float:
    return max(_f1_one(prediction, g) for g in _golds(golds))


def accuracy(prediction: str, golds: Iterable[str]) -> float:
    """Acc: 1 when some gold answer is contained in the prediction (normalised)."""
    return max(float(contains(prediction, g)) for g in _golds(golds))


def coverage(context_text: str, golds: Iterable[str]) -> float:
    """Coverage: 1 when some gold answer is contained in the retrieved context (normalised)."""
    return max(float(contains(context_text, g)) for g in _golds(golds))


@dataclass(frozen=True)
class Metrics:
    em: float
    f1: float
    acc: float
    coverage: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score(prediction: str, context_text: str, golds: Sequence[str]) -> Metrics:
    golds = _golds(golds)
    return Metrics(exact_match(prediction, golds), f1_score(prediction, golds),
                   accuracy(prediction, golds), coverage(context_text, golds))
