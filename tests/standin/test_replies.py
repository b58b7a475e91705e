"""The stand-in's replies: schema-valid, a legal action for a policy, so every method plays its full length."""

import json

import pytest
from hydra.utils import instantiate

from pos_bench import events
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.prompting import decision_schema, policy_prompt
from pos_bench.standin.replies import FREE_TEXT, prompt_reply, reply_text
from pos_bench.transcript import Recorded, Transcript
from pos_bench.types import Brief, Observation, Prompt
from tests.golden.test_golden import BENCHES, METHODS, composed

TOOLS = (
    {
        "type": "function",
        "function": {
            "name": "ask",
            "parameters": {
                "type": "object",
                "properties": {"question": {"type": "string", "minLength": 4}, "depth": {"type": "integer"}},
                "required": ["question"],
            },
        },
    },
    {"type": "function", "function": {"name": "submit", "parameters": {"type": "object", "properties": {}}}},
)


def body(prompt: Prompt, response_format: str = "json_schema") -> dict:
    """The request `OpenAIModel` sends for `prompt`."""
    request = {
        "model": "standin",
        "messages": [{"role": m.role, "content": m.content} for m in prompt.messages],
    }
    if prompt.schema is not None and response_format == "json_schema":
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": prompt.schema},
        }
    elif prompt.schema is not None and response_format == "json_object":
        request["response_format"] = {"type": "json_object"}
    return request


def standin(prompt: Prompt, index: int) -> str:
    return reply_text(body(prompt))


def policy(obs: Observation, max_actions: int = 1) -> Prompt:
    brief = Brief(system="play", max_actions_per_turn=max_actions)
    return policy_prompt(brief, obs, ["the task"])


def test_a_command_policy_gets_the_first_admissible_command():
    reply = json.loads(reply_text(body(policy(Observation(text="", actions=("open box", "look"))))))
    assert reply == {"thought": "x", "action": "open box"}


def test_a_tool_call_gets_the_smallest_arguments_its_tool_accepts():
    reply = json.loads(reply_text(body(policy(Observation(text="", tools=TOOLS)))))
    assert reply["action"] == {"name": "ask", "arguments": {"question": "xxxx"}}


@pytest.mark.parametrize("mode", ["json_object", "none"])
def test_without_a_schema_the_decision_is_read_off_the_prompt(mode):
    commands = json.loads(reply_text(body(policy(Observation(text="", actions=("go north", "wait"))), mode)))
    tools = json.loads(reply_text(body(policy(Observation(text="", tools=TOOLS), max_actions=3), mode)))
    assert commands["action"] == "go north"
    assert tools["actions"] == [{"name": "ask", "arguments": {"question": "xxxx"}}]


def test_a_multi_action_schema_gets_one_action():
    obs = Observation(text="", actions=("a", "b"))
    reply = json.loads(
        reply_text(body(Prompt(messages=policy(obs).messages, schema=decision_schema(obs, max_actions=3))))
    )
    assert reply["actions"] == ["a"]


def test_the_estimate_s_responder_answers_as_the_stand_in_does_over_the_wire():
    tool_call = policy(Observation(text="", tools=TOOLS))
    summary = Prompt(messages=policy(Observation(text="")).messages[:1])
    for prompt in (tool_call, summary, policy(Observation(text="", actions=("open box", "look")))):
        assert prompt_reply(prompt, 7) == reply_text(body(prompt))
    assert json.loads(prompt_reply(tool_call))["action"]["arguments"] == {"question": "xxxx"}


def test_a_request_without_schema_or_actions_gets_a_sentence():
    assert reply_text({"messages": [{"role": "user", "content": "Summarise the history."}]}) == FREE_TEXT


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bench", sorted(BENCHES))
def test_every_method_plays_to_its_turn_budget_on_stand_in_replies(bench, method):
    plain, benchmark = composed(bench, method)
    task = benchmark.tasks()[0]
    log = Transcript()
    model = Recorded(ScriptedModel(default=standin), log)
    env = benchmark.make_env(model)
    try:
        with instantiate(plain["method"], _convert_="all")(model=model) as built:
            if built.unsupported(env.reset(task)):
                pytest.skip(f"{method} does not play {bench}")
            result = play(
                task, env, built, model, brief=benchmark.brief, max_turns=benchmark.max_turns, log=log
            )
    finally:
        env.close()
    failures = [e for e in log.events if isinstance(e, (events.ParseFailure, events.TurnSpent))]
    assert (result.turns, result.steps, failures) == (benchmark.max_turns, benchmark.max_turns, [])
