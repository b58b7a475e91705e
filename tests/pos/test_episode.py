"""End to end through the shared loop: a scripted model drives PoS through validated, repaired and rejected
updates and a trapped stretch (constraint in the next policy prompt, released when H rises); asserted on the
transcript (SPEC-POS §5, §7.5, §12.6)."""

from __future__ import annotations

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
