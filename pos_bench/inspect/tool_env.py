"""An inspect task's tools as a pos_bench environment, for `method_agent`: the tools are the action space (each
offered as an OpenAI function schema, like a tool benchmark's), a tool call of the method runs as an inspect
tool call (its result is the next observation, a tool's error a `tool_error`), and `submit` (or a reply with
no tool call) is the answer, which ends the episode. The conversation is kept in inspect's message shape, so
the agent's state reads like any inspect agent's.

Synchronous, for pos_bench's loop in a worker thread: tools run on inspect's loop through `run_coroutine`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool
from inspect_ai.tool import ToolCall, ToolDef

from pos_bench.models.inspect_bridge import run_coroutine
from pos_bench.types import Action, Brief, Observation, Score, Task

SUBMIT = "submit"
SUBMIT_SCHEMA = {
    "type": "function",
    "function": {
        "name": SUBMIT,
        "description": "Give your final answer to the task; the task ends with it.",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "The final answer."}},
            "required": ["answer"],
        },
    },
}

BRIEF = Brief(
    system=(
        "You work on a task with the tools listed below. Call one tool per turn and read its result before the "
        f"next call. When you know the answer, call `{SUBMIT}` with it: that ends the task."
    ),
    policy_max_tokens=1024,
    no_tool_call_is_final=True,
)
"""What the agent tells every method about the task (identical for every method)."""


def schema(tool: ToolDef) -> dict[str, Any]:
    """An inspect tool as an OpenAI function schema."""
    parameters = tool.parameters.model_dump(exclude_none=True)
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    }


class ToolEnv:
    """One episode on an inspect sample: `tools` are its actions, `messages` its conversation (appended to)."""

    def __init__(self, tools: Sequence[ToolDef], messages: list[ChatMessage], task_text: str):
        names = [t.name for t in tools]
        if SUBMIT in names:
            raise ValueError(f"the task already has a tool named {SUBMIT!r}; the agent offers its own")
        self.tools = list(tools)
        self.messages = messages
        self.task_text = task_text
        self.schemas = (*(schema(t) for t in self.tools), SUBMIT_SCHEMA)
        self.answer: str | None = None
        self.calls = 0

    def observation(self, text: str, *, done: bool = False, tool_error: bool = False) -> Observation:
        return Observation(
            text=text, tools=self.schemas, done=done, goal=self.task_text, tool_error=tool_error
        )

    def reset(self, task: Task) -> Observation:
        self.answer = None
        return self.observation(self.task_text)

    def step(self, action: Action) -> Observation:
        if isinstance(action, str):  # a reply with no tool call: the answer (brief.no_tool_call_is_final)
            return self.submit(action)
        name, arguments = str(action.name), dict(action.arguments)
        if name == SUBMIT:
            return self.submit(str(arguments.get("answer", "")))
        self.calls += 1
        call = ToolCall(id=f"call-{self.calls}", function=name, arguments=arguments)
        self.messages.append(ChatMessageAssistant(content="", tool_calls=[call]))
        if name not in {t.name for t in self.tools}:
            text = f"There is no tool named {name!r}; the tools are: {', '.join(t.name for t in self.tools)}."
            self.messages.append(ChatMessageTool(content=text, tool_call_id=call.id, function=name))
            return self.observation(text, tool_error=True)
        result = run_coroutine(lambda: self._execute())
        reply = next((m for m in result if isinstance(m, ChatMessageTool)), None)
        self.messages.extend(result)
        if reply is None:
            return self.observation("(the tool returned nothing)")
        return self.observation(reply.text, tool_error=reply.error is not None)

    async def _execute(self) -> list[ChatMessage]:
        from inspect_ai.model import execute_tools

        executed = await execute_tools(self.messages, self.tools)
        return list(executed.messages)

    def submit(self, answer: str) -> Observation:
        self.answer = answer
        self.messages.append(ChatMessageAssistant(content=answer))
        return self.observation(f"Submitted: {answer}", done=True)

    def score(self) -> Score:
        """Only whether an answer was given: the inspect task's scorer judges it."""
        return Score(success=self.answer is not None, value=float(self.answer is not None))

    def close(self) -> None:
        return None


def task_text(messages: Sequence[ChatMessage]) -> str:
    """The task as the sample states it: its system and user messages, in order."""
    parts = [m.text for m in messages if m.role in ("system", "user") and m.text]
    return "\n\n".join(parts) or json.dumps([m.model_dump() for m in messages])[:4000]
