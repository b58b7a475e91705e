"""The recovery constraint C_t shown to a trapped policy (SPEC-POS §12): target choice, composition from
templates (no LLM call) and the cycle evidence. Pure functions; the lifecycle is driven by `method.py`.

The constraint is soft: prompt text only, never an action filter, and it never replaces the Active Gap.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pos_bench.pos.gaps import Gap, GapPointer
from pos_bench.pos.health import Assessment, HealthTransition, Snapshot, distance

PATTERN_TEXT = {
    "static": "Your last action achieved nothing and your belief has not moved, so do not issue that same action again.",
    "cycle": (
        "You keep returning through the same loop of {period} steps. Do not take the step that closes this loop "
        "again; choose an admissible action that leads out of the repeating region."
    ),
    "drift": (
        "Your recent actions do not bear on the Active Gap. Stop taking such side actions and base your next "
        "choice on the Active Gap again."
    ),
    None: (
        "Step back and reconsider your strategy: choose an action, backed by what you have observed, that moves "
        "toward the Active Gap."
    ),
}

GAP_TEXT = {
    "epistemic": (
        "Seek fresh evidence that tells the open alternatives apart, so as to settle or shrink the epistemic "
        "recovery gap: {target}"
    ),
    "achievement": "Bring about a task-relevant change in the world that makes the achievement recovery gap smaller: {target}",
}


@dataclass(frozen=True)
class RecoveryConfig:
    enabled: bool = True
    """Start recovery directives when trapped (off in `pos_no_trapping`)."""
    mode: Literal["factorized", "generic"] = "factorized"
    """`factorized` = pattern part + gap part; `generic` = the generic text only, aimed at the Active Gap."""
    recent_low_progress_count: int = 4
    """Transitions with u = 0 listed in a directive."""

    def __post_init__(self) -> None:
        if self.mode not in ("factorized", "generic"):
            raise ValueError(f"recovery.mode must be 'factorized' or 'generic', got {self.mode!r}")
        if self.recent_low_progress_count < 1:
            raise ValueError(
                f"recovery.recent_low_progress_count must be ≥ 1, got {self.recent_low_progress_count}"
            )


@dataclass
class RecoveryDirective:
    recovery_frontier: dict[str, str]
    """The gap the constraint aims at ({gap_type, target})."""
    trigger_frontier: dict[str, str] | None
    """The Active Gap when recovery started."""
    gap_dimension: str | None
    trapping_pattern: str | None
    started_at_step: int
    applies_from_step: int
    instruction: str
    pattern_part: str
    gap_part: str
    low_progress_transitions: list[dict[str, Any]] = field(default_factory=list)
    recovery_action_steps: list[int] = field(default_factory=list)


def select_target(
    dimension: str,
    gaps: Sequence[Gap],
    ids: Sequence[str],
    persistent: Sequence[str],
    active_gap: GapPointer | None,
) -> Gap | None:
    """The gap of the blocked type to recover on (§12.1): persistent ones first, the Active Gap if among them.

    None when the blocked type has no gap; there is never a fallback to the other type."""
    candidates = list(gaps)
    preferred = [g for g, i in zip(gaps, ids) if i in set(persistent)]
    if preferred:
        candidates = preferred
    if not candidates:
        return None
    if active_gap is not None and active_gap.gap_type == dimension:
        for gap in candidates:
            if gap.target == active_gap.target:
                return gap
    return candidates[0]


def pattern_part(
    pattern: str | None, *, period: int | None, last_action: Any, loop: Sequence[Mapping[str, Any]]
) -> str:
    text = PATTERN_TEXT[pattern].format(period=period or 2)
    if pattern == "static" and last_action is not None:
        text += " Last action: " + json.dumps(last_action, ensure_ascii=False)
    if pattern == "cycle":
        text += " Loop steps: " + json.dumps(list(loop), ensure_ascii=False)
    return text


def gap_part(dimension: str, target: str) -> str:
    return GAP_TEXT[dimension].format(target=target)


def cycle_evidence(
    assessment: Assessment,
    period: int | None,
    actions: Mapping[int, Any],
    snapshots: Sequence[Snapshot],
    *,
    epsilon: float,
) -> list[dict[str, Any]]:
    """The transitions of the most recent repetition of a `period`-step loop in the window (§12.3)."""
    period = period or 2
    window, proj = assessment.window, assessment.projections
    for i in range(len(window) - 1, period - 1, -1):
        if distance(proj[i], proj[i - period]) <= epsilon:
            return [_loop_item(window[j], actions, snapshots) for j in range(i - period + 1, i + 1)]
    return []


def _loop_item(
    entry: tuple[int, Snapshot], actions: Mapping[int, Any], snapshots: Sequence[Snapshot]
) -> dict[str, Any]:
    label, after = entry
    earlier = [s for s in snapshots if s.step < after.step]
    before = max(earlier, key=lambda s: s.step).world if earlier else None
    return {
        "step": after.step,
        "action": actions.get(after.step),
        "progress": label,
        "world_before": before,
        "world_after": after.world,
    }


def compose(
    assessment: Assessment,
    *,
    gaps: Mapping[str, Sequence[Gap]],
    gap_ids: Mapping[str, Sequence[str]],
    active_gap: GapPointer | None,
    step: int,
    transitions: Sequence[HealthTransition],
    snapshots: Sequence[Snapshot],
    config: RecoveryConfig,
    epsilon: float,
) -> RecoveryDirective | None:
    """A fresh directive from the current diagnosis, or None when its preconditions fail (§12.1, §12.4)."""
    h = assessment.health
    dimension = h.gap_dimension
    if dimension is None or active_gap is None or not gaps[dimension]:
        return None
    persistent = h.persistent_epistemic_gaps if dimension == "epistemic" else h.persistent_achievement_gaps
    target = select_target(dimension, gaps[dimension], gap_ids[dimension], persistent, active_gap)
    if target is None:
        return None
    verified = [t for t in transitions if t.progress is not None]
    low = [t.brief() for t in transitions if t.progress == 0][-config.recent_low_progress_count :]
    if config.mode == "generic":
        aim = active_gap.model_dump()
        pattern_text, gap_text = PATTERN_TEXT[None], ""
    else:
        aim = {"gap_type": dimension, "target": target.target}
        loop = []
        if h.trapping_pattern == "cycle":
            actions = {t.step: t.action for t in transitions}
            loop = cycle_evidence(assessment, h.recurrence_period, actions, snapshots, epsilon=epsilon)
        last_action = verified[-1].action if verified else None
        pattern_text = pattern_part(
            h.trapping_pattern, period=h.recurrence_period, last_action=last_action, loop=loop
        )
        gap_text = gap_part(dimension, target.target)
    return RecoveryDirective(
        recovery_frontier=aim,
        trigger_frontier=active_gap.model_dump(),
        gap_dimension=dimension,
        trapping_pattern=h.trapping_pattern,
        started_at_step=step,
        applies_from_step=step,
        # §12.2: pattern part + one space + gap part, targets verbatim (no trimming); generic mode has no gap part
        instruction=pattern_text if config.mode == "generic" else f"{pattern_text} {gap_text}",
        pattern_part=pattern_text,
        gap_part=gap_text,
        low_progress_transitions=low,
    )
