"""Figure 3's data from PoS episodes: trapping incidence per run, and the Static / Cycle / Drift × knowledge /
action distribution of trapping onsets.

Read from each episode's method report (`belief_health_history`, in the episode folder's result.json, else in
the results.jsonl row) or, when the report is absent, from the `memory` events' `health` records. A run whose
episodes hold no health record (a baseline, or trapping switched off) has no row here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from pos_bench import events
from pos_bench.analysis.runs import Run, episode_folder, episode_result
from pos_bench.analysis.stats import wilson

DIMENSIONS = {"epistemic": "knowledge", "achievement": "action"}
"""Gap dimension as the paper's Figure 3 names it: an epistemic gap is missing knowledge, an achievement gap
an action still to take."""
PATTERNS = ("static", "cycle", "drift", "generic")


def health_history(run: Run, task_id: str, trial: int = 0) -> list[Mapping[str, Any]]:
    full = episode_result(run.folder, {"task_id": task_id, "trial": trial})
    report = full.get("report") or {}
    if isinstance(report.get("belief_health_history"), list):
        return report["belief_health_history"]
    views = [
        events.PosMemory.of(e.record)
        for e in events.read(episode_folder(run.folder, task_id, trial) / "events.jsonl", (events.Memory,))
    ]
    return [v.health for v in views if v is not None and isinstance(v.health, Mapping)]


def onsets(history: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(pattern, dimension) at the start of each trapped stretch."""
    found, before = [], False
    for h in history:
        trapped = bool(h.get("trapped"))
        if trapped and not before:
            found.append(
                (h.get("trapping_pattern") or "generic", DIMENSIONS.get(h.get("gap_dimension") or "", "none"))
            )
        before = trapped
    return found


def trapping(runs: Iterable[Run]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(incidence per run, onset counts per run × pattern × dimension)."""
    incidence, counts = [], []
    for run in runs:
        histories = {key: health_history(run, *key) for key in run.finished_episodes}
        if not any(histories.values()):
            continue
        trapped = [t for t, h in histories.items() if any(x.get("trapped") for x in h)]
        w = wilson(len(trapped), len(histories))
        incidence.append(
            {
                "run": run.name,
                "flags": ", ".join(run.flags) or "–",
                "n": len(histories),
                "trapped": len(trapped),
                "incidence %": 100 * len(trapped) / len(histories),
                "low %": 100 * w.low,
                "high %": 100 * w.high,
            }
        )
        for history in histories.values():
            for pattern, dimension in onsets(history):
                counts.append({"run": run.name, "pattern": pattern, "dimension": dimension})
    frame = pd.DataFrame(counts, columns=["run", "pattern", "dimension"])
    distribution = frame.groupby(["run", "pattern", "dimension"]).size().rename("onsets").reset_index()
    return pd.DataFrame(incidence), distribution
