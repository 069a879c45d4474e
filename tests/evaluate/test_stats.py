"""Statistics on synthetic data with known answers."""
from __future__ import annotations

import numpy as np
import pytest

from kgviz.errors import EvaluationError
from kgviz.evaluate.stats import bootstrap_ci, paired_comparison, sign_flip_p_value


def test_ci_contains_true_mean_for_large_sample() -> None:
    rng = np.random.default_rng(123)
    x = rng.normal(loc=0.42, scale=1.0, size=5000)
    est = bootstrap_ci(x, n_boot=2000, seed=7)
    assert est.n == 5000
    assert est.lo < 0.42 < est.hi
    assert est.hi - est.lo < 0.1  # ~ 2 * 1.96 / sqrt(5000) = 0.055
    assert est.mean == pytest.approx(float(x.mean()))


def test_ci_is_seeded_and_reproducible() -> None:
    x = np.random.default_rng(0).exponential(size=40)
    assert bootstrap_ci(x, seed=3) == bootstrap_ci(x, seed=3)
    assert bootstrap_ci(x, seed=3).lo != bootstrap_ci(x, seed=4).lo


def test_ci_coverage_is_close_to_95_percent() -> None:
    """Over many repeats of a 0/1 metric with p = 0.6 and n = 60, the 95% CI holds p about 95% of
    the time (percentile bootstrap is a little narrow at small n, hence the band)."""
    rng = np.random.default_rng(2024)
    reps, hits = 300, 0
    for r in range(reps):
        x = rng.binomial(1, 0.6, size=60)
        hits += bootstrap_ci(x, n_boot=800, seed=r).contains(0.6)
    assert 0.89 <= hits / reps <= 0.99


def test_degenerate_inputs() -> None:
    est = bootstrap_ci([])
    assert est.n == 0 and est.to_dict()["mean"] is None
    one = bootstrap_ci([0.5])
    assert (one.lo, one.mean, one.hi) == (0.5, 0.5, 0.5)
    with pytest.raises(EvaluationError):
        bootstrap_ci([1.0, float("nan")])
    with pytest.raises(EvaluationError):
        paired_comparison([1, 0], [1, 0, 1])


def test_paired_test_detects_planted_difference() -> None:
    rng = np.random.default_rng(5)
    base = rng.binomial(1, 0.5, size=200).astype(float)
    better = base.copy()
    flip = rng.choice(np.flatnonzero(base == 0), size=40, replace=False)
    better[flip] = 1.0  # A is right on 40 more questions than B, never worse
    res = paired_comparison(better, base, metric="acc", names=("A", "B"))
    assert res.p_value < 0.01
    assert res.mean_diff == pytest.approx(0.2)
    assert res.lo > 0 and res.hi >= 0.2
    assert (res.a, res.b, res.n) == ("A", "B", 200)


def test_paired_test_does_not_flag_null_difference() -> None:
    rng = np.random.default_rng(11)
    a = rng.binomial(1, 0.5, size=200).astype(float)
    b = rng.binomial(1, 0.5, size=200).astype(float)  # same distribution, independent
    res = paired_comparison(a, b, seed=1)
    assert res.p_value > 0.05
    assert res.lo < 0 < res.hi


def test_sign_flip_exact_small_n() -> None:
    # all five differences positive: only 2 of the 32 sign patterns are as extreme
    assert sign_flip_p_value([1, 1, 1, 1, 1]) == pytest.approx(2 / 32)
    assert sign_flip_p_value([0, 0, 0]) == 1.0
    assert sign_flip_p_value([1, -1]) == 1.0


def test_bootstrap_shares_give_each_category_exactly_its_own_bootstrap_ci() -> None:
    from kgviz.evaluate.stats import bootstrap_ci, bootstrap_shares

    rng = np.random.default_rng(3)
    labels = [str(x) for x in rng.choice(["a", "b", "c"], size=257, p=[0.6, 0.3, 0.1])]
    got = bootstrap_shares(labels, ["a", "b", "c", "never"], n_boot=300, seed=11)
    for cat in ("a", "b", "c", "never"):
        want = bootstrap_ci([float(x == cat) for x in labels], n_boot=300, seed=11)
        assert (got[cat].mean, got[cat].lo, got[cat].hi, got[cat].n) == (want.mean, want.lo, want.hi, want.n)
    assert (got["never"].lo, got["never"].hi) == (0.0, 0.0)
    assert bootstrap_shares([], ["a"])["a"].n == 0
