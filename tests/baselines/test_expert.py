"""The expert as an agent of known skill: slips and stuck stretches drawn per (task, trial), reproducibly."""

import itertools

import pytest

from baselines.expert import Expert
from pos_bench.types import Brief, Observation, Step, Task

ACTIONS = tuple(f"go to place {i}" for i in range(10))


def actions_taken(expert: Expert, task: Task, turns: int = 40) -> list[str]:
    obs = Observation("room", actions=ACTIONS, info={"plan": ["the plan's action"]})
    expert.start(task, Brief(system=""), obs)
    taken = []
    for turn in range(turns):
        decision = expert.prompt(obs)
        taken.append(decision.action)
        expert.update(Step(turn, obs, decision, obs))
    return taken


def test_no_slip_follows_the_plan_every_turn():
    assert set(actions_taken(Expert(), Task("t"))) == {"the plan's action"}


def test_slips_are_legal_actions_at_about_their_rate_and_reproducible_per_task_and_trial():
    taken = actions_taken(Expert(slip=0.5), Task("t"), turns=400)
    slips = [a for a in taken if a != "the plan's action"]
    assert set(slips) <= set(ACTIONS) and 0.35 < len(slips) / len(taken) < 0.65
    assert actions_taken(Expert(slip=0.5), Task("t")) == actions_taken(Expert(slip=0.5), Task("t"))
    assert actions_taken(Expert(slip=0.5), Task("t")) != actions_taken(Expert(slip=0.5), Task("t", trial=1))
    assert actions_taken(Expert(slip=0.5, seed=1), Task("t")) != actions_taken(Expert(slip=0.5), Task("t"))


def test_a_stuck_stretch_repeats_the_last_action_its_number_of_times():
    taken = actions_taken(Expert(slip=0.5, repeat=0.2, repeat_times=4), Task("t"), turns=400)
    runs, current = [], 1
    for before, after in itertools.pairwise(taken):
        current = current + 1 if after == before else 1
        runs.append(current)
    assert max(runs) >= 5  # the repeated action plus four repeats


@pytest.mark.parametrize("settings", [{"slip": -0.1}, {"slip": 1.5}, {"repeat": 2}, {"repeat_times": 0}])
def test_settings_out_of_range_are_refused(settings):
    with pytest.raises(ValueError, match="method"):
        Expert(**settings)


def test_a_slip_needs_listed_actions():
    assert Expert(slip=0.1).unsupported(Observation("tools only")) is not None
    assert Expert().unsupported(Observation("tools only")) is None
