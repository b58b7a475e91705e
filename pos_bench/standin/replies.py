"""What the stand-in answers one chat request: a reply every method can use, so each plays its full length.

- A request with a `json_schema` response format gets the schema's smallest instance (`instance.py`). For a
  policy that is the first listed action, since `pos_bench.prompting` puts the admissible commands (or the tool
  names) in the schema as an enum; a tool call's free `arguments` are then filled with the smallest instance
  of that tool's `parameters`, read from the catalog the prompt shows (`Available tools:` and its JSON list).
- A policy prompt without a schema (`response_mode: json_object` or `none`) gets the same decision, built from
  the prompt's `Available actions:` list or tool catalog, as the reply contract asks (`action`, or `actions`
  when the prompt asks for a list).
- Anything else (a summariser, a compressor, an information provider) gets a short sentence.

The first action is the choice for the same reason `models/scripted.py`'s `schema_reply` makes it: it is the
smallest answer, and the benchmarks list their episode-ending tools (`submit_diagnosis`, `claim_done`…) last.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pos_bench.standin.instance import minimal_instance
from pos_bench.types import Prompt

FREE_TEXT = "Nothing new to report."
"""The answer to a request that asks for neither a schema nor an action."""
THOUGHT = "x"
"""The thought of a decision built without a schema (the smallest a schema would give)."""
TOOLS_HEADING = "Available tools:\n"
ACTIONS_LIST = re.compile(r"^Available actions:\n((?:- .*\n?)+)", re.MULTILINE)
ASKS_FOR_A_LIST = '"actions" (a list of'


def message_text(message: Mapping[str, Any]) -> str:
    """A chat message's text, whether its content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)


def reply_text(body: Mapping[str, Any]) -> str:
    """The reply to the chat-completions request `body` (its JSON, decoded)."""
    users = [message_text(m) for m in body.get("messages") or () if m.get("role") == "user"]
    prompt = next(
        (text for text in reversed(users) if TOOLS_HEADING in text or ACTIONS_LIST.search(text)), ""
    )
    catalog = tool_catalog(prompt)
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema") or {}
        return json.dumps(with_tool_arguments(minimal_instance(schema), catalog))
    actions = listed_actions(prompt)
    if catalog or actions:
        first = (
            {"name": next(iter(catalog)), "arguments": minimal_instance(next(iter(catalog.values())))}
            if catalog
            else actions[0]
        )
        key, value = ("actions", [first]) if ASKS_FOR_A_LIST in prompt else ("action", first)
        return json.dumps({"thought": THOUGHT, key: value})
    return "{}" if response_format.get("type") == "json_object" else FREE_TEXT


def prompt_reply(prompt: Prompt, index: int = 0) -> str:
    """The stand-in's reply to `prompt` sent with a JSON schema when it has one (`model=vllm`), without the
    network: the responder of `python -m pos_bench.estimate`'s probe, so the estimate predicts the replies the
    stand-in gives (a LOCA tool call with its smallest arguments, not the decision schema's empty ones).
    `index` (the role's call count, as a `ScriptedModel` responder takes it) changes nothing."""
    body: dict[str, Any] = {"messages": [{"role": m.role, "content": m.content} for m in prompt.messages]}
    if prompt.schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"schema": dict(prompt.schema)}}
    return reply_text(body)


def tool_catalog(prompt: str) -> dict[str, Mapping[str, Any]]:
    """Tool name → its `parameters` schema, from the catalog a policy prompt shows (empty when none)."""
    start = prompt.find(TOOLS_HEADING)
    if start < 0:
        return {}
    try:
        tools, _ = json.JSONDecoder().raw_decode(prompt, start + len(TOOLS_HEADING))
    except ValueError:
        return {}
    catalog = {}
    for tool in tools if isinstance(tools, list) else ():
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            catalog[function["name"]] = function.get("parameters") or {"type": "object"}
    return catalog


def listed_actions(prompt: str) -> Sequence[str]:
    """The commands of a policy prompt's `Available actions:` list, in order."""
    found = ACTIONS_LIST.search(prompt)
    return [line[2:] for line in found.group(1).splitlines() if line.startswith("- ")] if found else []


def with_tool_arguments(value: Any, catalog: Mapping[str, Mapping[str, Any]]) -> Any:
    """`value` with every tool call (`{"name": <a catalog tool>}`, `arguments` optional) given the smallest
    arguments its tool accepts (the decision schema leaves them free, so its smallest instance has none)."""
    if isinstance(value, list):
        return [with_tool_arguments(item, catalog) for item in value]
    if not isinstance(value, dict):
        return value
    if value.get("name") in catalog and set(value) <= {"name", "arguments"}:
        return {**value, "arguments": minimal_instance(catalog[value["name"]])}
    return {key: with_tool_arguments(item, catalog) for key, item in value.items()}
