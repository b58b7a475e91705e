"""Statistics against hand-computed values and known bootstrap cases (fixed seed)."""

import math

import numpy as np
import pytest

from pos_bench.analysis.stats import (
    cluster_bootstrap,
    holm,
    mcnemar_exact,
    minimum_detectable_effect,
    paired,
    paired_bootstrap,
    wilson,
)


def test_wilson_matches_the_formula_worked_by_hand():
    # 8/10, z = 1.959964: centre (0.8 + z²/20) / (1 + z²/10) = 0.716741, half-width 0.226577
    w = wilson(8, 10)
    assert w.low == pytest.approx(0.490164, abs=1e-5) and w.high == pytest.approx(0.943318, abs=1e-5)
    zero = wilson(0, 4)  # z²/(n + z²) = 3.841459 / 7.841459
    assert zero.low == 0.0 and zero.high == pytest.approx(0.489891, abs=1e-5)
    assert (wilson(0, 0).low, wilson(0, 0).high) == (0.0, 1.0) and wilson(4, 4).high == 1.0


def test_exact_mcnemar_is_the_binomial_tail_of_the_discordant_pairs():
    assert mcnemar_exact(1, 7) == pytest.approx(2 * (1 + 8) / 2**8)  # 0.0703125
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 2**5)
    assert mcnemar_exact(3, 3) == pytest.approx(1.0) and mcnemar_exact(0, 0) == 1.0


def test_paired_counts_wins_losses_and_difference():
    a = [True, True, True, False, False, True]
    b = [False, True, False, True, False, False]
    result = paired(a, b)
    assert (result.n, result.a_only, result.b_only) == (6, 3, 1)
    assert result.difference == pytest.approx(2 / 6) and result.p_mcnemar == pytest.approx(
        mcnemar_exact(3, 1)
    )
    with pytest.raises(ValueError, match="equal lengths"):
        paired([True], [True, False])


def test_paired_bootstrap_agrees_with_normal_theory_on_a_large_known_case():
    # 100 wins and 300 ties in 400 pairs: mean 0.25, se = sqrt(0.25 · 0.75 / 400) = 0.02165
    a = [True] * 100 + [False] * 300
    b = [False] * 400
    interval = paired_bootstrap(a, b, resamples=4000, seed=1)
    se = math.sqrt(0.25 * 0.75 / 400)
    assert interval.low == pytest.approx(0.25 - 1.96 * se, abs=0.006)
    assert interval.high == pytest.approx(0.25 + 1.96 * se, abs=0.006)
    assert paired_bootstrap(a, b, seed=1) == paired_bootstrap(a, b, seed=1)
    assert paired_bootstrap([True] * 5, [False] * 5).low == 1.0


def test_cluster_bootstrap_resamples_whole_clusters():
    # two equal clusters, all successes and all failures: a resampled mean is 0, 0.5 or 1
    outcomes = [1.0] * 10 + [0.0] * 10
    clusters = ["a"] * 10 + ["b"] * 10
    interval = cluster_bootstrap(outcomes, clusters, seed=3)
    assert (interval.low, interval.high) == (0.0, 1.0)
    # with cases that do not cluster, it is close to the case bootstrap of the same data
    rng = np.random.default_rng(0)
    values = rng.integers(0, 2, 300).astype(float)
    spread = cluster_bootstrap(values, range(300), seed=3)
    assert spread.high - spread.low == pytest.approx(2 * 1.96 * values.std() / math.sqrt(300), abs=0.02)


def test_holm_steps_down_and_keeps_the_input_order():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([]) == []


def test_minimum_detectable_effect_at_80_percent_power():
    # n = 134 per arm, baseline 0.5: h = (1.95996 + 0.84162) · sqrt(2 / 134) = 0.34227 → 0.66817 − 0.5
    assert minimum_detectable_effect(134, 0.5) == pytest.approx(0.16817, abs=5e-4)
    assert minimum_detectable_effect(1000, 0.5) < minimum_detectable_effect(100, 0.5)
    assert math.isnan(minimum_detectable_effect(1, 0.5))
