"""The situation passport's words: the protocol pasted into every prompt, and the recovery constraint written
from a stall the model declared (one movement rule and one gap rule, with the judged actions named)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from baselines.passport.records import Health, ReplyShape

MOVEMENT_RULE = {
    "frozen": "Frozen: the world did not change, so do not repeat the action that left it unchanged{actions}.",
    "circle": "Circle: states and actions keep coming back, so take none of the actions of the loop again{actions}.",
    "drift": "Drift: the world changes but the active gap does not move, so take only an action that serves it.",
}
GAP_RULE = {
    "knowledge": "Stuck on knowledge: the next action must bring new evidence that tells the open possibilities apart.",
    "action": "Stuck on action: the next action must change the state of at least one entity that matters for the goal.",
}
GENERIC_RULE = "Step back and pick an action, backed by the passport, that moves the active gap."

AUDITOR_SYSTEM = (
    "You are an independent controller. You compare an agent's situation passport with the latest evidence and list "
    "problems. You fix nothing and suggest no actions."
)


@dataclass(frozen=True)
class Constraint:
    """The recovery constraint derived from a declared stall; shown until the model declares progress."""

    declared_at: int
    movement: str
    stuck_on: str
    gaps: tuple[str, ...]
    """The active gap(s) at the declaration; the protocol keeps them during the stall."""
    text: str


def constraint_text(
    health: Health, *, gaps: Sequence[str], recent_actions: Sequence[Any], task_rules: Sequence[str] = ()
) -> str:
    """One movement rule and one gap rule, combined; the actions the model judged are named concretely."""
    named = [json.dumps(a, ensure_ascii=False) for a in recent_actions]
    if health.movement == "frozen":
        suffix = f" ({named[-1]})" if named else ""
    else:
        suffix = f": {', '.join(dict.fromkeys(named))}" if named else ""
    parts = (
        [MOVEMENT_RULE[health.movement].format(actions=suffix)] if health.movement in MOVEMENT_RULE else []
    )
    if health.stuck_on in GAP_RULE:
        parts.append(GAP_RULE[health.stuck_on])
    if not parts:
        parts.append(GENERIC_RULE)
    parts.extend(task_rules)
    keep = " | ".join(gaps) if gaps else "the current active gap"
    return f"Stall declared. Keep the active gap ({keep}) until progress resumes. " + " ".join(parts)


def protocol_text(shape: ReplyShape, *, window: int, check_scope: str) -> str:
    """The protocol in the prompt; the levers change its words as they change the schema."""
    entry = "name, state in plain words"
    if shape.confidence:
        entry += ", confidence (high, medium or low)"
    if shape.source:
        entry += ", source (the step or observation it rests on; without one, confidence is low)"
    scope = (
        "only the entries the newest observation adds or changes"
        if check_scope == "changed"
        else "every entry"
    )
    count = "the one gap" if shape.active_gaps == 1 else "one or two gaps"
    return "\n".join(
        [
            (
                "You keep a situation passport, rewritten whole in every reply. The JSON reply holds, in this order, "
                "thought, check, passport, health, active_gaps, citations and action:"
            ),
            (
                f'- "check": problems in the passport below against the newest observation, looking at {scope}: '
                '"incompatible" (one entity in two states), "contradicted" (the evidence says otherwise), "unsourced" '
                "(a conclusion without a source). [] if none."
            ),
            (
                f'- "passport": the fixed passport you commit. entities: {entry}; relations: source, target, relation; '
                "knowledge_gaps: what is not yet known or confirmed; achievement_gaps: how things differ from the goal. "
                "Keep only what bears on the possible actions, on judging results or on reaching the goal."
            ),
            (
                '- "health": progress (did the active gap close, or did confidence in something important change?); '
                f"stall (no progress in the last {window} steps); movement: frozen (the world did not change), circle "
                "(states and actions repeat), drift (the world changes, the active gap does not), or none; stuck_on: "
                "knowledge, action or none."
            ),
            (
                f'- "active_gaps": {count} most worth working on now (kind knowledge or achievement, gap, one-line reason). '
                "During a stall keep the same active gap."
            ),
            '- "citations": when the action gives a final answer, the passport entries that support it; else [].',
            'The "action" serves the active gap and obeys the constraint, if any.',
        ]
    )
