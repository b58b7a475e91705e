import json

import pytest

from baselines.hiagent import HiAgent
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Recorded, Transcript
from pos_bench.types import Brief, Decision, Observation, Step, ToolCall

BENCH = ToyBenchmark(n_tasks=2)
TASK = BENCH.tasks()[0]


def act(action, subgoal=None):
    reply = {"thought": "t", "action": action}
    if subgoal is not None:
        reply["subgoal"] = subgoal
    return json.dumps(reply)


def run(replies, *, max_turns, summaries=("SUMMARY-LINE",), **settings):
    log = Transcript()
    model = Recorded(ScriptedModel({"agent": replies, "summarizer": list(summaries)}), log)
    method = HiAgent(model, **settings)
    result = play(TASK, BENCH.make_env(model), method, model, brief=BENCH.brief, max_turns=max_turns, log=log)
    return result, log


def agent_calls(log):
    return [c for c in log.of_kind("call") if c["role"] == "agent"]


def user_text(call):
    return call["prompt"]["messages"][-1]["content"]


def enum(call):
    return call["prompt"]["schema"]["properties"]["action"]["enum"]


TWO_SUBGOALS = [act("inventory", "check hands"), act("look"), act("look", "scan room"), act("look")]


def test_a_new_subgoal_collapses_the_previous_one_into_its_summary():
    result, log = run(TWO_SUBGOALS, max_turns=4)
    roles = [c["role"] for c in log.of_kind("call")]
    assert roles == ["agent", "agent", "agent", "summarizer", "agent"]
    summarizer_input = user_text(log.of_kind("call")[3])
    assert "Subgoal: check hands" in summarizer_input and "You are not carrying anything." in summarizer_input
    prompt = user_text(agent_calls(log)[3])
    assert "[1] check hands — SUMMARY-LINE" in prompt
    assert "You are not carrying anything." not in prompt
    current = prompt.split("Current subgoal [2]: scan room\nIts steps:\n")[1].split("\n\n")[0]
    assert [s["action"] for s in json.loads(current)] == ["look"]
    assert result.report["subgoals"] == 2
    records = [e["record"] for e in log.of_kind("memory")]
    assert [r["closed"] for r in records if "closed" in r] == [{"id": 1, "summary": "SUMMARY-LINE"}]


def test_steps_before_the_first_subgoal_stay_raw_and_restating_the_subgoal_keeps_it_open():
    _, log = run([act("inventory"), act("look", "scan"), act("look", "scan"), act("look")], max_turns=4)
    prompt = user_text(agent_calls(log)[3])
    assert "Steps before the first subgoal" in prompt and "You are not carrying anything." in prompt
    current = prompt.split("Current subgoal [1]: scan\nIts steps:\n")[1].split("\n\n")[0]
    assert len(json.loads(current)) == 2
    assert "summarizer" not in [c["role"] for c in log.of_kind("call")]


def test_retrieve_restores_a_finished_subgoal_without_an_env_step():
    replies = [*TWO_SUBGOALS[:3], act("retrieve(1)"), act("look")]
    result, log = run(replies, max_turns=4)
    calls = agent_calls(log)
    assert "retrieve(1)" in enum(calls[3])
    assert (result.steps, result.meta_actions) == (4, 1)
    restored = user_text(calls[4])
    assert "[1] check hands (retrieved)" in restored and "You are not carrying anything." in restored
    assert "retrieve(1)" not in enum(calls[4])
    assert [e["record"] for e in log.of_kind("memory") if "retrieve" in e["record"]] == [
        {"retrieve": [1], "restored": [1]}
    ]
    assert result.report["meta_actions"] == {"retrieve": 1}


def test_a_new_subgoal_hides_retrieved_detail_again():
    replies = [*TWO_SUBGOALS[:3], act("retrieve(1)"), act("look", "third"), act("look")]
    _, log = run(replies, max_turns=5)
    last = user_text(agent_calls(log)[-1])
    assert "(retrieved)" not in last and "You are not carrying anything." not in last


def test_the_schema_requires_a_subgoal_only_while_none_is_open():
    _, log = run(TWO_SUBGOALS, max_turns=2)
    first, second = (c["prompt"]["schema"] for c in agent_calls(log))
    assert "subgoal" in first["required"] and "subgoal" not in second["required"]


def test_retrievals_are_capped_per_turn():
    replies = [
        act("inventory", "a"),
        act("look", "b"),
        act("look", "c"),
        act("retrieve(1)"),
        act("look"),
    ]
    _, log = run(replies, max_turns=4, max_retrievals_per_turn=1)
    calls = agent_calls(log)
    assert "retrieve(2)" in enum(calls[3])
    assert not [a for a in enum(calls[4]) if a.startswith("retrieve")]


def test_without_the_cache_every_prompt_resummarises_finished_subgoals():
    replies = [act("inventory", "a"), act("look", "b"), act("look", "c"), act("look")]
    _, cached = run(replies, max_turns=4)
    _, uncached = run(replies, max_turns=4, summary_cache=False)

    def count(log):
        return [c["role"] for c in log.of_kind("call")].count("summarizer")

    assert count(cached) == 2  # one per closed subgoal
    assert count(uncached) == 1 + 2  # turn 2 sees one finished subgoal, turn 3 two


def test_last_obs_summary_needs_no_model_call():
    _, log = run(TWO_SUBGOALS, max_turns=4, summarize="last_obs")
    assert "summarizer" not in [c["role"] for c in log.of_kind("call")]
    assert "[1] check hands — You are in the middle of a room." in user_text(agent_calls(log)[3])


def test_tool_benchmarks_get_retrieve_as_a_tool():
    tools = ({"type": "function", "function": {"name": "ask", "parameters": {"type": "object"}}},)
    method = HiAgent(ScriptedModel({"summarizer": ["S"]}))
    obs = Observation(text="answer", tools=tools, goal="diagnose")
    method.start(TASK, Brief(system="sys"), obs)
    for turn, subgoal in enumerate(["history", "labs"]):
        call = Decision("", ToolCall("ask", {"q": subgoal}), extra={"subgoal": subgoal})
        method.update(Step(turn, obs, call, obs))
    prompt = method.prompt(obs)
    assert prompt.meta_actions == ("retrieve",) and '"name": "retrieve"' in prompt.messages[1].content
    record = method.update(
        Step(2, obs, Decision("", None, meta=ToolCall("retrieve", {"subgoal_ids": [1, 7]})), None)
    )
    assert record == {"retrieve": [1, 7], "restored": [1]}
    assert "[1] history (retrieved)" in method.prompt(obs).messages[1].content


def test_bad_settings_are_rejected():
    with pytest.raises(ValueError, match="summarize"):
        HiAgent(ScriptedModel(), summarize="never")
