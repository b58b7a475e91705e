"""Memory actions (PACE `glimpse`, HiAgent `retrieve`) offered next to the environment's actions.

The loop recognises a meta-action by its name: the first word of a command or the tool's name
(`parse._meta_name`), and `Prompt.meta_actions` holds those names. How each benchmark shape offers one:
- command benchmarks constrain `action` to an enum of the admissible commands, so every concrete memory
  command the method accepts right now (`glimpse 3`, `retrieve(2)`) is added to that enum and listed with
  the available actions;
- tool benchmarks get one more function tool (`{"name": "glimpse", "arguments": {"chunk_id": 3}}`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pos_bench.prompting import decision_schema, policy_prompt
from pos_bench.types import Action, Brief, Observation, Prompt, ToolCall


@dataclass(frozen=True)
class MetaOffer:
    """One memory action as the policy may call it this turn."""

    name: str
    commands: tuple[str, ...]
    """Concrete command strings for command benchmarks; empty means the action is not offered."""
    description: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    """JSON schema of the tool arguments (tool benchmarks)."""

    def tool(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


def memory_prompt(
    brief: Brief,
    obs: Observation,
    sections: Sequence[str],
    offers: Sequence[MetaOffer],
    *,
    extra_fields: Mapping[str, tuple[Any, Any]] | None = None,
    max_json_retries: int = 2,
) -> Prompt:
    """The shared policy prompt with this turn's memory actions (and any extra decision fields)."""
    offers = [o for o in offers if o.commands]
    names = tuple(o.name for o in offers)
    if obs.tools:
        shown = dataclasses.replace(obs, tools=(*obs.tools, *(o.tool() for o in offers)))
        schema = decision_schema(shown, extra_fields=extra_fields, max_actions=brief.max_actions_per_turn)
        listed = names
    else:
        shown = obs
        listed = tuple(c for o in offers for c in o.commands)
        schema = decision_schema(
            obs, extra_fields=extra_fields, meta_actions=listed, max_actions=brief.max_actions_per_turn
        )
    prompt = policy_prompt(
        brief,
        shown,
        sections,
        meta_actions=listed,
        max_json_retries=max_json_retries,
        schema=schema,
    )
    return dataclasses.replace(prompt, meta_actions=names)


def meta_ids(action: Action | None, key: str) -> list[int]:
    """The integer ids a memory action names: `arguments[key]` (an int or a list) of a tool call, or every
    number in a command such as `glimpse 3` or `retrieve(1, 2)`."""
    if isinstance(action, ToolCall):
        value = action.arguments.get(key)
        values = value if isinstance(value, list) else [value]
        return [
            int(v)
            for v in values
            if (isinstance(v, int) and not isinstance(v, bool))
            or (isinstance(v, str) and v.strip().isdigit())
        ]
    if isinstance(action, str):
        return [int(n) for n in re.findall(r"\d+", action)]
    return []
