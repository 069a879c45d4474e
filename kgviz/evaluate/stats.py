"""Statistics for batch evaluations: percentile-bootstrap CIs of a mean and a paired comparison.

Choices (documented because they change the numbers):

* CIs are percentile bootstrap intervals of the mean: resample the n per-question values with
  replacement ``n_boot`` times (seeded, vectorised with numpy), take the 2.5 and 97.5 percentiles of
  the resampled means. Simple, makes no normality assumption, and is what the papers' tables
  would need; it is a little narrow for very small n (the coverage test in tests/evaluate checks
  it is close to 95% at n = 50).
* Paired comparison of methods A and B on the same questions: d_i = A_i - B_i. The difference is
  mean(d) with a percentile-bootstrap CI over questions, and the p-value comes from a two-sided
  paired **sign-flip permutation test** on mean(d): under H0 (no difference) each d_i is as likely
  to be +|d_i| as -|d_i|. We chose it over Wilcoxon because our metrics are mostly 0/1 (EM, Acc,
  coverage) with many ties and zero differences, where Wilcoxon's rank approximation is poor,
  while the permutation test is exact in distribution (all 2^n sign patterns when n <= 16, a
  seeded Monte-Carlo sample otherwise, with the +1 correction so p is never 0).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from kgviz.errors import EvaluationError

DEFAULT_N_BOOT = 2000
DEFAULT_N_PERM = 10_000
DEFAULT_SEED = 0
EXACT_MAX_N = 16  # 2^16 = 65,536 sign patterns: enumerate them all
_CHUNK_CELLS = 4_000_000  # resampling matrix cells per block: bounds memory for large n


@dataclass(frozen=True)
class Estimate:
    """A mean with its bootstrap CI. NaN fields when there is no data."""

    mean: float
    lo: float
    hi: float
    n: int
    level: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        return {"mean": _num(self.mean), "lo": _num(self.lo), "hi": _num(self.hi), "n": self.n}

    def contains(self, value: float) -> bool:
        return self.lo <= value <= self.hi


@dataclass(frozen=True)
class Paired:
    """A - B on the questions both answered: mean difference, its CI and a p-value."""

    metric: str
    a: str
    b: str
    n: int
    mean_diff: float
    lo: float
    hi: float
    p_value: float
    test: str = "paired sign-flip permutation (two-sided)"

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "a": self.a, "b": self.b, "n": self.n, "mean_diff": _num(self.mean_diff),
                "lo": _num(self.lo), "hi": _num(self.hi), "p_value": _num(self.p_value), "test": self.test}


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), 6)


def _as_array(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size and not np.all(np.isfinite(arr)):
        raise EvaluationError("statistics need finite numbers (a per-question value is NaN or infinite)")
    return arr


def bootstrap_means(values: Sequence[float] | np.ndarray, *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> np.ndarray:
    """``n_boot`` means of resamples (with replacement) of ``values``."""
    arr = _as_array(values)
    if n_boot < 1:
        raise EvaluationError(f"n_boot must be at least 1 (got {n_boot})")
    if arr.size == 0:
        return np.full(n_boot, np.nan)
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    rows = max(1, _CHUNK_CELLS // arr.size)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        idx = rng.integers(0, arr.size, size=(stop - start, arr.size))
        out[start:stop] = arr[idx].mean(axis=1)
    return out


def bootstrap_shares(labels: Sequence[str], categories: Sequence[str], *, n_boot: int = DEFAULT_N_BOOT,
                     seed: int = DEFAULT_SEED, level: float = 0.95) -> dict[str, Estimate]:
    """For each category, ``bootstrap_ci`` of the 0/1 values "this item's label is the category",
    with the same numbers, but every category read from one set of resamples: the resample indices
    depend only on the seed, ``n_boot`` and the number of items, never on the values, so drawing
    them once per category (a failure taxonomy has a dozen) only repeated the same work."""
    if not 0.0 < level < 1.0:
        raise EvaluationError(f"CI level must be in (0, 1) (got {level})")
    if n_boot < 1:
        raise EvaluationError(f"n_boot must be at least 1 (got {n_boot})")
    n = len(labels)
    if n == 0:
        return {c: Estimate(math.nan, math.nan, math.nan, 0, level) for c in categories}
    k_all = len(categories)
    code = {c: k for k, c in enumerate(categories)}
    codes = np.array([code.get(x, k_all) for x in labels])  # k_all: none of the categories
    rng = np.random.default_rng(seed)
    counts = np.empty((n_boot, k_all))
    rows = max(1, _CHUNK_CELLS // n)
    for start in range(0, n_boot, rows):  # the same draws, in the same chunks, as bootstrap_means
        stop = min(n_boot, start + rows)
        drawn = codes[rng.integers(0, n, size=(stop - start, n))]
        # one bincount for the block: resample i's category k lands in bin i * (k_all + 1) + k
        drawn += (np.arange(stop - start) * (k_all + 1))[:, None]
        block = np.bincount(drawn.ravel(), minlength=(stop - start) * (k_all + 1))
        counts[start:stop] = block.reshape(stop - start, k_all + 1)[:, :k_all]
    alpha = (1.0 - level) / 2.0
    out = {}
    for k, c in enumerate(categories):
        lo, hi = np.quantile(counts[:, k] / n, [alpha, 1.0 - alpha])
        out[c] = Estimate(float(np.count_nonzero(codes == k) / n), float(lo), float(hi), n, level)
    return out


def bootstrap_ci(values: Sequence[float], *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED,
                 level: float = 0.95) -> Estimate:
    """Mean of ``values`` with a percentile-bootstrap CI at ``level``."""
    if not 0.0 < level < 1.0:
        raise EvaluationError(f"CI level must be in (0, 1) (got {level})")
    arr = _as_array(values)
    if arr.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, level)
    means = bootstrap_means(arr, n_boot=n_boot, seed=seed)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return Estimate(float(arr.mean()), float(lo), float(hi), int(arr.size), level)


@functools.lru_cache(maxsize=EXACT_MAX_N + 1)
def _all_signs(n: int) -> np.ndarray:
    """Every +-1 pattern of length n, one per row (2^n rows)."""
    bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
    return (1.0 - 2.0 * bits).astype(float)


def sign_flip_p_value(diffs: Sequence[float], *, n_perm: int = DEFAULT_N_PERM, seed: int = DEFAULT_SEED) -> float:
    """Two-sided p-value of mean(diffs) = 0 under random sign flips (see the module docstring)."""
    d = _as_array(diffs)
    if d.size == 0:
        return math.nan
    observed = abs(d.mean())
    if np.all(d == 0):
        return 1.0
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))  # equal sums must count as "as extreme"
    if d.size <= EXACT_MAX_N:
        signs = _all_signs(d.size)
        stats = np.abs(signs @ d) / d.size
        return float(np.mean(stats >= observed - tol))
    rng = np.random.default_rng(seed)
    hits = 0
    rows = max(1, _CHUNK_CELLS // d.size)
    for start in range(0, n_perm, rows):
        stop = min(n_perm, start + rows)
        signs = rng.choice((1.0, -1.0), size=(stop - start, d.size))
        hits += int(np.sum(np.abs(signs @ d) / d.size >= observed - tol))
    return (hits + 1) / (n_perm + 1)


def paired_comparison(a: Sequence[float], b: Sequence[float], *, metric: str = "", names: tuple[str, str] = ("A", "B"),
                      n_boot: int = DEFAULT_N_BOOT, n_perm: int = DEFAULT_N_PERM, seed: int = DEFAULT_SEED) -> Paired:
    """A - B for two equally long sequences of per-question values (same question order)."""
    xa, xb = _as_array(a), _as_array(b)
    if xa.shape != xb.shape:
        raise EvaluationError(f"a paired comparison needs the same questions for both methods "
                              f"({xa.size} vs {xb.size} values)")
    d = xa - xb
    est = bootstrap_ci(d, n_boot=n_boot, seed=seed)
    return Paired(metric, names[0], names[1], int(d.size), est.mean, est.lo, est.hi,
                  sign_flip_p_value(d, n_perm=n_perm, seed=seed))
