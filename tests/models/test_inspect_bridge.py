"""The bridge between pos_bench's models and inspect_ai's: messages and replies both ways, a pos_bench model
as an inspect Model (its calls keep their role and usage), and one event loop and context per episode."""

from __future__ import annotations

import asyncio
import json

import pytest
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall, memory

from pos_bench.models.inspect_bridge import (
    Coroutines,
    inspect_model,
    to_inspect,
    to_messages,
    to_output,
    to_reply,
)
from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Recorded, Transcript
from pos_bench.types import Message, Reply, Usage


def test_a_tool_conversation_reads_as_pos_bench_turns():
    messages = [
        ChatMessageSystem(content="rules"),
        ChatMessageUser(content="task"),
        ChatMessageAssistant(
            content="look first",
            tool_calls=[ToolCall(id="1", function="command", arguments={"command": "look"})],
        ),
        ChatMessageTool(content="a room", tool_call_id="1", function="command"),
        ChatMessageUser(content="choose"),
        ChatMessageAssistant(
            content="query", tool_calls=[ToolCall(id="2", function="logs", arguments={"service": "db"})]
        ),
    ]
    shown = to_messages(messages)
    assert [m.role for m in shown] == ["system", "user", "assistant", "user", "assistant"]
    assert json.loads(shown[2].content) == {"thought": "look first", "action": "look"}
    assert shown[3].content == "Observation (command):\na room\n\nchoose"
    assert json.loads(shown[4].content)["action"] == {"name": "logs", "arguments": {"service": "db"}}
    plain = (Message("system", "s"), Message("user", "u"), Message("assistant", "a"))
    assert to_messages(to_inspect(plain)) == plain


def test_usage_crosses_both_ways_with_cached_tokens_counted_apart():
    reply = Reply("hi", Usage(100, 7, 1, cached_input_tokens=60, cache_write_tokens=10))
    output = to_output(reply, "m")
    assert (output.usage.input_tokens, output.usage.input_tokens_cache_read) == (30, 60)
    assert to_reply(output) == Reply("hi", reply.usage)


def test_an_inspect_call_is_a_pos_bench_call_of_its_role():
    log = Transcript()
    model = Recorded(ScriptedModel(replies={"compactor": ["short summary"]}), log)
    target = inspect_model(model, role="compactor", count_text=lambda text: len(text.split()), max_tokens=64)
    with Coroutines() as loop:
        output = loop.run(target.generate([ChatMessageUser(content="sum up these five words")]))
        counted = loop.run(target.count_tokens("one two three"))
    assert output.completion == "short summary" and counted == 3
    (call,) = log.of_kind("call")
    assert call["role"] == "compactor" and call["prompt"]["max_tokens"] == 64
    assert (
        model.usage["compactor"].calls == 1
        and output.usage.output_tokens == model.usage["compactor"].output_tokens
    )


def test_one_loop_per_episode_and_each_episode_has_its_own_inspect_store():
    tool = memory()
    with Coroutines() as first, Coroutines() as second:
        first.run(tool(command="create", path="/memories/a.md", file_text="kept"))
        loops = {first.run(current_loop()) for _ in range(3)}
        seen_first = first.run(tool(command="view", path="/memories"))
        seen_second = second.run(tool(command="view", path="/memories"))
    assert len(loops) == 1
    assert "a.md" in seen_first and "a.md" not in seen_second
    assert next(iter(loops)).is_closed()


async def current_loop():
    return asyncio.get_running_loop()


def test_a_coroutine_from_a_worker_thread_runs_on_the_bound_loop_and_never_on_its_own_thread():
    import threading

    from pos_bench.models.inspect_bridge import calls_to_this_loop, run_coroutine

    async def where() -> int:
        return threading.get_ident()

    async def main() -> tuple[int, int]:
        import anyio

        with calls_to_this_loop():
            ran_on = await anyio.to_thread.run_sync(lambda: run_coroutine(where))
        with pytest.raises(RuntimeError, match="worker thread"), calls_to_this_loop():
            run_coroutine(where)
        return ran_on, threading.get_ident()

    ran_on, loop_thread = asyncio.run(main())
    assert ran_on == loop_thread  # the coroutine ran on the sample's loop, not in the worker
    assert run_coroutine(where) != threading.get_ident()  # outside inspect: the background loop's thread
