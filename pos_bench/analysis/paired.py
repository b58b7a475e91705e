"""Paired comparisons: every method against raw and against the strongest baseline, on the tasks both played.

Runs are paired when they share benchmark and model. Per pair: tasks in common, the difference in success
rate (points) with a paired-bootstrap 95% interval, the discordant counts, the exact McNemar p, the Holm-adjusted
p across the whole table, and the minimum detectable effect at 80% power for that n and the reference's rate.
With repeated trials a task's outcome is its share of successful trials (the interval resamples tasks, so
trials stay clustered), and the verdict is a gain only past the noise floor of both runs and Holm p < 0.05
(`analysis.trials`); the rest read "within noise".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pos_bench.analysis.runs import Run
from pos_bench.analysis.stats import holm, minimum_detectable_effect, paired
from pos_bench.analysis.tables import BASELINES
from pos_bench.analysis.trials import summarize_trials, verdict

RAW = "raw"


def outcomes(run: Run) -> pd.Series:
    """Success per task id over finished episodes (errors are failures): the share of its trials that succeeded
    (0 or 1 with one trial)."""
    done = run.finished
    return done["success"].astype(float).groupby(done["task_id"].values).mean()


def strongest_baseline(group: Sequence[Run]) -> Run | None:
    candidates = [r for r in group if r.method in BASELINES and len(r.finished)]
    return max(candidates, key=lambda r: outcomes(r).mean()) if candidates else None


def comparisons(runs: Sequence[Run]) -> pd.DataFrame:
    rows = []
    floors = {id(run): summarize_trials(run).mean_noise_floor for run in runs}
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.bench, run.model), []).append(run)
    for (bench, model), group in sorted(groups.items()):
        references = [
            ("raw", next((r for r in group if r.method == RAW), None)),
            ("strongest baseline", strongest_baseline(group)),
        ]
        for kind, reference in references:
            if reference is None:
                continue
            for run in group:
                if run is reference or (kind == "strongest baseline" and reference.method == RAW):
                    continue
                a, b = outcomes(run), outcomes(reference)
                common = a.index.intersection(b.index)
                result = paired(a[common].tolist(), b[common].tolist())
                flags = sorted(set(run.flags) | set(reference.flags))
                rows.append(
                    {
                        "benchmark": bench,
                        "model": model,
                        "method": run.method,
                        "against": f"{reference.method} ({kind})" if kind != "raw" else RAW,
                        "flags": ", ".join(flags) or "–",
                        "n paired": result.n,
                        "diff pts": 100 * result.difference,
                        "95% paired bootstrap": f"[{100 * result.interval.low:.1f}, {100 * result.interval.high:.1f}]",
                        "wins/losses": f"{result.a_only}/{result.b_only}",
                        "McNemar p": result.p_mcnemar,
                        "MDE pts (80%)": 100
                        * minimum_detectable_effect(
                            result.n, float(b[common].mean()) if len(common) else 0.0
                        ),
                        "noise floor pts": 100 * float(np.fmax(floors[id(run)], floors[id(reference)])),
                    }
                )
    table = pd.DataFrame(rows)
    if not table.empty:
        table["Holm p"] = holm(table["McNemar p"].tolist())
        table["verdict"] = [
            verdict(d / 100, p, floor / 100)
            for d, p, floor in zip(table["diff pts"], table["Holm p"], table["noise floor pts"])
        ]
    return table
