"""results.jsonl → summary.json and the printed table; Peak and Dependency of an episode's policy context.

Errored episodes count as failures in the success rate and are reported separately (SPEC-BENCH §1.2), except
the episodes the model never got to act in (`unplayed`: the server refused, or overflowed on, the first policy
request): they measure the serving stack, not the method, so they are counted apart (`refused`, `overflow`) and
kept out of every rate; a run with no played episode has no success rate.
Roles whose name starts with `benchmark_` (ClinDiag's provider and judge) are benchmark costs and are
kept out of the method's token totals (SPEC-POS §15).

Peak is the largest policy input (system prompt included) of the episode. Dependency is ACON's measure of how
much generated text rests on how much context, Σ_t (n_in,t + 2·n_out,t)·n_out,t / 2 over the policy calls t
(retries and repairs included), reported in millions (SPEC-BASE §2.5).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_bench.redact import NO_SECRETS, Redactor, escaped
from pos_bench.transcript import POLICY_ROLE, find_episode, write_result
from pos_bench.types import EpisodeResult, Ledger, Usage, to_jsonable

BENCHMARK_ROLE_PREFIX = "benchmark_"


@dataclass(frozen=True)
class ContextLoad:
    peak_input_tokens: int = 0
    """Largest input of one policy call."""
    dependency_m: float = 0.0
    """Σ_t (n_in,t + 2·n_out,t)·n_out,t / 2, divided by 10⁶."""


def context_load(calls: Iterable[tuple[str, Usage]]) -> ContextLoad:
    """Peak and Dependency of the policy calls among `calls` (role, usage of one call)."""
    policy = [u for role, u in calls if role == POLICY_ROLE]
    if not policy:
        return ContextLoad()
    dependency = sum((u.input_tokens + 2 * u.output_tokens) * u.output_tokens / 2 for u in policy)
    return ContextLoad(max(u.input_tokens for u in policy), dependency / 1e6)


EXTRAS_NOTE = (
    "extras are means over the episodes each one applies to, an errored episode counting as 0 (the same "
    "denominator as success_rate)"
)


@dataclass(frozen=True)
class ErrorCause:
    cause: str
    """The error's type and first line."""
    count: int
    example: str
    """One task that failed this way (its transcript is `episodes/<task>/events.jsonl`)."""


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
    error_causes: tuple[ErrorCause, ...] = ()
    """The errors' causes, most common first."""
    served: tuple[str, ...] = ()
    """Every model revision the servers reported over the run; more than one means the endpoint's weights
    changed during it (the configured `model.revision` is what the cache keys on, since a server says
    which revision answered only after it has)."""
    notes: tuple[str, ...] = (EXTRAS_NOTE,)
    refused: int = 0
    """Episodes the model never got to act in because the server refused its request (out of the rates)."""
    overflow: int = 0
    """Episodes the model never got to act in because the first prompt exceeded its context (out of the rates)."""
    ledger: Ledger = field(default_factory=Ledger)
    """The policy turns of every episode by outcome (valid, parse failure, refused, overflow, timeout, tool
    error)."""


def error_causes(results: Sequence[EpisodeResult]) -> tuple[ErrorCause, ...]:
    causes: dict[str, list[str]] = {}
    for r in results:
        if r.status == "error" and r.unplayed is None:
            first = (r.error or "unknown error").strip().splitlines()
            causes.setdefault((first[0] if first else "unknown error")[:300], []).append(r.task_id)
    ranked = sorted(causes.items(), key=lambda item: (-len(item[1]), item[0]))
    return tuple(ErrorCause(cause, len(tasks), tasks[0]) for cause, tasks in ranked)


def extra_means(results: Sequence[EpisodeResult]) -> dict[str, float]:
    """Mean of each numeric extra. An extra reported only by episodes sharing a task-meta value (ClinDiag's
    `accuracy_rare` on the rare subset) applies to the errored episodes with that value; each such errored
    episode counts as 0, so every extra has the denominator `success_rate` has."""
    done = [r for r in results if r.status != "error"]
    errored = [r for r in results if r.status == "error"]
    keys = sorted({k for r in done for k, v in r.extras.items() if isinstance(v, (int, float, bool))})
    means = {}
    for key in keys:
        reporters = [r for r in done if isinstance(r.extras.get(key), (int, float, bool))]
        others = [r for r in done if r not in reporters]
        shared = dict(reporters[0].task_meta.items())
        for r in reporters[1:]:
            shared = {m: v for m, v in shared.items() if r.task_meta.get(m) == v}
        scope = {m: v for m, v in shared.items() if all(o.task_meta.get(m) != v for o in others)}
        misses = [e for e in errored if all(e.task_meta.get(m) == v for m, v in scope.items())]
        values = [float(r.extras[key]) for r in reporters] + [0.0] * len(misses)
        means[key] = _mean(values)
    return means


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


@dataclass(frozen=True)
class Price:
    """What a model charges, per million tokens (in whatever currency the table uses)."""

    input_per_mtok: float
    output_per_mtok: float
    cached_input_per_mtok: float | None = None
    """Input tokens read from the provider's prompt cache; None prices them as ordinary input."""
    cache_write_per_mtok: float | None = None
    """Input tokens written to the provider's prompt cache (Anthropic); None prices them as ordinary input."""

    def __post_init__(self) -> None:
        rates = (
            self.input_per_mtok,
            self.output_per_mtok,
            self.cached_input_per_mtok,
            self.cache_write_per_mtok,
        )
        if any(rate is not None and rate < 0 for rate in rates):
            raise ValueError(f"prices must be ≥ 0, got {self}")

    def cost(self, u: Usage) -> float:
        """What `u` costs: cached reads and cache writes at their own rates where the table gives them."""
        cached = self.input_per_mtok if self.cached_input_per_mtok is None else self.cached_input_per_mtok
        written = self.input_per_mtok if self.cache_write_per_mtok is None else self.cache_write_per_mtok
        plain = u.input_tokens - u.cached_input_tokens - u.cache_write_tokens
        return (
            plain * self.input_per_mtok
            + u.cached_input_tokens * cached
            + u.cache_write_tokens * written
            + u.output_tokens * self.output_per_mtok
        ) / 1e6


def role_cost(usage: Mapping[str, Usage], prices: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Cost per role: `prices` maps a role (or `default`, for every role not listed) to a `Price`."""
    table = {role: Price(**price) for role, price in prices.items()}
    cost = {}
    for role, u in usage.items():
        price = table.get(role, table.get("default"))
        if price is not None:
            cost[role] = price.cost(u)
    return cost


def summarize(
    results: Iterable[EpisodeResult],
    labels: Mapping[str, Any],
    prices: Mapping[str, Mapping[str, float]] | None = None,
) -> Summary:
    everything = list(results)
    results = [r for r in everything if r.unplayed is None]
    usage: dict[str, Usage] = {}
    for r in everything:
        for role, u in r.usage.items():
            usage[role] = usage.get(role, Usage()) + u
    method_tokens = [
        sum(
            u.input_tokens + u.output_tokens
            for role, u in r.usage.items()
            if not role.startswith(BENCHMARK_ROLE_PREFIX)
        )
        for r in everything
    ]
    extras = extra_means(results)
    played = any(r.status == "done" for r in results)
    if played and "model" in labels and not any(r.usage for r in everything):
        labels = {**labels, "model": "none"}  # no episode called a model (e.g. the expert policy)
    by_group = success_by_group(results)
    successes = sum(r.success for r in results)
    ledger = Ledger()
    for r in everything:
        ledger = ledger + r.ledger
    return Summary(
        labels=dict(labels),
        episodes=len(everything),
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
        error_causes=error_causes(everything),
        served=tuple(sorted({s for r in everything for s in r.served})),
        refused=sum(r.unplayed == "refused" for r in everything),
        overflow=sum(r.unplayed == "overflow" for r in everything),
        ledger=ledger,
    )


def success_by_group(results: Sequence[EpisodeResult]) -> dict[str, dict[str, float]]:
    """Success rate per value of each task-meta key (episodes without the key, or with None, left out), the
    values in sorted order. Plain Python: the driver summarises every run of a sweep, and pandas would add
    ~90 MB to it after the first run (issue 44)."""
    groups: dict[str, dict[Any, list[bool]]] = {}
    for r in results:
        for key, value in r.task_meta.items():
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                groups.setdefault(key, {}).setdefault(value, []).append(r.success)
    return {
        key: {str(v): sum(hits) / len(hits) for v, hits in sorted(values.items(), key=_order)}
        for key, values in groups.items()
    }


def _order(item: tuple[Any, Any]) -> tuple[int, Any]:
    value = item[0]
    return (0, value) if isinstance(value, int | float) and not isinstance(value, bool) else (1, str(value))


def write_summary(path: Path, summary: Summary, redactor: Redactor = NO_SECRETS) -> None:
    write_result(path, summary, redactor)


def format_notes(summary: Summary) -> str:
    """The notes a reader of the table needs: how the extras are averaged (when the run has extras), and
    the served revisions when the endpoint reported more than one."""
    notes = [f"note: {note}" for note in summary.notes] if summary.extras else []
    if len(summary.served) > 1:
        notes.append(
            f"note: the servers reported {len(summary.served)} model revisions during this run "
            f"({', '.join(summary.served)}); its episodes were not all answered by the same weights."
        )
    return "\n".join(notes)


def format_errors(summary: Summary, run_dir: Path, *, top: int = 3) -> str:
    """The errors' most common causes, with one example transcript; empty when nothing errored."""
    lines = []
    if summary.refused or summary.overflow:
        lines.append(
            f"{summary.refused} episodes refused and {summary.overflow} overflowed: the model never got to act "
            "(a serving problem, kept out of the success rate)"
        )
    if not summary.errors:
        return "\n".join(lines)
    lines.append(f"{summary.errors} of {summary.episodes} episodes errored; most common causes:")
    for cause in summary.error_causes[:top]:
        lines.append(f"  {cause.count}x {escaped(cause.cause)}")
    first = summary.error_causes[0]
    lines.append(f"  example transcript: {find_episode(run_dir, first.example) / 'events.jsonl'}")
    return "\n".join(lines)


def read_summary(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def format_table(summaries: Iterable[Summary | Mapping[str, Any]]) -> str:
    """One row per run: labels, success rate, episodes, errors, steps, tokens."""
    rows = []
    for s in summaries:
        data = to_jsonable(s)
        row = {**data["labels"]}
        unplayed = data.get("refused", 0) + data.get("overflow", 0)
        played = data["episodes"] - unplayed
        row.update(
            success=f"{100 * data['success_rate']:.1f}%" if played else "n/a",
            episodes=data["episodes"],
            errors=data["errors"],
            refused=data.get("refused", 0),
            overflow=data.get("overflow", 0),
            steps=round(data["mean_steps"], 1),
            turns=round(data["mean_turns"], 1),
            tokens_per_ep=round(data["method_tokens_per_episode"]),
            peak=round(data.get("mean_peak_input_tokens", 0.0)),
            dependency_m=round(data.get("mean_dependency_m", 0.0), 3),
        )
        ledger = data.get("ledger") or {}
        row.update(parse_fail=ledger.get("parse_failure", 0), tool_err=ledger.get("tool_error", 0))
        if data.get("cost"):
            method_cost = sum(v for k, v in data["cost"].items() if not k.startswith(BENCHMARK_ROLE_PREFIX))
            row["cost_per_ep"] = round(method_cost / max(data["episodes"], 1), 4)
        row.update({k: round(v, 3) for k, v in data["extras"].items()})
        rows.append(row)
    return plain_table(rows) if rows else "(no runs)"


def plain_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows as right-aligned text columns (a cell a row lacks: NaN), as pandas prints them without the index;
    plain Python, so the sweep's driver never imports pandas (issue 44)."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[str(row.get(c, "NaN")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(line[i]) for line in cells)) for i, c in enumerate(columns)]
    lines = [[c.rjust(w) for c, w in zip(columns, widths, strict=True)]]
    lines += [[v.rjust(w) for v, w in zip(line, widths, strict=True)] for line in cells]
    return "\n".join(" ".join(line) for line in lines)
