"""Repeated trials (`runner.trials=K`): pass@k and pass^k, per-task flips, and the noise floor a gain must clear.

Definitions, per configuration (one run), over its tasks with n trials each, c of them successes:
- pass@1 is the mean over tasks of c / n (the success rate with every trial counted).
- pass@k = 1 − C(n−c, k) / C(n, k): the chance that at least one of k trials drawn without replacement
  succeeds; pass^k = C(c, k) / C(n, k): the chance that all k succeed (unbiased estimators, k ≤ n). pass^k
  falling fast with k means the configuration succeeds by luck rather than reliably.
- the flip rate is the share of tasks whose trials disagree (some succeed, some fail).
- the noise floor is how far the configuration's success rate moves against itself: resample the tasks with
  replacement (trials stay with their task) and pick two different trials at random, `RESAMPLES` times; the
  floor is the (1 − α) quantile of |rate of one trial − rate of the other|. It needs K ≥ 2 (NaN otherwise).
- a comparison of two runs compares pass@1 averaged over K trials, which moves √K times less than a single
  trial (trials of a task are independent plays): its floor is the single-trial floor / √K (`mean_noise_floor`).
  Gating K-trial means by the single-trial floor was measured to be far too strict (`scripts/calibrate_stats.py`:
  with 3 trials, a true 16-point gain on 100 tasks was called a gain in 42% of repetitions against 72% with one
  trial; with the √K floor, see docs/calibration.md).

A difference between two configurations is a gain (or a loss) only when it is larger than the larger of
their two mean noise floors and passes the paired test; everything else is "within noise" (`verdict`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pos_bench.analysis.runs import Run
from pos_bench.analysis.stats import ALPHA, RESAMPLES, SEED

WITHIN_NOISE = "within noise"


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from c successes in n trials: 1 − C(n−c, k) / C(n, k)."""
    _check(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k from c successes in n trials: C(c, k) / C(n, k), the chance that k trials all succeed."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 ≤ c ≤ n and 1 ≤ k ≤ n, got n={n}, c={c}, k={k}")


def trial_matrix(run: Run) -> pd.DataFrame:
    """Success (0/1) per task (rows) and trial (columns) over finished episodes (errors are failures); only the
    tasks with every trial finished, so each row has the same n."""
    done = run.finished
    if done.empty:
        return pd.DataFrame()
    matrix = pd.crosstab(done["task_id"], done["trial"], values=done["success"].astype(float), aggfunc="max")
    return matrix.dropna()


def noise_floor(
    matrix: pd.DataFrame, *, alpha: float = ALPHA, resamples: int = RESAMPLES, seed: int = SEED
) -> float:
    """The (1 − α) quantile of |trial i − trial j| success rates, tasks resampled (see the module docstring)."""
    values = matrix.to_numpy(dtype=float)
    n, k = values.shape if values.ndim == 2 else (0, 0)
    if n == 0 or k < 2:
        return float("nan")
    rng = np.random.default_rng(seed)
    tasks = rng.integers(0, n, size=(resamples, n))
    first = rng.integers(0, k, size=resamples)
    second = (first + rng.integers(1, k, size=resamples)) % k
    diffs = values[tasks, first[:, None]] - values[tasks, second[:, None]]
    return float(np.quantile(np.abs(diffs.mean(axis=1)), 1 - alpha))


@dataclass(frozen=True)
class TrialSummary:
    """One configuration's repeated trials."""

    tasks: int
    trials: int
    pass_at_1: float
    pass_at: tuple[float, ...]
    """pass@k for k = 1 … trials."""
    pass_hat: tuple[float, ...]
    """pass^k for k = 1 … trials."""
    flip_rate: float
    noise_floor: float
    """Of a single trial, in rate units (0–1); NaN with one trial."""
    mean_noise_floor: float
    """Of pass@1 over all `trials` (the single-trial floor / √trials): what a comparison of two runs must clear."""


def summarize_trials(run: Run) -> TrialSummary:
    matrix = trial_matrix(run)
    n_tasks, n = matrix.shape if not matrix.empty else (0, 0)
    counts = matrix.sum(axis=1).astype(int).tolist() if n else []

    def mean(values: list[float]) -> float:
        return float(np.mean(values)) if values else float("nan")

    ks = range(1, n + 1)
    return TrialSummary(
        tasks=n_tasks,
        trials=n,
        pass_at_1=mean([c / n for c in counts]),
        pass_at=tuple(mean([pass_at_k(n, c, k) for c in counts]) for k in ks),
        pass_hat=tuple(mean([pass_hat_k(n, c, k) for c in counts]) for k in ks),
        flip_rate=mean([float(0 < c < n) for c in counts]) if n > 1 else float("nan"),
        noise_floor=(floor := noise_floor(matrix)),
        mean_noise_floor=floor / math.sqrt(n) if n else float("nan"),
    )


def verdict(difference: float, p_value: float, floor: float, *, alpha: float = ALPHA) -> str:
    """`gain` / `loss` when |difference| exceeds the noise floor and the paired test rejects at `alpha`;
    `within noise` otherwise. With no measured floor (one trial) a significant difference reads
    `gain (floor unmeasured)`, so a reader knows the run-to-run noise was never checked."""
    if not p_value < alpha:
        return WITHIN_NOISE
    if math.isnan(floor):
        return ("gain" if difference > 0 else "loss") + " (floor unmeasured)"
    if abs(difference) <= floor:
        return WITHIN_NOISE
    return "gain" if difference > 0 else "loss"


def strips(run: Run) -> dict[str, str]:
    """Per task, its trials in order as ✓ / ✗ (· for a trial not finished)."""
    done = run.finished
    if done.empty:
        return {}
    trials = int(done["trial"].max()) + 1
    marks: dict[str, list[str]] = {}
    for task, trial, success in zip(done["task_id"], done["trial"], done["success"]):
        strip = marks.setdefault(str(task), ["·"] * trials)
        strip[int(trial)] = "✓" if success else "✗"
    return {task: "".join(strip) for task, strip in marks.items()}


def trials_table(runs: list[Run]) -> pd.DataFrame:
    """One row per run: tasks, trials, pass@1, pass@k and pass^k for every k, flip rate, noise floor (points)."""
    rows = []
    for run in runs:
        s = summarize_trials(run)
        row = {
            "run": run.name,
            "flags": ", ".join(run.flags) or "–",
            "tasks": s.tasks,
            "trials": s.trials,
            "pass@1 %": 100 * s.pass_at_1,
        }
        for k in range(2, s.trials + 1):
            row[f"pass@{k} %"] = 100 * s.pass_at[k - 1]
        for k in range(2, s.trials + 1):
            row[f"pass^{k} %"] = 100 * s.pass_hat[k - 1]
        row["flip rate %"] = 100 * s.flip_rate
        row["noise floor pts"] = 100 * s.noise_floor
        rows.append(row)
    return pd.DataFrame(rows)
