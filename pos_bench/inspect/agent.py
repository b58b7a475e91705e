"""`method_agent("pos", **settings)`: any pos_bench method as an inspect agent, for any inspect task with tools.

    from pos_bench.inspect import method_agent
    Task(dataset=..., solver=[use_tools(search(), calculator()), method_agent("pos")], scorer=...)

The method plays pos_bench's own loop (`pos_bench.loop.play`) in a worker thread, on the sample's tools
(`tool_env.ToolEnv`): its actions are inspect tool calls, its answer goes to `submit` and becomes the sample's
output. Its model calls are the sample model's (a method role bound with `--model-role <role>=…` gets that
model). When the episode ends, its transcript joins the sample's with the export's mapping: a span per turn with
every model call, step and memory record (PoS's belief per step). `settings` are the method's keys
(`conf/method/<method>.yaml`), as `-T method.<key>=` sets them on a pos_bench task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.tool import Tool, ToolDef

DEFAULT_MAX_TURNS = 20


def method_config(method: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The method's config node, with `settings` set under it (dotted keys reach nested settings)."""
    from omegaconf import OmegaConf

    from pos_bench.estimate import compose
    from pos_bench.inspect.config import hydra_value

    overrides = [f"method={method}", *(f"++method.{k}={hydra_value(v)}" for k, v in settings.items())]
    node = OmegaConf.to_container(compose(overrides).method, resolve=True)
    assert isinstance(node, dict)
    return node


@agent(name="method_agent")
def method_agent(
    method: str = "pos",
    *,
    tools: Sequence[Tool | ToolDef] | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    **settings: Any,
) -> Agent:
    """An inspect agent playing the pos_bench method `method`.

    Args:
        method: a member of `conf/method/` (pos, raw, compaction, reflact, …).
        tools: the action space; default: the sample's tools (`use_tools`).
        max_turns: the episode's turn budget.
        **settings: the method's settings (`sentinel={"enabled": False}` or `**{"sentinel.enabled": False}`).
    """
    node = method_config(method, settings)

    async def execute(state: AgentState) -> AgentState:
        import anyio
        from inspect_ai.model import ModelOutput, get_model
        from inspect_ai.solver._task_state import sample_state

        from pos_bench.inspect.tasks import add_to_transcript
        from pos_bench.inspect.tool_env import ToolEnv, task_text
        from pos_bench.models.inspect_bridge import calls_to_this_loop

        offered = list(tools) if tools is not None else list(getattr(sample_state(), "tools", []) or [])
        defs = [t if isinstance(t, ToolDef) else ToolDef(t) for t in offered]
        model = str(get_model())
        env = ToolEnv(defs, state.messages, task_text(state.messages))
        with calls_to_this_loop():
            episode, error = await anyio.to_thread.run_sync(play_agent_episode, node, env, max_turns)
        add_to_transcript(episode, model)
        if error is not None:
            raise error
        if env.answer is not None:
            state.output = ModelOutput.from_content(model, env.answer)
        return state

    return execute


def play_agent_episode(
    node: Mapping[str, Any], env: Any, max_turns: int
) -> tuple[list[Any], Exception | None]:
    """Play one episode of the method `node` on `env` with the sample's model; returns its transcript events and
    the error that ended it, if one did (the agent raises it after the events joined the log, so inspect records
    the sample's error with the steps that led to it)."""
    from pos_bench import events
    from pos_bench.build import build
    from pos_bench.inspect.tool_env import BRIEF
    from pos_bench.loop import play
    from pos_bench.models.inspect_model import InspectModel
    from pos_bench.transcript import Recorded, Transcript
    from pos_bench.types import Task

    log = Transcript()
    model = Recorded(InspectModel(None, max_retries=None, timeout=None), log)
    failure: Exception | None = None
    try:
        with build(dict(node))(model=model) as method:
            play(Task("sample"), env, method, model, brief=BRIEF, max_turns=max_turns, log=log)
    except Exception as error:  # noqa: BLE001 - raised again on the event loop, after the log is written
        log.write(events.Error(error=f"{type(error).__name__}: {error}"))
        failure = error
    finally:
        log.close()
    return events.parse_all(log.events), failure
