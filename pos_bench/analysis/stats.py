"""Pure statistics for success rates: intervals, paired tests, multiple-comparison correction, power.

Anchors: Wilson score intervals for a proportion; a cluster bootstrap where cases come in families (Miller,
"Adding Error Bars to Evals", 2024); paired differences on the tasks both methods played, with the exact
McNemar test and a paired bootstrap; Holm's step-down correction across one table; the minimum detectable
difference at 80% power. statsmodels does the statistics; this module only shapes inputs and outputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_confint

ALPHA = 0.05
POWER = 0.8
RESAMPLES = 2000
SEED = 0


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def wilson(successes: int, n: int, *, alpha: float = ALPHA) -> Interval:
    """Wilson score interval for successes / n (proportions, not percent); (0, 1) when n = 0."""
    if n == 0:
        return Interval(0.0, 1.0)
    low, high = proportion_confint(successes, n, alpha=alpha, method="wilson")
    # at k = 0 or k = n the bound is exactly 0 or 1; floating point lands a hair inside it
    return Interval(0.0 if successes == 0 else float(low), 1.0 if successes == n else float(high))


def cluster_bootstrap(
    outcomes: Sequence[float],
    clusters: Sequence[object],
    *,
    alpha: float = ALPHA,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """Percentile interval of the mean when whole clusters (not single cases) are resampled with replacement."""
    values = np.asarray(outcomes, dtype=float)
    labels = np.asarray([str(c) for c in clusters])
    if values.size == 0:
        return Interval(0.0, 1.0)
    groups = [values[labels == g] for g in np.unique(labels)]
    sums = np.array([g.sum() for g in groups])
    sizes = np.array([g.size for g in groups])
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(resamples, len(groups)))
    means = sums[picks].sum(axis=1) / sizes[picks].sum(axis=1)
    return Interval(float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2)))


@dataclass(frozen=True)
class Paired:
    """Method A against method B on the n tasks both played; `difference` = rate A − rate B."""

    n: int
    difference: float
    interval: Interval
    a_only: int
    """Tasks A did better on (solved where B did not; with repeated trials, a higher share of its trials)."""
    b_only: int
    p_mcnemar: float
    """Exact McNemar p; with repeated trials, the same exact sign test on the tasks where the two differ."""


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    alpha: float = ALPHA,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """Percentile interval of mean(a − b), resampling tasks (pairs stay together; with repeated trials each value
    is a task's share of successes, so the trials stay clustered with their task)."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if diff.size == 0:
        return Interval(-1.0, 1.0)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(resamples, diff.size))].mean(axis=1)
    return Interval(float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2)))


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p (binomial test on the discordant pairs); 1.0 when there are none."""
    if a_only + b_only == 0:
        return 1.0
    return float(mcnemar([[0, a_only], [b_only, 0]], exact=True).pvalue)


def paired(a: Sequence[float], b: Sequence[float], **bootstrap) -> Paired:
    """A against B per task: success (0/1) or, with repeated trials, each task's share of successful trials."""
    if len(a) != len(b):
        raise ValueError(f"paired outcomes need equal lengths, got {len(a)} and {len(b)}")
    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a_only, b_only = int((a_arr > b_arr).sum()), int((b_arr > a_arr).sum())
    diff = float(a_arr.mean() - b_arr.mean()) if a_arr.size else 0.0
    return Paired(
        n=int(a_arr.size),
        difference=diff,
        interval=paired_bootstrap(a_arr, b_arr, **bootstrap),
        a_only=a_only,
        b_only=b_only,
        p_mcnemar=mcnemar_exact(a_only, b_only),
    )


def holm(p_values: Sequence[float], *, alpha: float = ALPHA) -> list[float]:
    """Holm-adjusted p-values, in the input order."""
    if not p_values:
        return []
    return [float(p) for p in multipletests(list(p_values), alpha=alpha, method="holm")[1]]


def minimum_detectable_effect(
    n: int, baseline: float, *, alpha: float = ALPHA, power: float = POWER
) -> float:
    """Smallest improvement over a `baseline` rate that n tasks per arm detect with `power` (two-sided test of
    two proportions, Cohen's h). A paired design on the same tasks is usually more sensitive, so this is a
    conservative bound. NaN when n < 2."""
    if n < 2:
        return float("nan")
    h = NormalIndPower().solve_power(effect_size=None, nobs1=n, alpha=alpha, power=power, ratio=1.0)
    start = 2 * math.asin(math.sqrt(min(max(baseline, 0.0), 1.0)))
    target = min(start + h, math.pi)
    return math.sin(target / 2) ** 2 - math.sin(start / 2) ** 2


def detection_power(n: int, baseline: float, difference: float, *, alpha: float = ALPHA) -> float:
    """The power the test behind `minimum_detectable_effect` has to detect `difference` over a `baseline` rate
    with n tasks per arm (two-sided, Cohen's h): its inverse, for checking detections against it. NaN when
    n < 2."""
    if n < 2:
        return float("nan")
    start = 2 * math.asin(math.sqrt(min(max(baseline, 0.0), 1.0)))
    target = 2 * math.asin(math.sqrt(min(max(baseline + difference, 0.0), 1.0)))
    return float(NormalIndPower().power(effect_size=abs(target - start), nobs1=n, alpha=alpha, ratio=1.0))
