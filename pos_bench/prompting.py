"""The words every method shares: the reply contract, observation rendering and the decision schema.

Methods differ only in the memory they render; asking for an action is done here, once, so the
comparison between methods stays fair (STYLE §1.4).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from pos_bench.types import Brief, Message, Observation, Prompt

REPLY_CONTRACT = (
    "Reply with one JSON object and nothing else, with the keys "
    '"thought" (a sentence on what the newest observation showed and what is still open) and '
    '"action" (the single action to take now).'
)

MULTI_REPLY_CONTRACT = (
    "Reply with one JSON object and nothing else, with the keys "
    '"thought" (a sentence on what the newest observation showed and what is still open) and '
    '"actions" (a list of 1 to {n} actions, run one after another in the listed order, each giving its own '
    "observation). List together only actions that do not need one another's results; an action that ends "
    "the episode must come last, and nothing listed after it runs."
)

COMMAND_RULE = (
    "The action is a command string passed to the environment unchanged: copy it exactly from the "
    "available actions; a similar name is a different object."
)

TOOL_RULE = (
    'The action is an object {"name": <tool name>, "arguments": {...}} calling exactly one of the '
    "available tools with arguments that follow its schema."
)

MULTI_TOOL_RULE = (
    'Each action is an object {"name": <tool name>, "arguments": {...}} calling one of the available tools '
    "with arguments that follow its schema."
)

MISSING_ACTION_REQUEST = (
    "The episode has not ended, and that reply contained no executable action ({problem}). Prose, an "
    '"answer" key or a claim of being finished do not count. Reply again with one JSON object holding '
    '"thought" and {key}, the action taken verbatim from the available actions; a similar name is a '
    "different object."
)

JSON_REPAIR_REQUEST = (
    "That reply could not be read ({problem}). Send the same decision again as one complete JSON object "
    'with the keys "thought" and {key}, and nothing outside it.'
)


def _action_key(max_actions: int) -> str:
    return '"action"' if max_actions == 1 else f'"actions" (1 to {max_actions} actions)'


REPLY_CAP = 100_000
"""Characters of one reply kept where it is repeated or stored: echoed back in a repair request, written to
the transcript. A 10 MB reply would otherwise be resent whole with each repair and fill the episode file."""


def capped(text: str, cap: int = REPLY_CAP) -> str:
    """`text`, or its first `cap` characters followed by a marker giving its original size."""
    if len(text) <= cap:
        return text
    return f"{text[:cap]}\n[cut here: the reply had {len(text):,} characters; the first {cap:,} are kept]"


def repair_request(problem: str, *, missing_action: bool, max_actions: int = 1) -> str:
    """The loop's follow-up to an unusable reply: a JSON repair, or the missing-action directive (SPEC-POS §5.1)."""
    template = MISSING_ACTION_REQUEST if missing_action else JSON_REPAIR_REQUEST
    return template.format(problem=problem, key=_action_key(max_actions))


def example_section(brief: Brief) -> str:
    """What a history-based baseline shows before the task: the format example and any reasoning hint.

    PoS shows `brief.example` only (SPEC-POS §9.1: no RCA-100 example under PoS)."""
    return "\n\n".join(part for part in (brief.example, brief.reasoning_hint) if part)


def render_actions(obs: Observation, meta_actions: Sequence[str] = ()) -> str:
    """The available actions as the policy sees them: a command list or the tool schemas."""
    if obs.tools:
        body = json.dumps(list(obs.tools), indent=1, ensure_ascii=False)
        text = f"Available tools:\n{body}"
    else:
        text = "Available actions:\n" + "\n".join(f"- {a}" for a in obs.actions)
    if meta_actions:
        text += "\nMemory actions (no environment step): " + ", ".join(meta_actions)
    return text


def render_observation(obs: Observation) -> str:
    """The current observation with any loop notes (e.g. the final-turn directive) appended."""
    return "\n\n".join([obs.text, *obs.notes])


def action_rule(obs: Observation, max_actions: int = 1) -> str:
    if obs.tools:
        return TOOL_RULE if max_actions == 1 else MULTI_TOOL_RULE
    return COMMAND_RULE


def closing_request(obs: Observation, max_actions: int = 1) -> str:
    contract = REPLY_CONTRACT if max_actions == 1 else MULTI_REPLY_CONTRACT.format(n=max_actions)
    return f"{contract} {action_rule(obs, max_actions)}"


def tool_names(obs: Observation) -> tuple[str, ...]:
    """Names of the observation's function tools (OpenAI tool-spec shape)."""
    return tuple(t["function"]["name"] for t in obs.tools if isinstance(t.get("function"), Mapping))


def _tool_action(names: tuple[str, ...]) -> type[BaseModel]:
    """A tool call whose name must be one of `names` (any name when there are none)."""
    name_type: Any = Literal[names] if names else str  # type: ignore[valid-type]
    return create_model(
        "ToolAction",
        __config__=ConfigDict(extra="forbid"),
        name=(name_type, ...),
        arguments=(dict[str, Any], Field(default_factory=dict)),
    )


def _choices(obs: Observation, meta_actions: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The action kind (`command` or `tool`) and the names a reply may use, meta-actions included."""
    if obs.tools:
        return "tool", tuple(dict.fromkeys([*tool_names(obs), *meta_actions]))
    return "command", tuple(dict.fromkeys([*obs.actions, *meta_actions]))


def decision_model(
    obs: Observation,
    *,
    extra_fields: Mapping[str, tuple[Any, Any]] | None = None,
    meta_actions: Sequence[str] = (),
    thought_key: str = "thought",
    max_actions: int = 1,
) -> type[BaseModel]:
    """A pydantic model of the policy reply for this observation.

    Command benchmarks constrain `action` to the admissible list and tool benchmarks the tool name to the
    available tools (plus meta-action names in both), so a schema-constrained model always emits an
    executable action. With `max_actions` > 1 the reply holds `actions`, a list of 1 to `max_actions`.
    """
    kind, choices = _choices(obs, meta_actions)
    if kind == "tool":
        action_type: Any = _tool_action(choices)
    else:
        action_type = Literal[choices] if choices else str  # type: ignore[valid-type]
    if max_actions == 1:
        action_field: dict[str, Any] = {"action": (action_type, ...)}
    else:
        action_field = {"actions": (list[action_type], Field(..., min_length=1, max_length=max_actions))}
    fields: dict[str, Any] = {thought_key: (str, ...), **(extra_fields or {}), **action_field}
    return create_model("Decision", __config__=ConfigDict(extra="forbid"), **fields)


def decision_schema(
    obs: Observation,
    *,
    meta_actions: Sequence[str] = (),
    max_actions: int = 1,
    extra_fields: Mapping[str, tuple[Any, Any]] | None = None,
    thought_key: str = "thought",
) -> dict[str, Any]:
    """The JSON schema of `decision_model`, built once per reply shape (the same dict on every call, so treat
    it as read-only). Extra fields whose defaults are not plain values (a pydantic `Field`, a list) are no cache
    key (such an object is equal only to itself), nor are numbers: that reply's schema is built anew."""
    extra = tuple((extra_fields or {}).items())
    shape = (max_actions, thought_key, extra)
    if not all(_plain(default) for _, (_, default) in extra) or not _hashable(shape):
        return decision_model(
            obs,
            extra_fields=extra_fields,
            meta_actions=meta_actions,
            max_actions=max_actions,
            thought_key=thought_key,
        ).model_json_schema()
    return _schema_from_template(*_choices(obs, meta_actions), shape)


def _plain(default: Any) -> bool:
    """Required, None or a string: defaults that equal only defaults of their own kind (1 == 1.0 == True)."""
    return default is ... or default is None or type(default) is str


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


Shape = tuple[int, str, tuple[tuple[str, tuple[Any, Any]], ...]]
"""What fixes a reply's schema besides its action list: max actions, the thought key, the extra fields."""


@functools.lru_cache(maxsize=512)
def _schema_from_template(kind: str, choices: tuple[str, ...], shape: Shape) -> dict[str, Any]:
    """Benchmarks such as ALFWorld offer a new action list at almost every step, and pydantic needs ~1.5 ms
    to build a model and its schema: the schema is built once per shape, with two stand-in names, and
    each action list is put in their place (a test checks it equals pydantic's own). Saves ~1.2 ms of CPU per
    policy prompt (0.02 vs 1.26 ms under load, `scripts/bench_shortcuts.py`)."""
    if len(choices) >= 2 and all(isinstance(c, str) for c in choices):
        return _with_choices(_schema_template(kind, shape), list(choices))
    return _schema_of(kind, choices, shape)


_STAND_INS = ("\x00first-name", "\x00second-name")
"""Action names no benchmark offers: where they stand in a schema, the action list goes."""


@functools.lru_cache(maxsize=64)
def _schema_template(kind: str, shape: Shape) -> dict[str, Any]:
    return _schema_of(kind, _STAND_INS, shape)


def _with_choices(node: Any, choices: list[str]) -> Any:
    if isinstance(node, dict):
        return {k: _with_choices(v, choices) for k, v in node.items()}
    if isinstance(node, list):
        return list(choices) if node == list(_STAND_INS) else [_with_choices(v, choices) for v in node]
    return node


def _schema_of(kind: str, choices: tuple[str, ...], shape: Shape) -> dict[str, Any]:
    max_actions, thought_key, extra = shape
    if kind == "tool":
        tools = tuple({"type": "function", "function": {"name": n}} for n in choices) or ({},)
        obs = Observation(text="", tools=tools)
    else:
        obs = Observation(text="", actions=choices)
    model = decision_model(obs, extra_fields=dict(extra), max_actions=max_actions, thought_key=thought_key)
    return model.model_json_schema()


def policy_prompt(
    brief: Brief,
    obs: Observation,
    sections: Sequence[str],
    *,
    meta_actions: Sequence[str] = (),
    max_tokens: int | None = None,
    max_json_retries: int = 1,
    schema: Mapping[str, Any] | None = None,
) -> Prompt:
    """Assemble a policy prompt: the benchmark's system prompt, the method's memory sections in order,
    the available actions and the shared closing request (one action, or up to the benchmark's
    `max_actions_per_turn`). A method's own `schema` must be built with the same `max_actions`; `max_tokens`
    defaults to the benchmark's policy reply budget (`brief.policy_max_tokens`).

    Prefix-stable (issue 24): what does not change within an episode comes first, so a server's prefix cache
    reuses it from one turn to the next. A tool catalog is fixed for the episode, so it opens the user message
    (on LOCA it is ~26k characters); a command list changes with every observation, so it stays after the
    method's sections. Methods order their own sections the same way: the fixed ones (example, task,
    instructions) first, the ones that grow next, the current observation last."""
    n = brief.max_actions_per_turn
    parts = [s for s in sections if s]
    catalog = render_actions(obs, meta_actions)
    parts = [catalog, *parts] if obs.tools else [*parts, catalog]
    parts.append(closing_request(obs, n))
    return Prompt(
        messages=(Message("system", brief.system), Message("user", "\n\n".join(parts))),
        schema=schema
        if schema is not None
        else decision_schema(obs, meta_actions=meta_actions, max_actions=n),
        max_tokens=brief.policy_max_tokens if max_tokens is None else max_tokens,
        meta_actions=tuple(meta_actions),
        max_json_retries=max_json_retries,
    )
