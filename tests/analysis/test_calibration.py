"""A small calibration (R = 20) on real played toy episodes: the verdicts and intervals of the analysis hold
their nominal rates within wide bounds, so a broken test or interval formula fails here."""

from pathlib import Path

import pytest

from pos_bench.analysis.calibration import pool_rate, scenario
from pos_bench.analysis.runs import load_run
from pos_bench.analysis.stats import detection_power, minimum_detectable_effect
from pos_bench.runner import run

TASKS, PLAYS = 60, 8


def pool(root: Path, slip: float):
    cfg = {
        "bench": {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": TASKS, "max_turns": 12},
        "method": {"_target_": "baselines.expert.Expert", "_partial_": True, "slip": slip},
        "model": {"_target_": "pos_bench.models.scripted.ScriptedModel"},
        "expert": True,
        "runner": {"backend": "threading", "n_jobs": 1, "progress": False, "trials": PLAYS},
        "roles": {},
        "cache": {"mode": "off"},
    }
    folder = root / f"slip-{slip}"
    run(cfg, folder, {"bench": "toy", "method": "expert", "model": "none", "label": "test"})
    return load_run(folder, with_events=False)


@pytest.fixture(scope="module")
def pools(tmp_path_factory):
    root = tmp_path_factory.mktemp("calibration")
    return pool(root, 0.1), pool(root, 0.5)


def test_the_slip_sets_the_skill(pools):
    good, poor = pools
    assert pool_rate(good) > pool_rate(poor) + 0.2


def test_a_and_a_rarely_reads_as_a_gain_and_its_intervals_cover_zero(pools):
    _, middling = pools  # a rate near 1/2: the most run-to-run variation, where a liberal test shows most
    for trials in (1, 3):
        result = scenario("A/A", middling, None, trials=trials, repetitions=20, seed=trials)
        assert result.flagged <= 0.25
        assert result.coverage >= 0.75
        assert abs(result.mean_difference) < 0.1


def test_a_large_true_gain_is_detected_and_covered(pools):
    good, poor = pools
    result = scenario("A/B", good, poor, trials=1, repetitions=20, seed=7)
    assert result.true_difference > 0.2
    assert result.flagged >= 0.8 and result.coverage >= 0.75
    assert result.predicted_power > 0.8


def test_detection_power_is_the_inverse_of_the_minimum_detectable_effect():
    for n, base in ((50, 0.3), (100, 0.6), (400, 0.1)):
        assert detection_power(n, base, minimum_detectable_effect(n, base)) == pytest.approx(0.8, abs=1e-3)
