"""Belief accuracy per run (issue 28): every episode's recorded truth and claims (`truth` / `claims` events)
scored by `pos_bench.truth`, then one row per method × benchmark with n and 95% intervals, and the accuracy
per step for the figure.

Precision is pooled over the run's scored facts with a cluster bootstrap over episodes (an episode's facts
are not independent); recall is the mean of the episodes' recalls, bootstrapped over episodes; the Sentinel's
audit (PoS: `belief_update_history` of each episode's report) gets Wilson intervals over updates. A run whose
episodes recorded no truth has no row; a method that keeps no state has a row that says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pos_bench import events
from pos_bench.analysis.runs import Run, episode_folder, episode_result
from pos_bench.analysis.stats import cluster_bootstrap, wilson
from pos_bench.pos.claims import at_diagnoses, audited_updates
from pos_bench.truth import (
    AuditAccuracy,
    EpisodeAccuracy,
    Observed,
    StepAccuracy,
    audit_accuracy,
    episode_accuracy,
)


@dataclass(frozen=True)
class EpisodeBelief:
    """One episode's scores; `accuracy` is None when the method keeps no state."""

    task_id: str
    accuracy: EpisodeAccuracy | None
    audit: AuditAccuracy | None
    """The Sentinel's decisions against the truth, for episodes whose report holds audited updates."""
    trapped: tuple[StepAccuracy, ...] = ()
    """The measures at each step PoS diagnosed as trapped (its `belief_health_history`)."""


def truth_and_claims(path: Path) -> list[events.Event]:
    """An episode's `truth` and `claims` events: only those lines are decoded (a transcript can be tens of MB of
    calls). A method that keeps no state says so at the reset: once that and a truth are read, nothing more of
    the episode is scored, so the rest of the file is left unread."""
    stream: list[events.Event] = []
    stateless = truth = False
    for event in events.read(path, (events.Truth, events.Claims)):
        stream.append(event)
        stateless = stateless or (isinstance(event, events.Claims) and not event.keeps_state)
        truth = truth or isinstance(event, events.Truth)
        if stateless and truth:
            break
    return stream


def episode_belief(run: Run, task_id: str, trial: int = 0) -> EpisodeBelief | None:
    """The scores of one episode (a task's trial), or None when it recorded no truth."""
    stream = truth_and_claims(episode_folder(run.folder, task_id, trial) / "events.jsonl")
    truths = events.truths(stream)
    if not truths:
        return None
    held = events.claims(stream)
    if held is None:
        return EpisodeBelief(task_id, None, None)
    steps = [Observed(s, truths[s], held[s]) for s in sorted(held) if s in truths]
    report = episode_result(run.folder, {"task_id": task_id, "trial": trial}).get("report") or {}
    history, health = report.get("belief_update_history"), report.get("belief_health_history")
    audit = audit_accuracy(audited_updates(history, truths)) if isinstance(history, list) else None
    accuracy = episode_accuracy(steps)
    trapped = tuple(s for _, s in at_diagnoses(health, accuracy)) if isinstance(health, list) else ()
    return EpisodeBelief(task_id, accuracy, audit, trapped)


def run_beliefs(run: Run) -> list[EpisodeBelief]:
    found = (episode_belief(run, task, trial) for task, trial in run.finished_episodes)
    return [b for b in found if b is not None]


def _interval(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


def _precision(scored: Sequence[EpisodeBelief]) -> dict[str, Any]:
    outcomes, clusters = [], []
    for b in scored:
        assert b.accuracy is not None
        true, false = sum(s.true for s in b.accuracy.steps), sum(s.false for s in b.accuracy.steps)
        outcomes += [1.0] * true + [0.0] * false
        clusters += [b.task_id] * (true + false)
    if not outcomes:
        return {"facts scored": 0, "precision": float("nan"), "precision 95%": "–"}
    c = cluster_bootstrap(outcomes, clusters)
    return {
        "facts scored": len(outcomes),
        "precision": sum(outcomes) / len(outcomes),
        "precision 95%": _interval(c.low, c.high),
    }


def _recall(scored: Sequence[EpisodeBelief]) -> dict[str, Any]:
    recalls = [b.accuracy.recall for b in scored if b.accuracy and b.accuracy.recall is not None]
    if not recalls:
        return {"recall n": 0, "recall": float("nan"), "recall 95%": "–"}
    c = cluster_bootstrap(recalls, list(range(len(recalls))))
    return {
        "recall n": len(recalls),
        "recall": sum(recalls) / len(recalls),
        "recall 95%": _interval(c.low, c.high),
    }


def _audit(beliefs: Sequence[EpisodeBelief]) -> dict[str, Any]:
    audits = [b.audit for b in beliefs if b.audit is not None]
    if not audits:
        return {}
    false = sum(a.false_updates for a in audits)
    flagged = sum(a.flagged for a in audits)
    hits = sum(a.flagged_false for a in audits)
    p, r = wilson(hits, flagged), wilson(hits, false)
    return {
        "updates": sum(len(a.updates) for a in audits),
        "false updates": false,
        "flagged": flagged,
        "false committed": sum(a.committed_false for a in audits),
        "audit precision": hits / flagged if flagged else float("nan"),
        "audit precision 95%": _interval(p.low, p.high) if flagged else "–",
        "audit recall": hits / false if false else float("nan"),
        "audit recall 95%": _interval(r.low, r.high) if false else "–",
    }


def _at_trapping(beliefs: Sequence[EpisodeBelief]) -> dict[str, Any]:
    """Precision pooled over the steps diagnosed as trapped (PoS with trapping on)."""
    steps = [s for b in beliefs for s in b.trapped]
    if not steps:
        return {}
    true, scored = sum(s.true for s in steps), sum(s.true + s.false for s in steps)
    return {"trapped steps": len(steps), "precision when trapped": true / scored if scored else float("nan")}


def belief_row(run: Run, beliefs: Sequence[EpisodeBelief]) -> dict[str, Any]:
    scored = [b for b in beliefs if b.accuracy is not None]
    row: dict[str, Any] = {
        "benchmark": run.bench,
        "method": run.method,
        "model": run.model,
        "flags": ", ".join(run.flags) or "–",
        "n": len(scored),
    }
    if not scored:
        return {**row, "state": "keeps no state"}
    persistence = [p for b in scored if b.accuracy for p in b.accuracy.stale_persistence]
    return {
        **row,
        "state": "claims",
        **_precision(scored),
        **_recall(scored),
        "stale / ep": sum(b.accuracy.stale_claims for b in scored if b.accuracy) / len(scored),
        "stale steps": sum(persistence) / len(persistence) if persistence else float("nan"),
        "invented / ep": sum(len(b.accuracy.invented) for b in scored if b.accuracy) / len(scored),
        **_audit(scored),
        **_at_trapping(scored),
    }


def belief_accuracy(runs: Iterable[Run]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the table: one row per run that recorded truth; the accuracy per step: run, step, scored facts,
    precision pooled over the run's episodes at that step)."""
    rows, per_step = [], []
    for run in runs:
        beliefs = run_beliefs(run)
        if not beliefs:
            continue
        rows.append(belief_row(run, beliefs))
        per_step += step_rows(run, beliefs)
    return pd.DataFrame(rows), pd.DataFrame(per_step)


def step_rows(run: Run, beliefs: Sequence[EpisodeBelief]) -> list[Mapping[str, Any]]:
    totals: dict[int, list[int]] = {}
    for b in beliefs:
        for s in b.accuracy.steps if b.accuracy else ():
            counts = totals.setdefault(s.step, [0, 0])
            counts[0] += s.true
            counts[1] += s.true + s.false
    return [
        {"run": run.name, "step": step, "scored": scored, "precision": true / scored}
        for step, (true, scored) in sorted(totals.items())
        if scored
    ]
