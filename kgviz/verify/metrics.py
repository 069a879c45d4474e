"""Answer metrics with SQuAD normalisation: EM, F1, Acc (gold contained in the prediction) and
Coverage (gold contained in the retrieved context).

SQuAD normalisation: lowercase, drop punctuation, drop the articles a/an/the, collapse
whitespace. EM and F1 take the maximum over the gold answers. Containment (Acc, Coverage, the gold
funnel) is checked on whole normalised tokens, so gold "1898" is not found inside "18980".
"""
from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

from kgviz.errors import EvaluationError

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation (the order matters: punctuation goes before articles are matched)."""
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCT)
    no_articles = _ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


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


def contains(haystack: str, needle: str) -> bool:
    """Normalised ``needle`` occurs in normalised ``haystack`` as whole tokens."""
    n = normalize_answer(needle)
    return bool(n) and f" {n} " in f" {normalize_answer(haystack)} "


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
