"""Policy reply text → Decision. A malformed reply is a normal outcome (`ParseFailure`), not an exception."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pos_bench.types import Action, Decision, Observation, ToolCall

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class ParseFailure:
    """Why a reply held no executable action; shown to the model in the repair request."""

    problem: str
    json_readable: bool = True
    """False when the reply held no JSON object at all (a JSON repair); True when a JSON object came but
    without an executable action (the missing-action retry)."""


def extract_json_object(text: str) -> Mapping[str, Any] | None:
    """The first JSON object in `text`, tolerating code fences and prose around it."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start in (i for i, ch in enumerate(candidate) if ch == "{"):
            try:
                value, _ = decoder.raw_decode(candidate[start:])
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None


def _as_action(raw: Any, obs: Observation) -> Action | ParseFailure:
    if obs.tools:
        if isinstance(raw, dict) and isinstance(raw.get("name"), str) and raw["name"].strip():
            arguments = raw.get("arguments", {})
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments) if arguments.strip() else {}
                except json.JSONDecodeError:
                    return ParseFailure("the tool arguments are not a JSON object")
            if not isinstance(arguments, dict):
                return ParseFailure("the tool arguments are not a JSON object")
            return ToolCall(raw["name"].strip(), arguments)
        return ParseFailure('the action is not an object with a string "name"')
    if isinstance(raw, str) and raw.strip():
        return raw.strip()
    return ParseFailure("the action is not a non-empty command string")


def _meta_name(action: Action) -> str:
    if isinstance(action, ToolCall):
        return action.name
    return re.split(r"[\s(]", action, maxsplit=1)[0]


def _raw_actions(payload: Mapping[str, Any], max_actions: int) -> list[Any] | ParseFailure:
    """The reply's actions before conversion: `"actions"` (a list) when several are allowed, else `"action"`.

    Either key is read in both modes, so a one-action reply to a multi-action benchmark still counts."""
    if max_actions > 1 and "actions" in payload:
        raw = payload["actions"]
        if not isinstance(raw, list) or not raw:
            return ParseFailure('"actions" is not a non-empty list')
        return raw
    if "action" in payload:
        return [payload["action"]]
    key = '"actions" key' if max_actions > 1 else '"action" key'
    return ParseFailure(f"the JSON object has no {key}")


def parse_decision(
    text: str,
    obs: Observation,
    meta_actions: Sequence[str] = (),
    thought_key: str = "thought",
    max_actions: int = 1,
) -> Decision | ParseFailure:
    """Read a policy reply. Meta-actions named in `meta_actions` become `Decision(action=None, meta=…)`.

    With `max_actions` > 1 the reply may list several actions; all are kept (the loop runs at most
    `max_actions` of them). A meta-action must be the only one of its reply."""
    payload = extract_json_object(text)
    if payload is None:
        return ParseFailure("the reply is not a JSON object", json_readable=False)
    raw = _raw_actions(payload, max_actions)
    if isinstance(raw, ParseFailure):
        return raw
    actions = []
    for item in raw:
        action = _as_action(item, obs)
        if isinstance(action, ParseFailure):
            return action
        actions.append(action)
    thought = payload.get(thought_key, "")
    extra = {k: v for k, v in payload.items() if k not in ("action", "actions", thought_key)}
    thought = thought if isinstance(thought, str) else json.dumps(thought, ensure_ascii=False)
    metas = [a for a in actions if meta_actions and _meta_name(a) in meta_actions]
    if metas and len(actions) > 1:
        return ParseFailure("a memory action must be the only action of its reply")
    if metas:
        return Decision(thought=thought, action=None, meta=metas[0], extra=extra)
    return Decision(thought=thought, action=actions[0], extra=extra, then=tuple(actions[1:]))
