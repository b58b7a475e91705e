"""The policy conversation as inspect_ai chat messages, and inspect's memory tool as a pos_bench meta-action.

The conversation is what inspect's react agent would keep: the benchmark's system prompt, one opening user
message (example, task, tool catalog, first observation), then per executed action the agent's reply as an
assistant message with one tool call and the observation as that call's tool result. Command benchmarks call
the tool `command`; tool benchmarks call their own tools. This shape is what inspect's strategies act on (edit
clears old tool results, trim drops old turns, summary replaces the turns after the opening message).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.tool import Tool, ToolCall, ToolDef, ToolError, memory

from pos_bench.models.inspect_bridge import command_call
from pos_bench.prompting import example_section, render_actions
from pos_bench.types import Action, Brief, Observation
from pos_bench.types import ToolCall as PosToolCall

MEMORY = "memory"
"""The meta-action's name: inspect's memory tool keeps its own name."""

COMMAND_FORM = (
    f'On this benchmark call it as a command: "{MEMORY} view [path]", "{MEMORY} create <path> <text>", or '
    f'"{MEMORY} " followed by a JSON object of the tool\'s arguments. Files live under /memories.'
)


def opening(brief: Brief, first: Observation, offered: tuple[Mapping[str, Any], ...]) -> list[ChatMessage]:
    """The conversation's fixed prefix. A tool catalog is fixed for the episode, so it is stated once here,
    memory tool included when offered; a command list changes every turn and goes in the closing request."""
    parts = [example_section(brief), f"Task: {first.goal}"]
    if first.tools:
        shown = Observation(text="", tools=(*first.tools, *offered))
        parts.insert(0, render_actions(shown))
    parts.append(f"Observation:\n{first.text}")
    return [
        ChatMessageSystem(content=brief.system),
        ChatMessageUser(content="\n\n".join(p for p in parts if p), source="input"),
    ]


def turn(thought: str, action: Action, result: str, index: int) -> list[ChatMessage]:
    """One executed action: the agent's reply with its tool call, and the observation as the call's result."""
    function, arguments = command_call(action)
    call = ToolCall(id=f"call-{index}", function=function, arguments=arguments)
    return [
        ChatMessageAssistant(content=thought, tool_calls=[call]),
        ChatMessageTool(content=result, tool_call_id=call.id, function=function),
    ]


def memory_tool() -> Tool:
    return memory()


def memory_spec(tool: Tool) -> dict[str, Any]:
    """inspect's memory tool as an OpenAI function-tool schema (how tool benchmarks list their tools)."""
    definition = ToolDef(tool)
    return {
        "type": "function",
        "function": {
            "name": definition.name,
            "description": definition.description,
            "parameters": definition.parameters.model_dump(exclude_none=True),
        },
    }


def memory_arguments(action: Action) -> dict[str, Any] | str:
    """The memory tool's arguments of a meta-action, or a sentence saying why they cannot be read."""
    if isinstance(action, PosToolCall):
        return dict(action.arguments)
    rest = action[len(MEMORY) :].strip()
    if rest.startswith("{"):
        try:
            value = json.loads(rest)
        except ValueError as error:
            return f"the memory arguments are not JSON ({error})"
        return value if isinstance(value, dict) else "the memory arguments are not a JSON object"
    match = re.match(r"(\w+)\s*(\S*)\s*(.*)", rest, re.DOTALL)
    if match is None:
        return f"no memory command given; {COMMAND_FORM}"
    command, path, text = match.groups()
    if command == "view":
        return {"command": "view", "path": path or "/memories"}
    if command == "create" and path:
        return {"command": "create", "path": path, "file_text": text}
    return f"cannot read {action!r}; {COMMAND_FORM}"


async def call_memory(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """Run inspect's memory tool; its refusals (a bad path, a missing argument) are its answer to the agent."""
    try:
        return str(await tool(**arguments))
    except (ToolError, TypeError, ValueError) as error:
        return f"memory error: {error}"
