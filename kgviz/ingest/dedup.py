"""Near-duplicate documents: texts whose word 3-shingle sets overlap by at least a threshold
(Jaccard), e.g. the same article with a typo fixed or a footer added. Exact duplicates share an
id and are caught before this (kgviz.ingest.documents).

Candidate pairs come from prefix filtering (Chaudhuri et al. 2006; Bayardo et al. 2007): order
every set's shingles by one global order; two sets with Jaccard >= t must share a shingle among
the first |x| - ceil(t * |x|) + 1 of each. At t = 0.95 that is about 5 % of each set, so only a
few pairs are compared exactly and the result is the same as comparing all pairs.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

NEAR_DUPLICATE_THRESHOLD = 0.95  # ours: above typical "same text, small edit" overlap
SHINGLE_WORDS = 3

_WORD_RE = re.compile(r"\w+")


@dataclass(frozen=True)
class NearMatch:
    index: int  # the later document
    match: int  # the earlier document it nearly repeats
    similarity: float  # Jaccard of their shingle sets


def shingles(text: str, k: int = SHINGLE_WORDS) -> frozenset[int]:
    """Hashes of the lower-cased word k-grams of ``text`` (the words themselves when fewer)."""
    words = _WORD_RE.findall(text.lower())
    if len(words) < k:
        return frozenset({hash(tuple(words))}) if words else frozenset()
    return frozenset(hash(tuple(words[i : i + k])) for i in range(len(words) - k + 1))


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def find_near_duplicates(
    texts: Sequence[str], threshold: float = NEAR_DUPLICATE_THRESHOLD, *, drop: bool = False
) -> list[NearMatch]:
    """For each text that nearly repeats an earlier one, the most similar earlier text (ties:
    the earliest). With ``drop`` a matched text is treated as removed, so later texts are only
    matched against texts that stay."""
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    index: dict[int, list[int]] = {}
    sets: list[frozenset[int]] = []
    out: list[NearMatch] = []
    for i, text in enumerate(texts):
        s = shingles(text)
        sets.append(s)
        # hash order is one global order within this process; any order gives the same pairs
        prefix = sorted(s)[: len(s) - math.ceil(threshold * len(s)) + 1]
        candidates = {j for h in prefix for j in index.get(h, ())}
        best: NearMatch | None = None
        for j in sorted(candidates):
            sim = jaccard(s, sets[j])
            if sim >= threshold and (best is None or sim > best.similarity):
                best = NearMatch(i, j, sim)
        if best is not None:
            out.append(best)
            if drop:
                continue
        for h in prefix:
            index.setdefault(h, []).append(i)
    return out
