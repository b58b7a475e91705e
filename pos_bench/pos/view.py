"""What the PoS policy sees (SPEC-POS §9): the current observation, the belief text, the goal with the
Active-Gap subgraph, the Active Gap, the action contract and, while trapped, the recovery constraint.

Never the raw history, earlier observations, past beliefs or health numbers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from pos_bench.pos.belief import Belief, expand
from pos_bench.pos.gaps import GapPointer
from pos_bench.pos.recovery import RecoveryDirective
from pos_bench.prompting import render_observation
from pos_bench.types import Brief, Observation

VIEW_STOPWORDS = frozenset(
    {"a", "an", "and", "are", "be", "gap_type", "is", "of", "or", "reason", "target", "the", "to"}
)
"""Unlike gap matching, "gap" is kept here, so the gap-type word becomes a focus token (§9.2)."""

ACTION_CONTRACT = (
    "Choose the action that settles or shrinks the Active Gap. A preparatory action is fine only when something "
    "such an action needs is not known yet."
)

_WORD = re.compile(r"\w+")


def _tokens(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold())) - VIEW_STOPWORDS


def subgraph(
    world: Mapping[str, Mapping[str, Mapping[str, Any]]], gap: Mapping[str, str] | None
) -> dict[str, dict]:
    """The part of the world that bears on the expanded Active Gap (§9.2); empty without one."""
    empty: dict[str, dict] = {"entities": {}, "states": {}, "relations": {}}
    if gap is None:
        return empty
    focus = _tokens(json.dumps(dict(gap), ensure_ascii=False))
    ents = {i for i, e in world["entities"].items() if _tokens(f"{i} {e['name']} {e['entity_type']}") & focus}
    states = {
        i
        for i, s in world["states"].items()
        if s["entity_id"] in ents or _tokens(f"{i} {s['description']}") & focus
    }
    nodes = ents | states
    rels = {
        i
        for i, r in world["relations"].items()
        if r["source_id"] in nodes or r["target_id"] in nodes or _tokens(f"{i} {r['description']}") & focus
    }
    for rid in rels:
        for end in (world["relations"][rid]["source_id"], world["relations"][rid]["target_id"]):
            (states if end in world["states"] else ents).add(end)
    states |= {i for i, s in world["states"].items() if s["entity_id"] in ents}
    return {
        "entities": {i: dict(world["entities"][i]) for i in sorted(ents) if i in world["entities"]},
        "states": {i: dict(world["states"][i]) for i in sorted(states)},
        "relations": {i: dict(world["relations"][i]) for i in sorted(rels)},
    }


def recovery_section(directive: RecoveryDirective, belief: Belief) -> str:
    pointer = GapPointer.model_validate(directive.recovery_frontier)
    payload = {**asdict(directive), "recovery_gap": expand(pointer, belief)}
    return (
        "Recovery constraint (your recent actions have not moved your belief toward the goal; follow this):\n"
        + json.dumps(payload, ensure_ascii=False)
    )


def sections(
    brief: Brief, obs: Observation, belief: Belief, belief_text: str, directive: RecoveryDirective | None
) -> list[str]:
    """The PoS user-message sections in order; `prompting.policy_prompt` adds the actions and the closing request.

    Prefix-stable (issue 24): what is fixed for the episode comes first — the format example, the goal (the
    task and its specification, §2.6) and the action contract — then what changes each turn, so a prefix cache
    reuses the goal and the contract too. §9.1 lists the goal with the subgraph (item 4) and the contract after
    the Active Gap (item 6); the goal is now its own section, the subgraph keeps its place."""
    gap = belief.expanded_active_gap()
    goal = {"user_input": belief.goal.user_input, "specification": belief.goal.specification}
    return [
        brief.example,
        "Goal:\n" + json.dumps({"goal": goal}, ensure_ascii=False),
        ACTION_CONTRACT,
        f"Current observation:\n{render_observation(obs)}",
        f"Belief:\n{belief_text or '(empty)'}",
        "Active-Gap subgraph:\n"
        + json.dumps({"world": subgraph(belief.world.to_dict(), gap)}, ensure_ascii=False),
        "Active Gap:\n" + json.dumps(gap, ensure_ascii=False),
        recovery_section(directive, belief) if directive else "",
    ]
