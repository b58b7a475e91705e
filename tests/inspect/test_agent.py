"""`method_agent`: a pos_bench method as an inspect agent on a task written for inspect, not for pos_bench: a
question, one tool, a scorer of inspect's own. The method's tool calls are inspect tool calls, its answer goes
to `submit` and is scored, and the log shows the method's memory (PoS's belief) after every step."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.agent import as_solver
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.model import ChatMessageTool
from inspect_ai.scorer import includes
from inspect_ai.solver import use_tools
from inspect_ai.tool import Tool, tool

from pos_bench.inspect import method_agent
from pos_bench.inspect.tool_env import BRIEF
from tests.inspect.stub import INSPECT_NAME, TimedStub, by_schema


@tool
def multiply() -> Tool:
    async def execute(x: int, y: int) -> str:
        """Multiply two whole numbers.

        Args:
            x: The first factor.
            y: The second factor.
        """
        return str(x * y)

    return execute


def arithmetic_policy(body: Mapping[str, Any]) -> str:
    """A policy for the arithmetic task: multiply, then submit what the tool said; the method's other roles
    (belief, sentinel…) get the smallest reply their schema accepts."""
    messages = body["messages"]
    if messages[0]["content"] != BRIEF.system:
        return by_schema(body)
    prompt = " ".join(str(m["content"]) for m in messages)
    if "391" in prompt:
        action: Any = {"name": "submit", "arguments": {"answer": "391"}}
    else:
        action = {"name": "multiply", "arguments": {"x": 17, "y": 23}}
    return json.dumps({"thought": "use the tool, then answer", "action": action})


def arithmetic_task(method: str) -> Task:
    return Task(
        dataset=[Sample(input="What is 17 times 23?", target="391")],
        solver=[use_tools(multiply()), as_solver(method_agent(method, max_turns=4))],
        scorer=includes(),
    )


@pytest.mark.parametrize("method", ["pos", "raw"])
def test_a_method_solves_an_inspect_task_with_its_tools(method: str, stub: TimedStub, tmp_path: Path):
    stub.answer = arithmetic_policy
    [log] = inspect_eval(arithmetic_task(method), model=INSPECT_NAME, log_dir=str(tmp_path), display="none")
    log = read_eval_log(log.location)
    assert log.status == "success", log.error
    [sample] = log.samples or []
    assert sample.scores and sample.scores["includes"].value == "C"
    assert sample.output.completion == "391"
    results = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
    assert [(m.function, m.text) for m in results] == [("multiply", "391")]
    steps = [e for e in sample.events if e.event == "info" and e.source == "step"]
    memory = [e for e in sample.events if e.event == "info" and e.source == "memory"]
    assert len(steps) == 2  # the tool call, then the submission
    if method == "pos":  # the belief after each step
        assert len(memory) >= len(steps) and all("belief" in json.dumps(e.data) for e in memory)
        assert "belief" in sample.role_usage
    else:
        assert not memory and set(sample.role_usage) == {"agent"}


def test_settings_reach_the_method():
    from pos_bench.inspect.agent import method_config

    node = method_config("pos", {"sentinel.enabled": False, "belief_max_tokens": 99})
    assert node["sentinel"]["enabled"] is False and node["belief_max_tokens"] == 99
    with pytest.raises(Exception, match="nope"):
        method_config("nope", {})


def test_a_failed_episode_is_the_samples_error_with_its_events_in_the_log(stub: TimedStub, tmp_path: Path):
    stub.faults.rule = lambda body: "400"  # every call refused
    [log] = inspect_eval(
        arithmetic_task("raw"), model=INSPECT_NAME, log_dir=str(tmp_path), display="none", fail_on_error=False
    )
    [sample] = read_eval_log(log.location).samples or []
    assert sample.error is not None and "RequestRefused" in sample.error.message
    failed = [e for e in sample.events if e.event == "model" and e.error]
    assert len(failed) == 1 and [e for e in sample.events if e.event == "error"]
