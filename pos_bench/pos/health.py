"""Belief health and diagnosis (SPEC-POS §10, §11): pure functions over the last K verified transitions.

H = 1 − max(P_E, P_A) · max(S, R). Low H means the agent acts without moving its belief toward the goal
(Belief Trapping); the diagnosis then names the blocked dimension and the Static / Cycle / Drift pattern.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from pos_bench.pos.gaps import norm, tokens

Pattern = Literal["static", "cycle", "drift"]
KINDS = ("entities", "states", "relations")


@dataclass(frozen=True)
class TrappingConfig:
    enabled: bool = True
    """Compute health and diagnosis at all (off in `pos_no_trapping`)."""
    window_size: int = 8
    """K: verified transitions looked at."""
    max_cycle_length: int = 4
    """L: the longest recurrence lag tried; 1 ≤ L < K."""
    recurrence_epsilon: float = 0.15
    """ε_W: two worlds at distance ≤ this count as the same."""
    health_threshold: float = 0.25
    """θ_H: trapped when H ≤ this."""
    cycle_threshold: float = 0.75
    """θ_R: a Cycle needs R ≥ this and a period > 1."""

    def __post_init__(self) -> None:
        if not 1 <= self.max_cycle_length < self.window_size:
            raise ValueError(
                f"trapping needs 1 ≤ max_cycle_length < window_size, got L={self.max_cycle_length}, K={self.window_size}"
            )
        for name in ("recurrence_epsilon", "health_threshold", "cycle_threshold"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"trapping.{name} must be in [0, 1], got {getattr(self, name)}")


@dataclass(frozen=True)
class Snapshot:
    """A committed belief as health sees it: the world (`World.to_dict()`), stable gap ids and the Active Gap."""

    step: int
    world: Mapping[str, Mapping[str, Mapping[str, Any]]]
    epistemic_ids: tuple[str, ...] = ()
    achievement_ids: tuple[str, ...] = ()
    frontier: Mapping[str, str] | None = None
    memo: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """Optional per-episode cache of canonical strings and tokens shared by successive snapshots, so an
    unchanged record is normalised once per episode rather than once per step."""

    @cached_property
    def index(self) -> _WorldIndex:
        """Canonical strings and match tokens, computed once per snapshot (a snapshot never changes)."""
        return _WorldIndex(self.world, {} if self.memo is None else self.memo)


class _WorldIndex:
    def __init__(self, world: Mapping[str, Mapping[str, Mapping[str, Any]]], memo: dict[str, Any]):
        def canonical(record: Mapping[str, Any]) -> str:
            key = repr(sorted(record.items()))  # cheap cache key; the value is the spec's normalised JSON
            if key not in memo:
                memo[key] = norm(json.dumps(dict(record), sort_keys=True, ensure_ascii=False))
            return memo[key]

        def toks(text: str) -> frozenset[str]:
            key = "\0" + text  # a JSON object text never starts with NUL, so keys cannot collide
            if key not in memo:
                memo[key] = tokens(text)
            return memo[key]

        self.canonical = {kind: {i: canonical(r) for i, r in world[kind].items()} for kind in KINDS}
        self.entity_tokens = {
            i: toks(f"{e['name']} {e['entity_type']}") for i, e in world["entities"].items()
        }
        self.states = {i: (s["entity_id"], toks(s["description"])) for i, s in world["states"].items()}
        self.relations = {
            i: (r["source_id"], r["target_id"], toks(r["description"])) for i, r in world["relations"].items()
        }

        self.projections: dict[frozenset[str] | None, dict[str, frozenset[str]]] = {}
        """Projections already computed for a focus (the Active Gap rarely changes between steps)."""

    def full(self) -> dict[str, frozenset[str]]:
        return {kind: frozenset(self.canonical[kind].values()) for kind in KINDS}


@dataclass
class HealthTransition:
    """One belief update as health sees it; `progress` is filled in by the Sentinel's progress lane."""

    step: int
    frontier_episode: int
    frontier: Mapping[str, str] | None
    """The Active Gap pointer before the step."""
    action: Any
    observation: str
    done: bool
    success: bool
    progress: int | None = None
    """1 progress, 0 none, None unverified (excluded from the window)."""
    scoring_method: str = ""
    score: float | None = None
    affected_record_ids: list[str] = field(default_factory=list)
    reason: str = ""

    def brief(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "action": self.action,
            "progress": self.progress,
            "score": self.score,
            "reason": self.reason,
        }


def window_of(
    transitions: Sequence[HealthTransition], snapshots: Mapping[int, Snapshot], size: int
) -> list[tuple[int, Snapshot]]:
    """The last `size` verified transitions paired with their snapshots; shorter (not ready) if any is missing."""
    verified = [t for t in transitions if t.progress is not None][-size:]
    if len(verified) < size or any(t.step not in snapshots for t in verified):
        return []
    return [(t.progress, snapshots[t.step]) for t in verified]  # type: ignore[misc]


def focus_tokens(gap: Mapping[str, str] | None) -> frozenset[str] | None:
    """Tokens of an expanded gap's target and reason (§10.4 step 2); None when there is no gap."""
    return None if gap is None else tokens(gap["target"]) | tokens(gap["reason"])


def project(snapshot: Snapshot, focus: frozenset[str] | None) -> dict[str, frozenset[str]]:
    """Canonical records of the gap-relevant part of a world (§10.4); the whole world when focus is None."""
    idx = snapshot.index
    if focus not in idx.projections:
        idx.projections[focus] = idx.full() if focus is None else _project(idx, focus)
    return idx.projections[focus]


def _project(idx: _WorldIndex, focus: frozenset[str]) -> dict[str, frozenset[str]]:
    entities = {i for i, toks in idx.entity_tokens.items() if toks & focus}
    states = {i for i, (owner, toks) in idx.states.items() if owner in entities or toks & focus}
    entities |= {idx.states[s][0] for s in states}
    nodes = entities | states
    relations = {
        i for i, (src, dst, toks) in idx.relations.items() if src in nodes or dst in nodes or toks & focus
    }
    for rid in relations:
        for end in idx.relations[rid][:2]:
            (states if end in idx.states else entities).add(end)
    chosen = {"entities": entities, "states": states, "relations": relations}
    return {
        kind: frozenset(idx.canonical[kind][i] for i in chosen[kind] if i in idx.canonical[kind])
        for kind in KINDS
    }


def distance(left: Mapping[str, frozenset[str]], right: Mapping[str, frozenset[str]]) -> float:
    """d_W: mean over record kinds of the Jaccard distance of canonical records (0 for two empty sets)."""
    total = 0.0
    for kind in KINDS:
        union = left[kind] | right[kind]
        if union:
            total += 1.0 - len(left[kind] & right[kind]) / len(union)
    return total / 3.0


def persistence(id_sets: Sequence[Sequence[str]]) -> tuple[float, list[str]]:
    """P_X = |gaps present in every snapshot| / |gaps of the first snapshot|, and the persistent ids."""
    first = set(id_sets[0]) if id_sets else set()
    if not first:
        return 0.0, []
    kept = first.intersection(*map(set, id_sets[1:]))
    return len(kept) / len(first), sorted(kept)


def stagnation(labels: Sequence[int]) -> float:
    """S = 1 − mean progress label."""
    return 1.0 - sum(labels) / len(labels)


def recurrence(
    worlds: Sequence[Mapping[str, frozenset[str]]], *, max_lag: int, epsilon: float
) -> tuple[float, int | None]:
    """R = max over lags ℓ ≤ L of the share of pairs ℓ apart within ε; the period is the smallest best lag."""
    if max_lag < 1 or not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"recurrence needs max_lag ≥ 1 and ε in [0, 1], got {max_lag}, {epsilon}")
    k = len(worlds)
    best, period = 0.0, None
    for lag in range(1, min(max_lag, k - 1) + 1):
        hits = sum(distance(worlds[i], worlds[i - lag]) <= epsilon for i in range(lag, k))
        rate = hits / (k - lag)
        if rate > best:
            best, period = rate, lag
    return best, period


def health(persistence: float, stagnation: float, recurrence: float) -> float:
    """H in [0, 1]; `persistence` is the larger of the epistemic and achievement persistences."""
    return 1.0 - persistence * max(stagnation, recurrence)


def blocked_dimension(p_e: float, p_a: float, last: Snapshot) -> Literal["epistemic", "achievement"] | None:
    """The gap type the agent is stuck on: among types with open gaps now, the more persistent; ties → epistemic."""
    candidates = [
        (p, t)
        for p, t, ids in ((p_e, "epistemic", last.epistemic_ids), (p_a, "achievement", last.achievement_ids))
        if ids
    ]
    if not candidates:
        return None
    return max(candidates, key=lambda c: c[0])[1]  # max keeps the first on ties: epistemic


@dataclass(frozen=True)
class BeliefHealth:
    window_ready: bool = False
    persistence_e: float = 0.0
    persistence_a: float = 0.0
    stagnation: float = 0.0
    recurrence: float = 0.0
    recurrence_period: int | None = None
    health_score: float = 1.0
    health_threshold: float = 0.25
    gap_dimension: Literal["epistemic", "achievement"] | None = None
    trapping_pattern: Pattern | None = None
    persistent_epistemic_gaps: tuple[str, ...] = ()
    persistent_achievement_gaps: tuple[str, ...] = ()
    trapped: bool = False
    """window_ready ∧ H ≤ θ_H."""


@dataclass(frozen=True)
class Assessment:
    """Health plus the window and projections it was computed from (reused for cycle evidence)."""

    health: BeliefHealth
    window: tuple[tuple[int, Snapshot], ...] = ()
    """(progress label, snapshot) pairs, oldest first."""
    projections: tuple[Mapping[str, frozenset[str]], ...] = field(default=())


def assess(
    window: Sequence[tuple[int, Snapshot]], active_gap: Mapping[str, str] | None, config: TrappingConfig
) -> Assessment:
    """Health and diagnosis over a window of (label, snapshot) pairs; not ready when shorter than K."""
    if len(window) < config.window_size:
        return Assessment(BeliefHealth(health_threshold=config.health_threshold))
    window = tuple(window[-config.window_size :])
    labels = [u for u, _ in window]
    snaps = [s for _, s in window]
    p_e, kept_e = persistence([s.epistemic_ids for s in snaps])
    p_a, kept_a = persistence([s.achievement_ids for s in snaps])
    s = stagnation(labels)
    focus = focus_tokens(active_gap)
    projections = tuple(project(snap, focus) for snap in snaps)
    r, period = recurrence(projections, max_lag=config.max_cycle_length, epsilon=config.recurrence_epsilon)
    h = health(max(p_e, p_a), s, r)
    trapped = h <= config.health_threshold
    dimension = pattern = None
    if trapped:
        dimension = blocked_dimension(p_e, p_a, snaps[-1])
        pattern = diagnose(snaps, projections, r, period, config)
    result = BeliefHealth(
        window_ready=True,
        persistence_e=p_e,
        persistence_a=p_a,
        stagnation=s,
        recurrence=r,
        recurrence_period=period,
        health_score=h,
        health_threshold=config.health_threshold,
        gap_dimension=dimension,
        trapping_pattern=pattern,
        persistent_epistemic_gaps=tuple(kept_e),
        persistent_achievement_gaps=tuple(kept_a),
        trapped=trapped,
    )
    return Assessment(result, window, projections)


def diagnose(
    snaps: Sequence[Snapshot],
    projections: Sequence[Mapping[str, frozenset[str]]],
    r: float,
    period: int | None,
    config: TrappingConfig,
) -> Pattern | None:
    """Static, then Cycle, then Drift; None means the generic recovery (§11.2)."""
    eps = config.recurrence_epsilon
    if distance(snaps[-1].index.full(), snaps[-2].index.full()) <= eps:
        return "static"
    if r >= config.cycle_threshold and period is not None and period > 1:
        return "cycle"
    if distance(projections[-1], projections[-2]) <= eps:
        return "drift"
    return None
