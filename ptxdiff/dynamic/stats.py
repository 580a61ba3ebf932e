"""Statistics for GPU timing: a bootstrap CI for new/old, an A/A noise band and a verdict.

Pure standard library, no torch or numpy, so it imports anywhere and its unit tests run on CI.

The protocol (ptxdiff.dynamic.timing) measures in *rounds*: in each round old, new and an A/A copy of old
("old2") are each timed once, in a randomised order. One round therefore gives one sample of each,
taken close together in time, and the natural statistic is **paired by round**:

    r_i = new_i / old_i                       (per-round ratio)
    ratio = median_i(r_i)                     (point estimate)
    CI = percentile bootstrap of median(r)    (resampling whole rounds, with replacement)

Pairing cancels what drifts between rounds (clocks, temperature, other tenants) because it moves
old_i and new_i together. ``paired=False`` resamples the two sample lists independently and uses
median(new*)/median(old*) instead; that is for samples not taken in rounds.

The A/A band is measured, not assumed: the same bootstrap applied to old2 vs old (two separately
captured copies of the *same* callable) gives a CI around 1; the band is its half-width about 1,

    band = max(|lo_AA - 1|, |hi_AA - 1|),

i.e. the smallest interval 1 +- band that contains the whole A/A CI. It therefore includes both the
A/A point offset (e.g. two graph instances that differ systematically by a few tenths of a percent)
and the A/A sampling width. ``decide`` calls ``faster``/``slower`` only when the *whole* new/old CI
lies outside 1 +- band; anything else is ``within-noise``. A ``min_band`` floor (config
``min_effect``, 1% by default) is the smallest change that matters: the verdict needs the CI outside
1 +- max(band, floor), so a clear but tiny change (+0.4% of a 3 us kernel) reads ``within-noise``.
The result keeps the two apart (``band`` measured, ``floor`` declared) and shows both.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ptxdiff.verdict import Timing


def median(xs: Sequence[float]) -> float:
    """The sample median (mean of the two middle values for an even count)."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of an empty sample")
    mid = n // 2
    return float(s[mid]) if n % 2 else (s[mid - 1] + s[mid]) / 2.0


def quantile(xs: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (the usual 'type 7'), q in [0, 1]."""
    s = sorted(xs)
    if not s:
        raise ValueError("quantile of an empty sample")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile q={q} outside [0, 1]")
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _check(samples: Sequence[float], what: str) -> list[float]:
    xs = [float(x) for x in samples]
    if not xs:
        raise ValueError(f"{what}: no samples")
    if any(not math.isfinite(x) or x <= 0 for x in xs):
        raise ValueError(f"{what}: samples must be finite and > 0")
    return xs


def bootstrap_ratio_ci(new_samples: Sequence[float], old_samples: Sequence[float], n_boot: int = 2000,
                       seed: int = 0, level: float = 0.95, paired: bool = True) -> tuple[float, float, float]:
    """(ratio, lo, hi): the median ratio new/old and its percentile-bootstrap CI at ``level``.

    paired=True (default): sample i of each list is from the same round; the statistic is the
    median of the per-round ratios new_i/old_i and rounds are resampled whole. paired=False: the
    statistic is median(new)/median(old) and each list is resampled on its own.
    Deterministic for a given seed.
    """
    new = _check(new_samples, "new")
    old = _check(old_samples, "old")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level={level} must be in (0, 1)")
    if n_boot < 1:
        raise ValueError("n_boot must be >= 1")
    rng = random.Random(seed)
    boots: list[float] = []
    if paired:
        if len(new) != len(old):
            raise ValueError(f"paired bootstrap needs equal lengths, got {len(new)} and {len(old)}")
        ratios = [a / b for a, b in zip(new, old)]
        point = median(ratios)
        n = len(ratios)
        for _ in range(n_boot):
            boots.append(median(rng.choices(ratios, k=n)))
    else:
        point = median(new) / median(old)
        nn, no = len(new), len(old)
        for _ in range(n_boot):
            boots.append(median(rng.choices(new, k=nn)) / median(rng.choices(old, k=no)))
    alpha = (1.0 - level) / 2.0
    boots.sort()
    return point, quantile(boots, alpha), quantile(boots, 1.0 - alpha)


def band_from_ci(ci: Sequence[float]) -> float:
    """Half-width about 1 of an A/A CI: max(|lo-1|, |hi-1|). Accepts (lo, hi) or (ratio, lo, hi)."""
    lo, hi = ci[-2], ci[-1]
    return max(abs(lo - 1.0), abs(hi - 1.0))


def decide(ci: Sequence[float], band: float) -> str:
    """``slower`` if the whole CI lies above 1+band, ``faster`` if wholly below 1-band, else
    ``within-noise``. ``ci`` is (lo, hi) or (ratio, lo, hi)."""
    lo, hi = ci[-2], ci[-1]
    if lo > hi:
        raise ValueError(f"CI lower bound {lo} above upper bound {hi}")
    if band < 0:
        raise ValueError("band must be >= 0")
    if lo > 1.0 + band:
        return Timing.SLOWER
    if hi < 1.0 - band:
        return Timing.FASTER
    return Timing.WITHIN_NOISE


@dataclass(frozen=True)
class TimingResult:
    """New vs old: median ratio new/old with its CI, the A/A band, the verdict and the medians.

    The first eight fields are the contract; the rest describe how it was measured.
    ratio > 1 means new is slower.
    """

    ratio: float
    ci_lo: float
    ci_hi: float
    band: float
    verdict: str
    n_rounds: int
    old_median_us: float
    new_median_us: float
    level: float = 0.95
    aa_ratio: float = 1.0            # old2/old median ratio (the A/A point estimate)
    aa_lo: float = 1.0
    aa_hi: float = 1.0
    l2: str = ""                     # L2 state during timing, e.g. "warm"
    floor: float = 0.0               # the smallest change called faster/slower (min_effect), beside the band
    method: str = ""                 # how samples were taken, in words
    extra: dict[str, Any] = field(default_factory=dict[str, Any], compare=False)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """One line, numbers always shown next to the word."""
        pct = (self.ratio - 1.0) * 100.0
        floor = f", min effect {self.floor * 100:.2f}%" if self.floor else ""
        return (f"{self.verdict}: new/old {self.ratio:.4f} ({pct:+.2f}%), {self.level:.0%} CI "
                f"[{self.ci_lo:.4f}, {self.ci_hi:.4f}], A/A band +-{self.band * 100:.2f}%{floor}, "
                f"old {self.old_median_us:.2f} us, new {self.new_median_us:.2f} us, {self.n_rounds} rounds"
                + (f", L2 {self.l2}" if self.l2 else ""))


def compare(old: Sequence[float], new: Sequence[float], old2: Sequence[float], n_boot: int = 2000, seed: int = 0,
            level: float = 0.95, paired: bool = True, min_band: float = 0.0, l2: str = "", method: str = "",
            extra: dict[str, Any] | None = None) -> TimingResult:
    """Everything from three sample lists (times in us, one per round): new/old CI, band from
    old2/old, verdict. The two bootstraps use different seeds derived from ``seed``."""
    ratio, lo, hi = bootstrap_ratio_ci(new, old, n_boot=n_boot, seed=seed, level=level, paired=paired)
    aa, aa_lo, aa_hi = bootstrap_ratio_ci(old2, old, n_boot=n_boot, seed=seed + 1, level=level, paired=paired)
    band = band_from_ci((aa_lo, aa_hi))
    return TimingResult(ratio=ratio, ci_lo=lo, ci_hi=hi, band=band, verdict=decide((lo, hi), max(band, min_band)),
                        floor=min_band,
                        n_rounds=len(old), old_median_us=median(old), new_median_us=median(new), level=level,
                        aa_ratio=aa, aa_lo=aa_lo, aa_hi=aa_hi, l2=l2, method=method, extra=dict(extra or {}))
