import json

import pytest

from baselines.lh_harness.method import DONE_NOTE, LongHorizonHarness
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Recorded, Transcript

BENCH = ToyBenchmark(n_tasks=4)
TASK = BENCH.tasks()[0]


def act(action, thought=""):
    return json.dumps({"thought": thought, "action": action})


def plan(subtask="explore", *, completed=(), next_route="act", related=()):
    return json.dumps(
        {
            "task_state": {
                "completed": [{"fact": f, "rounds": list(r)} for f, r in completed],
                "incomplete": ["find the target"],
                "blockers": [],
                "untrusted": [],
            },
            "contract": "target object in the goal receptacle",
            "next": next_route,
            "subtask": subtask,
            "acceptance_criteria": ["the observation shows it"],
            "related_rounds": list(related),
        }
    )


def audit(facts=(), *, status="incomplete", integrity="clean", contract="aligned"):
    return json.dumps(
        {
            "status": status,
            "integrity": integrity,
            "contract_audit": contract,
            "verified_facts": [{"fact": f, "step": s} for f, s in facts],
            "evidence": ["quoted"],
            "gaps": [],
            "state_update": "none",
        }
    )


def run(replies, *, max_turns=5, **settings):
    log = Transcript()
    model = Recorded(ScriptedModel(replies), log)
    method = LongHorizonHarness(model, **settings)
    result = play(TASK, BENCH.make_env(model), method, model, brief=BENCH.brief, max_turns=max_turns, log=log)
    calls = log.of_kind("call")
    return result, calls


def user_text(call):
    return (
        call["prompt"]["messages"][-1]["content"]
        if call["role"] != "agent"
        else call["prompt"]["messages"][1]["content"]
    )


def test_manager_before_and_auditor_after_each_round_and_no_turns_spent_on_them():
    replies = {"agent": [act("look")], "manager": [plan()], "auditor": [audit()]}
    result, calls = run(replies, max_turns=5, steps_per_round=2)
    assert [c["role"] for c in calls] == [
        "manager",
        "agent",
        "agent",
        "auditor",
        "manager",
        "agent",
        "agent",
        "auditor",
        "manager",
        "agent",
    ]
    assert (result.turns, result.steps) == (5, 5)
    assert result.report["rounds"] == 3 and result.report["manager_calls"] == 3
    assert result.report["auditor_calls"] == 2 and result.report["unaudited_steps"] == 1


def test_executor_sees_only_its_rounds_pairs_and_the_audited_state():
    replies = {
        "agent": [act("inventory", "I hold nothing"), act("look"), act("examine cabinet 1"), act("look")],
        "manager": [plan("check hands"), plan("look around")],
        "auditor": [audit([("the agent holds nothing", 1)])],
    }
    _, calls = run(replies, max_turns=4, steps_per_round=2)
    agent = [user_text(c) for c in calls if c["role"] == "agent"]
    assert "none yet" in agent[0].split("This round's steps so far:")[1]
    assert "You are not carrying anything." in agent[1]  # its own pair, same round
    round_two = agent[2]
    assert "You are not carrying anything." not in round_two and "I hold nothing" not in round_two
    assert "[round 1, step 1] the agent holds nothing" in round_two
    assert "look around" in round_two and "check hands" not in round_two
    assert '"action": "examine cabinet 1"' in agent[3] and '"action": "inventory"' not in agent[3]


def test_only_auditor_verified_and_cited_facts_enter_the_state():
    replies = {
        "agent": [act("inventory", "I already hold the mug 1"), act("look")],
        "manager": [plan(), plan(completed=[("hands are empty", [1]), ("mug found", [7])], related=[1, 7])],
        "auditor": [audit([("hands are empty", 1), ("a mug is in hand", 9)]), audit()],
    }
    result, calls = run(replies, max_turns=2, steps_per_round=1)
    state = user_text([c for c in calls if c["role"] == "agent"][1]).split("Contract:")[0]
    assert "[round 1, step 1] hands are empty" in state
    assert "a mug is in hand" not in state and "I already hold the mug 1" not in state
    completed = state.split("Completed:")[1].split("Untrusted")[0]
    assert "hands are empty (rounds 1)" in completed and "mug found" not in completed
    assert "mug found" in state.split("Untrusted (not verified):")[1]
    assert result.report["uncited_facts_rejected"] == 1 and result.report["uncited_facts_demoted"] == 1
    assert result.report["verified_facts"] == ["[round 1, step 1] hands are empty"]


def test_malformed_auditor_header_gets_one_format_repair():
    bad = audit([("hands are empty", 1)], status="finished")
    replies = {
        "agent": [act("inventory")],
        "manager": [plan()],
        "auditor": [bad, audit([("hands are empty", 1)])],
    }
    result, calls = run(replies, max_turns=2, steps_per_round=1)
    auditor = [c for c in calls if c["role"] == "auditor"]
    assert len(auditor) == 3  # round 1: bad + repair; round 2: valid at once
    repair = auditor[1]["prompt"]["messages"]
    assert (
        repair[-2] == {"role": "assistant", "content": bad} and "could not be used" in repair[-1]["content"]
    )
    assert result.report["auditor_repairs"] == 1 and result.report["audit_failures"] == 0
    assert result.report["verified_facts"][0] == "[round 1, step 1] hands are empty"


def test_a_header_still_malformed_after_the_repair_admits_nothing():
    bad = audit([("hands are empty", 1)], integrity="fine")
    replies = {"agent": [act("inventory")], "manager": [plan()], "auditor": [bad]}
    result, calls = run(replies, max_turns=1, steps_per_round=1, header_repair_calls=1)
    assert sum(c["role"] == "auditor" for c in calls) == 2
    assert result.report["audit_failures"] == 1 and result.report["verified_facts"] == []


def test_done_needs_a_clean_audit_and_never_ends_the_episode():
    replies = {
        "agent": [act("look")],
        "manager": [plan(next_route="done")],
        "auditor": [audit(status="complete", integrity="clean", contract="aligned")],
    }
    result, calls = run(replies, max_turns=3, steps_per_round=1)
    agent = [user_text(c) for c in calls if c["role"] == "agent"]
    assert DONE_NOTE not in agent[0]  # no audit yet: overruled to act
    assert DONE_NOTE in agent[1]
    assert result.turns == 3 and result.report["done_overruled"] == 1


def test_the_environment_ending_the_episode_closes_and_audits_the_round():
    plan_actions = BENCH.make_expert_env(None).reset(TASK).info["plan"]
    replies = {"agent": [act(a) for a in plan_actions], "manager": [plan()], "auditor": [audit()]}
    result, calls = run(replies, max_turns=20, steps_per_round=len(plan_actions) + 2)
    assert result.success and calls[-1]["role"] == "auditor"
    assert result.report["unaudited_steps"] == 0 and result.report["auditor_calls"] == 1


def test_a_spent_last_turn_still_closes_the_round():
    replies = {
        "agent": [act("look"), '{"thought": "no action"}', '{"thought": "no action"}', act("look")],
        "manager": [plan()],
        "auditor": [audit()],
    }
    result, calls = run(replies, max_turns=3, steps_per_round=2)
    assert result.spent_turns == 1
    roles = [c["role"] for c in calls]
    assert roles == ["manager", "agent", "agent", "agent", "auditor", "manager", "agent"]


def test_settings_are_validated():
    with pytest.raises(ValueError, match="auditor_probes"):
        LongHorizonHarness(ScriptedModel(), auditor_probes=True)
    with pytest.raises(ValueError, match="steps_per_round"):
        LongHorizonHarness(ScriptedModel(), steps_per_round=0)


def test_a_round_of_one_multi_action_turn_is_audited_with_all_its_actions():
    import dataclasses

    brief = dataclasses.replace(BENCH.brief, max_actions_per_turn=3)
    replies = {
        "agent": [json.dumps({"thought": "", "actions": ["look", "inventory", "look"]})],
        "manager": [plan()],
        "auditor": [audit()],
    }
    log = Transcript()
    model = Recorded(ScriptedModel(replies), log)
    method = LongHorizonHarness(model, steps_per_round=1)
    result = play(TASK, BENCH.make_env(model), method, model, brief=brief, max_turns=2, log=log)
    assert result.steps == 6
    calls = log.of_kind("call")
    assert [c["role"] for c in calls] == ["manager", "agent", "auditor"] * 2
    audited = calls[2]["prompt"]["messages"][-1]["content"]
    assert "step 3:" in audited and "step 4:" not in audited
