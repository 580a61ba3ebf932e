"""stats.py: bootstrap CI, A/A band and verdict on synthetic samples with known answers.

Everything is seeded; no wall clock is read. Samples mimic the timing protocol: one (old, new,
old2) triple per round, with a per-round drift factor shared by the three (what pairing cancels)
and independent multiplicative noise per sample.
"""

from __future__ import annotations

import random

import pytest

from ptxdiff.dynamic import stats
from ptxdiff.verdict import Timing


def rounds(n=30, base=100.0, factor=1.0, noise=0.005, drift=0.02, seed=0):
    """(old, new, old2) lists: new = factor * old in expectation; lognormal-ish noise."""
    rng = random.Random(seed)
    old, new, old2 = [], [], []
    for _ in range(n):
        d = 1.0 + rng.uniform(-drift, drift)
        old.append(base * d * (1.0 + rng.gauss(0, noise)))
        new.append(base * factor * d * (1.0 + rng.gauss(0, noise)))
        old2.append(base * d * (1.0 + rng.gauss(0, noise)))
    return old, new, old2


def test_median_and_quantile():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    assert stats.quantile([1, 2, 3, 4, 5], 0.0) == 1
    assert stats.quantile([1, 2, 3, 4, 5], 1.0) == 5
    assert stats.quantile([1, 2, 3, 4, 5], 0.25) == 2
    assert stats.quantile([0, 10], 0.35) == pytest.approx(3.5)
    with pytest.raises(ValueError):
        stats.median([])


def test_bootstrap_is_deterministic_and_ordered():
    old, new, _ = rounds(factor=1.1, seed=3)
    a = stats.bootstrap_ratio_ci(new, old, n_boot=500, seed=7)
    b = stats.bootstrap_ratio_ci(new, old, n_boot=500, seed=7)
    assert a == b
    ratio, lo, hi = a
    assert lo <= ratio <= hi


def test_exact_ratio_without_noise_gives_degenerate_ci():
    old = [100.0 + i for i in range(20)]
    new = [1.25 * x for x in old]
    ratio, lo, hi = stats.bootstrap_ratio_ci(new, old, n_boot=200)
    assert ratio == pytest.approx(1.25) and lo == pytest.approx(1.25) and hi == pytest.approx(1.25)
    # unpaired: medians scale too
    ratio_u, lo_u, hi_u = stats.bootstrap_ratio_ci(new, old, n_boot=200, paired=False)
    assert ratio_u == pytest.approx(1.25) and lo_u <= 1.25 <= hi_u


def test_identical_distributions_are_within_noise():
    for seed in range(20):
        old, new, old2 = rounds(factor=1.0, noise=0.01, seed=seed)
        res = stats.compare(old, new, old2, n_boot=500, seed=seed)
        assert res.verdict == Timing.WITHIN_NOISE, (seed, res)


def test_ten_percent_slower_with_small_noise_is_slower():
    old, new, old2 = rounds(factor=1.10, noise=0.01, seed=1)
    res = stats.compare(old, new, old2, n_boot=1000, seed=1)
    assert res.verdict == Timing.SLOWER
    assert res.ratio == pytest.approx(1.10, abs=0.01)
    assert res.ci_lo > 1.0 + res.band
    assert res.new_median_us > res.old_median_us
    assert res.n_rounds == 30


def test_ten_percent_faster_is_faster():
    old, new, old2 = rounds(factor=0.90, noise=0.01, seed=2)
    res = stats.compare(old, new, old2, n_boot=1000, seed=2)
    assert res.verdict == Timing.FASTER
    assert res.ci_hi < 1.0 - res.band


def test_ci_contains_truth_in_most_seeded_trials():
    """Coverage check: the nominal 95% CI holds the true ratio (1.05) in >= 85% of 100 trials
    (percentile bootstrap of a median with 30 rounds is a bit liberal; 85% leaves room)."""
    hits = 0
    for seed in range(100):
        old, new, _ = rounds(factor=1.05, noise=0.01, seed=1000 + seed)
        _, lo, hi = stats.bootstrap_ratio_ci(new, old, n_boot=400, seed=seed)
        hits += lo <= 1.05 <= hi
    assert hits >= 85, hits


def test_paired_pairing_cancels_round_drift():
    """A 2% effect under +-10% per-round drift: the paired CI is narrow, the unpaired one is not."""
    old, new, _ = rounds(factor=1.02, noise=0.002, drift=0.10, seed=5)
    _, lo_p, hi_p = stats.bootstrap_ratio_ci(new, old, n_boot=1000, seed=0, paired=True)
    _, lo_u, hi_u = stats.bootstrap_ratio_ci(new, old, n_boot=1000, seed=0, paired=False)
    assert hi_p - lo_p < (hi_u - lo_u) / 3
    assert lo_p > 1.0


def test_band_from_ci_definition():
    assert stats.band_from_ci((0.98, 1.01)) == pytest.approx(0.02)
    assert stats.band_from_ci((1.0, 0.97, 1.03)) == pytest.approx(0.03)
    assert stats.band_from_ci((1.002, 1.004)) == pytest.approx(0.004)  # an offset A/A counts too


@pytest.mark.parametrize("ci,band,expected", [
    ((1.05, 1.07), 0.02, "slower"),
    ((1.01, 1.07), 0.02, "within-noise"),    # CI reaches into the band
    ((0.90, 0.95), 0.02, "faster"),
    ((0.97, 0.99), 0.02, "within-noise"),    # outside 1 but inside the band
    ((0.95, 1.05), 0.0, "within-noise"),
    ((1.0, 1.05, 1.07), 0.02, "slower"),     # (ratio, lo, hi) form
])
def test_decide(ci, band, expected):
    assert stats.decide(ci, band) == expected


def test_decide_rejects_bad_input():
    with pytest.raises(ValueError):
        stats.decide((1.1, 1.0), 0.01)
    with pytest.raises(ValueError):
        stats.decide((1.0, 1.1), -0.01)


def test_min_band_floor():
    old, new, old2 = rounds(factor=1.03, noise=0.001, seed=4)
    plain = stats.compare(old, new, old2, n_boot=500)
    assert plain.verdict == "slower" and plain.floor == 0.0
    res = stats.compare(old, new, old2, n_boot=500, min_band=0.05)
    # the measured band stays what it was; the floor decides beside it, and both are shown
    assert res.band == plain.band < 0.05 and res.floor == 0.05 and res.verdict == "within-noise"
    assert "A/A band +-" in res.summary() and "min effect 5.00%" in res.summary()
    assert "min effect" not in plain.summary()


def test_a_tiny_clear_change_is_within_the_default_floor():
    """+0.4% with almost no noise is statistically clear but below the default 1% floor
    (config min_effect): the H200 case of a NaN guard in a 3 us kernel."""
    from ptxdiff.repo_config import Config

    old, new, old2 = rounds(factor=1.004, noise=0.0002, seed=5)
    assert stats.compare(old, new, old2, n_boot=500).verdict == "slower"
    res = stats.compare(old, new, old2, n_boot=500, min_band=Config().min_effect)
    assert Config().min_effect == 0.01 and res.verdict == "within-noise" and res.floor == 0.01
    faster = stats.compare(old, [t / 1.05 for t in old], old2, n_boot=500, min_band=Config().min_effect)
    assert faster.verdict == "faster"


def test_bad_samples_rejected():
    with pytest.raises(ValueError):
        stats.bootstrap_ratio_ci([1.0, 2.0], [1.0])          # paired, unequal lengths
    with pytest.raises(ValueError):
        stats.bootstrap_ratio_ci([1.0, 0.0], [1.0, 1.0])     # zero time
    with pytest.raises(ValueError):
        stats.bootstrap_ratio_ci([], [])
    with pytest.raises(ValueError):
        stats.bootstrap_ratio_ci([1.0], [1.0], level=1.0)


def test_timing_result_is_frozen_and_serialisable():
    import dataclasses
    import json
    old, new, old2 = rounds(factor=1.1, seed=9)
    res = stats.compare(old, new, old2, n_boot=200, l2="warm", method="synthetic")
    d = res.as_dict()
    for key in ("ratio", "ci_lo", "ci_hi", "band", "verdict", "n_rounds", "old_median_us", "new_median_us"):
        assert key in d
    assert d["l2"] == "warm"
    json.dumps(d)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.ratio = 2.0  # type: ignore[misc]
    line = res.summary()
    assert res.verdict in line and "CI" in line and "band" in line
