"""results.jsonl → summary.json and the printed table.

Errored episodes count as failures in the success rate and are reported separately (SPEC-BENCH §1.2).
Roles whose name starts with `benchmark_` (ClinDiag's provider and judge) are benchmark costs and are
kept out of the method's token totals (SPEC-POS §15).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from pos_bench.types import EpisodeResult, Usage, to_jsonable

BENCHMARK_ROLE_PREFIX = "benchmark_"


@dataclass(frozen=True)
class Summary:
    labels: Mapping[str, Any]
    episodes: int
    errors: int
    successes: int
    success_rate: float
    mean_score: float
    mean_steps: float
    mean_turns: float
    method_tokens_per_episode: float
    usage: Mapping[str, Usage] = field(default_factory=dict)
    """Total usage per role over the run."""
    extras: Mapping[str, float] = field(default_factory=dict)
    """Means of the benchmark's per-episode score extras (e.g. differential hit rate)."""
    by_group: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Success rate per value of each task-meta key (e.g. task type, subset)."""
    cost: Mapping[str, float] = field(default_factory=dict)
    """Money spent per role over the run, from the optional `prices` table (empty without one)."""
    mean_peak_input_tokens: float = 0.0
    """Mean per-episode Peak (largest policy input, SPEC-BASE §2.5)."""
    mean_dependency_m: float = 0.0
    """Mean per-episode Dependency of the policy calls, in millions (SPEC-BASE §2.5)."""


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


@dataclass(frozen=True)
class Price:
    """What a model charges, per million tokens (in whatever currency the table uses)."""

    input_per_mtok: float
    output_per_mtok: float

    def __post_init__(self) -> None:
        if self.input_per_mtok < 0 or self.output_per_mtok < 0:
            raise ValueError(f"prices must be ≥ 0, got {self}")


def role_cost(usage: Mapping[str, Usage], prices: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Cost per role: `prices` maps a role (or `default`, for every role not listed) to a `Price`."""
    table = {role: Price(**price) for role, price in prices.items()}
    cost = {}
    for role, u in usage.items():
        price = table.get(role, table.get("default"))
        if price is not None:
            cost[role] = (
                u.input_tokens * price.input_per_mtok + u.output_tokens * price.output_per_mtok
            ) / 1e6
    return cost


def summarize(
    results: Iterable[EpisodeResult],
    labels: Mapping[str, Any],
    prices: Mapping[str, Mapping[str, float]] | None = None,
) -> Summary:
    results = list(results)
    usage: dict[str, Usage] = {}
    for r in results:
        for role, u in r.usage.items():
            usage[role] = usage.get(role, Usage()) + u
    method_tokens = [
        sum(
            u.input_tokens + u.output_tokens
            for role, u in r.usage.items()
            if not role.startswith(BENCHMARK_ROLE_PREFIX)
        )
        for r in results
    ]
    extra_keys = sorted(
        {k for r in results for k, v in r.extras.items() if isinstance(v, (int, float, bool))}
    )
    extras = {
        k: _mean([float(r.extras[k]) for r in results if isinstance(r.extras.get(k), (int, float, bool))])
        for k in extra_keys
    }
    by_group: dict[str, dict[str, float]] = {}
    frame = pd.DataFrame([{**r.task_meta, "_success": r.success} for r in results])
    for key in [c for c in frame.columns if c != "_success"]:
        by_group[key] = {str(k): float(v) for k, v in frame.groupby(key)["_success"].mean().items()}
    successes = sum(r.success for r in results)
    return Summary(
        labels=dict(labels),
        episodes=len(results),
        errors=sum(r.status == "error" for r in results),
        successes=successes,
        success_rate=successes / len(results) if results else 0.0,
        mean_score=_mean([r.score for r in results]),
        mean_steps=_mean([r.steps for r in results]),
        mean_turns=_mean([r.turns for r in results]),
        method_tokens_per_episode=_mean(method_tokens),
        usage=usage,
        extras=extras,
        by_group=by_group,
        cost=role_cost(usage, prices or {}),
        mean_peak_input_tokens=_mean([r.peak_input_tokens for r in results]),
        mean_dependency_m=_mean([r.dependency_m for r in results]),
    )


def write_summary(path: Path, summary: Summary) -> None:
    path.write_text(json.dumps(to_jsonable(summary), indent=1, ensure_ascii=False), encoding="utf-8")


def read_summary(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def format_table(summaries: Iterable[Summary | Mapping[str, Any]]) -> str:
    """One row per run: labels, success rate, episodes, errors, steps, tokens."""
    rows = []
    for s in summaries:
        data = to_jsonable(s)
        row = {**data["labels"]}
        row.update(
            success=f"{100 * data['success_rate']:.1f}%",
            episodes=data["episodes"],
            errors=data["errors"],
            steps=round(data["mean_steps"], 1),
            turns=round(data["mean_turns"], 1),
            tokens_per_ep=round(data["method_tokens_per_episode"]),
            peak=round(data.get("mean_peak_input_tokens", 0.0)),
            dependency_m=round(data.get("mean_dependency_m", 0.0), 3),
        )
        if data.get("cost"):
            method_cost = sum(v for k, v in data["cost"].items() if not k.startswith(BENCHMARK_ROLE_PREFIX))
            row["cost_per_ep"] = round(method_cost / max(data["episodes"], 1), 4)
        row.update({k: round(v, 3) for k, v in data["extras"].items()})
        rows.append(row)
    return pd.DataFrame(rows).to_string(index=False) if rows else "(no runs)"
