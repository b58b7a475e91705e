"""Policy reply text → Decision. A malformed reply is a normal outcome (`ParseFailure`), not an exception."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pos_bench.types import Action, Decision, Observation, ToolCall

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)

MAX_PARSE_CHARS = 64_000
"""Reply characters looked at; a longer reply is cut there (every real decision or belief delta is far smaller)."""
MAX_OBJECT_STARTS = 32
"""`{` positions tried per candidate, so a reply of many braces costs bounded time."""


MAX_DEPTH = 64
"""Nesting levels a reply object may have; no decision or belief record comes near it, and validating (or
printing) a deeper one costs time for nothing."""


_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
"""A JSON string (skipped whole) or a bracket."""


def opens_too_deep(text: str, start: int, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text at `start` nests deeper than `limit` before it closes. Checked on the text, so a
    deep reply is refused without decoding it (decoding thousands of levels costs tens of milliseconds)."""
    depth = 0
    for token in _TOKEN.finditer(text, start):
        kind = token.group()
        if kind in "{[":
            depth += 1
            if depth > limit:
                return True
        elif kind in "}]":
            depth -= 1
            if depth <= 0:
                return False
    return False


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests dicts/lists more than `limit` levels (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


@dataclass(frozen=True)
class ParseFailure:
    """Why a reply held no executable action; shown to the model in the repair request."""

    problem: str
    json_readable: bool = True
    """False when the reply held no JSON object at all (a JSON repair); True when a JSON object came but
    without an executable action (the missing-action retry)."""


def extract_json_object(text: str) -> Mapping[str, Any] | None:
    """The first JSON object in `text`, tolerating code fences and prose around it.

    Total: any string (megabytes, deep nesting, lone surrogates) gives an object or `None` in bounded time."""
    text = text[:MAX_PARSE_CHARS]
    candidates = [m.group(1) for m in _FENCE.finditer(text)][:4] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        starts = [m.start() for m in itertools.islice(re.finditer(r"\{", candidate), MAX_OBJECT_STARTS)]
        for start in starts:
            if opens_too_deep(candidate, start):
                break  # every later start lies inside the same too-deep nesting
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:  # JSONDecodeError and UnicodeError are ValueErrors
                continue
            except RecursionError:
                break  # every later start lies inside the same too-deep nesting
            if isinstance(value, dict):
                return value
    return None


def _as_action(raw: Any, obs: Observation, no_tool_call_is_final: bool = False) -> Action | ParseFailure:
    if obs.tools:
        if no_tool_call_is_final and not isinstance(raw, dict):
            return raw.strip() if isinstance(raw, str) else ""
        if isinstance(raw, dict) and isinstance(raw.get("name"), str) and raw["name"].strip():
            arguments = raw.get("arguments", {})
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments[:MAX_PARSE_CHARS]) if arguments.strip() else {}
                except (ValueError, RecursionError):
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


def _raw_actions(
    payload: Mapping[str, Any], max_actions: int, no_tool_call_is_final: bool = False
) -> list[Any] | ParseFailure:
    """The reply's actions before conversion: `"actions"` (a list) when several are allowed, else `"action"`.

    Either key is read in both modes, so a one-action reply to a multi-action benchmark still counts."""
    if max_actions > 1 and "actions" in payload:
        raw = payload["actions"]
        if not isinstance(raw, list) or not raw:
            return ParseFailure('"actions" is not a non-empty list')
        return raw
    if "action" in payload:
        return [payload["action"]]
    if no_tool_call_is_final:
        return [None]
    key = '"actions" key' if max_actions > 1 else '"action" key'
    return ParseFailure(f"the JSON object has no {key}")


def parse_decision(
    text: str,
    obs: Observation,
    meta_actions: Sequence[str] = (),
    thought_key: str = "thought",
    max_actions: int = 1,
    no_tool_call_is_final: bool = False,
) -> Decision | ParseFailure:
    """Read a policy reply. Meta-actions named in `meta_actions` become `Decision(action=None, meta=…)`.

    With `max_actions` > 1 the reply may list several actions; all are kept (the loop runs at most
    `max_actions` of them). A meta-action must be the only one of its reply. With `no_tool_call_is_final` a
    tool benchmark's reply without a tool call becomes a plain-text action (see `Brief.no_tool_call_is_final`)."""
    payload = extract_json_object(text)
    if payload is None:
        return ParseFailure("the reply is not a JSON object", json_readable=False)
    if too_deep(payload):
        return ParseFailure(f"the JSON object is nested deeper than {MAX_DEPTH} levels", json_readable=False)
    raw = _raw_actions(payload, max_actions, no_tool_call_is_final)
    if isinstance(raw, ParseFailure):
        return raw
    actions = []
    for item in raw:
        action = _as_action(item, obs, no_tool_call_is_final)
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
