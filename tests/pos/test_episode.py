"""End to end through the shared loop: a scripted model drives PoS through validated, repaired and rejected
updates and a trapped stretch (constraint in the next policy prompt, released when H rises); asserted on the
transcript (SPEC-POS §5, §7.5, §12.6)."""

from __future__ import annotations

import json

import pytest

from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.pos.method import Pos
from pos_bench.transcript import Recorded, Transcript

from .script import PosScript, delta, grounded_issue, moved

CLEAN = {"issues": []}


def flag(prompt):
    return {"issues": [grounded_issue(prompt)]}


def scenario() -> PosScript:
    # updates 1-4 keep the world still (Static trap once K=4 labels of 0 are in), later ones move it
    updates = [delta()] * 5 + [moved(n) for n in range(5, 40)]
    # init, step0 validated, step1 repaired (flag → repair → clean), step2 rejected (flag → repair → flag), then clean
    audits = [CLEAN, CLEAN, flag, CLEAN, flag, flag, CLEAN]
    judges = [{"progress": 0, "score": 0.0, "affected_record_ids": [], "reason": "same"}] * 6 + [
        {"progress": 1, "score": 1.0, "affected_record_ids": [], "reason": "new"}
    ]
    return PosScript(updates=updates, audits=audits, judges=judges)


def play_episode(bench, task, max_turns: int):
    log = Transcript()
    model = Recorded(scenario().model(), log)
    env = bench.make_env(model)
    method = Pos(model, trapping={"window_size": 4, "max_cycle_length": 2})
    result = play(task, env, method, model, brief=bench.brief, max_turns=max_turns, log=log)
    env.close()
    return result, log, model.usage


def check_transcript(result, log: Transcript, usage) -> None:
    memory = [e["record"] for e in log.of_kind("memory")]
    assert [m["status"] for m in memory[:3]] == ["validated", "repaired", "rejected"]
    assert memory[2]["committed_belief"] == result.report["belief_update_history"][2]["final_belief"]
    assert result.report["belief_sentinel"]["pending_issues"]
    trapped_at = next(m["step"] for m in memory if m["recovery"])
    assert memory[trapped_at]["health"]["health_score"] <= 0.25
    agent_calls = [e for e in log.of_kind("call") if e["role"] == "agent"]
    shown = ["Recovery constraint" in c["prompt"]["messages"][1]["content"] for c in agent_calls]
    assert not any(shown[: trapped_at + 1]) and shown[trapped_at + 1]
    released = next(m for m in memory if any(r["status"] == "health_recovered" for r in m["recovery_ended"]))
    assert released["health"]["health_score"] > 0.25
    assert not shown[released["step"] + 1]
    assert {"agent", "belief", "sentinel_consistency", "sentinel_progress"} <= set(usage)


def test_toy_episode_paths():
    bench = ToyBenchmark(n_tasks=1, max_turns=14)
    check_transcript(*play_episode(bench, bench.tasks()[0], 14))


@pytest.mark.engine
def test_alfworld_episode_paths(shared):
    from pos_bench.benchmarks.alfworld.benchmark import AlfWorldBenchmark

    bench = AlfWorldBenchmark(limit=1, max_turns=14)
    check_transcript(*play_episode(bench, bench.tasks()[0], 14))


QUERIES = [{"name": n, "arguments": {}} for n in ("get_data_overview", "get_alerts", "list_metric_names")]
SUBMIT_CALL = {
    "name": "submit_root_cause",
    "arguments": {"root_cause_entity": "cart", "fault_type": "nodeDown"},
}


def play_rca(agent_replies, max_turns: int):
    from pos_bench.benchmarks.rca.benchmark import RCABenchmark

    bench = RCABenchmark(source="synthetic", n_synthetic=1)
    log = Transcript()
    model = Recorded(PosScript(agent=agent_replies).model(), log)
    env = bench.make_env(model)
    result = play(bench.tasks()[0], env, Pos(model), model, brief=bench.brief, max_turns=max_turns, log=log)
    env.close()
    return result, log, model.usage


def test_t60_three_actions_in_a_turn_are_three_belief_updates():
    reply = json.dumps({"thought": "scope the incident", "actions": QUERIES})
    result, log, usage = play_rca([reply], max_turns=2)
    assert (result.turns, result.steps) == (2, 6)
    assert usage["agent"].calls == 2
    memory = [e["record"] for e in log.of_kind("memory")]
    assert [m["step"] for m in memory] == list(range(6))
    assert len(result.report["belief_update_history"]) == 1 + 6  # the initial belief, then one per action


def test_t60_a_submission_as_action_two_ends_the_episode_and_action_three_never_runs():
    reply = json.dumps({"thought": "done", "actions": [QUERIES[0], SUBMIT_CALL, QUERIES[1]]})
    result, log, _ = play_rca([reply], max_turns=3)
    assert (result.turns, result.steps) == (1, 2)
    assert [e["action"]["name"] for e in log.of_kind("step")] == ["get_data_overview", "submit_root_cause"]
    assert len(result.report["belief_update_history"]) == 1 + 2


def test_rca_under_pos_shows_no_format_example_or_hint():
    from pos_bench.benchmarks.rca.benchmark import REASONING_HINT

    reply = json.dumps({"thought": "t", "actions": QUERIES[:1]})
    _, log, _ = play_rca([reply], max_turns=1)
    agent = next(e for e in log.of_kind("call") if e["role"] == "agent")
    user = agent["prompt"]["messages"][1]["content"]
    assert REASONING_HINT not in user and "Example" not in user
    # the tool catalog opens the prompt (it never changes, so a prefix cache keeps it); the observation follows
    assert user.startswith("Available tools:") and "Current observation:" in user


def test_t63_a_terminal_belief_failure_reaches_the_result_and_transcript_with_the_spec_step():
    # turn 0 runs two actions; the submission (env step 1) ends the episode and its belief update fails
    reply = json.dumps({"thought": "done", "actions": [QUERIES[0], SUBMIT_CALL]})
    from pos_bench.benchmarks.rca.benchmark import RCABenchmark

    bench = RCABenchmark(source="synthetic", n_synthetic=1)
    log = Transcript()
    model = Recorded(PosScript(agent=[reply], updates=[delta(), "not json"]).model(), log)
    env = bench.make_env(model)
    result = play(bench.tasks()[0], env, Pos(model), model, brief=bench.brief, max_turns=3, log=log)
    env.close()
    assert (result.status, result.turns, result.steps) == ("done", 1, 2)
    ((error), *rest) = result.context_errors
    assert not rest and (error["step"], error["phase"], error["error_type"]) == (1, "update", "BeliefFailure")
    (event,) = log.of_kind("context_error")
    assert (event["step"], event["error_type"]) == (1, "BeliefFailure")
    assert result.report["context_errors"][0]["step"] == error["step"]  # one numbering: the env step
