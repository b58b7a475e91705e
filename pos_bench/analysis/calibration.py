"""Calibration of the analysis' verdicts against agents of known skill (`scripts/calibrate_stats.py`).

The inputs are two pools of played episodes: the same tasks played many times (`runner.trials`) by the expert
with a given `slip` each, every play seeded apart. A repetition draws, for every task, `trials` distinct plays of
each configuration from its pool (without replacement within the repetition; an A/A repetition draws both arms'
plays from one pool without overlap), renumbers them as trials 0…k−1, and hands the two runs to the table's own
code: `analysis.paired.comparisons` (paired bootstrap, exact McNemar, Holm, the noise floor, the verdict) and
`analysis.stats.paired` on the same per-task outcomes for the interval. The truth a repetition is checked against
is the difference of the two pools' success rates over all their plays of these tasks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pos_bench.analysis.paired import comparisons, outcomes
from pos_bench.analysis.runs import Run
from pos_bench.analysis.stats import ALPHA, detection_power, paired
from pos_bench.analysis.trials import WITHIN_NOISE


@dataclass(frozen=True)
class Repetition:
    """What the analysis said about one drawn pair of runs."""

    difference: float
    low: float
    high: float
    verdict: str


@dataclass(frozen=True)
class Scenario:
    """One calibration scenario's result over its repetitions."""

    name: str
    tasks: int
    trials: int
    repetitions: int
    true_difference: float
    mean_difference: float
    flagged: float
    """Share of repetitions whose verdict is not `within noise` (A/A: false alarms; A/B: detections in the
    true direction)."""
    coverage: float
    """Share of repetitions whose 95% paired interval holds the true difference."""
    predicted_power: float
    """The power `stats.detection_power` predicts for this n, reference rate and true difference (one trial per
    task: it knows nothing of trials, so it is not shown beside the 3-trial rows); α for A/A."""


def pool_rate(pool: Run) -> float:
    """Success rate over every finished play of the pool (the configuration's true rate on these tasks)."""
    return float(pool.finished["success"].astype(float).mean())


def drawn(pool: Run, plays: dict[str, list[int]], method: str) -> Run:
    """The run made of the given plays per task, renumbered as trials 0…k−1 and labelled `method`."""
    done = pool.finished
    keys = {(task, trial): rank for task, picked in plays.items() for rank, trial in enumerate(picked)}
    index = [(t, int(k)) in keys for t, k in zip(done["task_id"], done["trial"], strict=True)]
    episodes = done[index].copy()
    episodes["trial"] = [
        keys[(t, int(k))] for t, k in zip(episodes["task_id"], episodes["trial"], strict=True)
    ]
    return dataclasses.replace(pool, method=method, episodes=episodes.reset_index(drop=True), flags=())


def plays_per_task(pool: Run) -> dict[str, list[int]]:
    done = pool.finished
    return {str(t): sorted(int(k) for k in g) for t, g in done.groupby("task_id")["trial"]}


def repetition(a: Run, b: Run) -> Repetition:
    """The table's verdict on A against B (B labelled as the `raw` reference) and the paired interval."""
    table = comparisons([dataclasses.replace(b, method="raw"), dataclasses.replace(a, method="candidate")])
    row = table[table["method"] == "candidate"].iloc[0]
    x, y = outcomes(a), outcomes(b)
    common = x.index.intersection(y.index)
    result = paired(x[common].tolist(), y[common].tolist())
    return Repetition(result.difference, result.interval.low, result.interval.high, str(row["verdict"]))


def scenario(
    name: str, pool_a: Run, pool_b: Run | None, *, trials: int, repetitions: int, seed: int
) -> Scenario:
    """`repetitions` draws of A against B (`pool_b` None: A/A, both arms drawn apart from `pool_a`)."""
    rng = np.random.default_rng(seed)
    plays_a = plays_per_task(pool_a)
    plays_b = plays_per_task(pool_b) if pool_b is not None else plays_a
    tasks = sorted(set(plays_a) & set(plays_b))
    need = 2 * trials if pool_b is None else trials
    short = [t for t in tasks if min(len(plays_a[t]), len(plays_b[t])) < need]
    if short:
        raise ValueError(f"{len(short)} tasks have fewer than {need} plays in a pool; play more trials")
    truth = 0.0 if pool_b is None else pool_rate(pool_a) - pool_rate(pool_b)
    reference = pool_rate(pool_b if pool_b is not None else pool_a)
    results = []
    for _ in range(repetitions):
        picks_a, picks_b = {}, {}
        for task in tasks:
            if pool_b is None:
                chosen = rng.choice(plays_a[task], size=2 * trials, replace=False).tolist()
                picks_a[task], picks_b[task] = chosen[:trials], chosen[trials:]
            else:
                picks_a[task] = rng.choice(plays_a[task], size=trials, replace=False).tolist()
                picks_b[task] = rng.choice(plays_b[task], size=trials, replace=False).tolist()
        a = drawn(pool_a, picks_a, "candidate")
        b = drawn(pool_b if pool_b is not None else pool_a, picks_b, "raw")
        results.append(repetition(a, b))
    flagged = [
        r.verdict != WITHIN_NOISE and (pool_b is None or np.sign(r.difference) == np.sign(truth))
        for r in results
    ]
    return Scenario(
        name=name,
        tasks=len(tasks),
        trials=trials,
        repetitions=repetitions,
        true_difference=truth,
        mean_difference=float(np.mean([r.difference for r in results])),
        flagged=float(np.mean(flagged)),
        coverage=float(np.mean([r.low <= truth <= r.high for r in results])),
        predicted_power=detection_power(len(tasks), reference, truth, alpha=ALPHA)
        if pool_b is not None
        else ALPHA,
    )


def table(scenarios: list[Scenario]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "scenario": s.name,
            "tasks": s.tasks,
            "trials": s.trials,
            "R": s.repetitions,
            "true diff pts": round(100 * s.true_difference, 1),
            "mean diff pts": round(100 * s.mean_difference, 1),
            "gain/loss rate": f"{100 * s.flagged:.1f}%",
            "predicted (α or power)": f"{100 * s.predicted_power:.1f}%"
            if s.trials == 1 or s.true_difference == 0
            else "–",
            "95% interval coverage": f"{100 * s.coverage:.1f}%",
        }
        for s in scenarios
    )
