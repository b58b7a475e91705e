"""The engine's own expert as a policy: no model, a sanity check of benchmark and harness, and an agent of known
skill for checking the statistics (`scripts/calibrate_stats.py`).

It follows `info["plan"]`, which a benchmark's expert environment provides (`ExpertBenchmark.make_expert_env`:
ALFWorld's planner, the toy household's oracle); `conf/method/expert.yaml` asks the runner for that environment.
With `slip` > 0 it takes, on each turn with that probability, a uniformly random legal action instead of the
plan's (the expert environment plans again from wherever that leads); with `repeat` > 0 it starts, with that
probability, a stuck stretch that repeats its last action `repeat_times` times. Both draws are seeded by
(`seed`, task id, trial), so an episode is the same every time it is played and the trials of a task differ.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from pos_bench.protocols import MethodBase, Model
from pos_bench.types import Action, Brief, Decision, Observation, Step, Task


class Expert(MethodBase):
    def __init__(
        self,
        model: Model | None = None,
        *,
        slip: float = 0.0,
        repeat: float = 0.0,
        repeat_times: int = 3,
        seed: int = 0,
    ):
        """
        Args:
            slip: per turn, the probability of a uniformly random legal action instead of the plan's.
            repeat: per turn, the probability of starting a stuck stretch (the last action again).
            repeat_times: how many turns a stuck stretch repeats the last action.
            seed: mixed with the task id and trial into each episode's random draws.
        """
        for name, p in (("slip", slip), ("repeat", repeat)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"method.{name} must be a probability in [0, 1], got {p}")
        if repeat_times < 1:
            raise ValueError(f"method.repeat_times must be ≥ 1, got {repeat_times}")
        self.slip, self.repeat, self.repeat_times, self.seed = slip, repeat, repeat_times, seed
        self.followed = self.slipped = self.repeated = 0
        self.rng = random.Random()
        self.last: Action | None = None
        self.stuck = 0

    def unsupported(self, first: Observation) -> str | None:
        if self.slip > 0 and not first.actions:
            return "method.slip needs a benchmark that lists its legal actions (toy, alfworld)"
        return None

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        self.rng = random.Random(f"{self.seed}|{task.id}|{task.trial}")
        self.last, self.stuck = None, 0

    def prompt(self, obs: Observation) -> Decision:
        plan = obs.info.get("plan")
        if plan is None:
            raise ValueError(
                "method=expert needs the benchmark's expert environment (observations carrying info['plan']); "
                "run it with the expert: true that conf/method/expert.yaml sets"
            )
        # Both draws happen on every turn, so one setting's draws do not shift the other's.
        starts_stuck, slips = self.rng.random() < self.repeat, self.rng.random() < self.slip
        if self.last is not None and (self.stuck or starts_stuck):
            self.stuck = (self.stuck or self.repeat_times) - 1
            self.repeated += 1
            return Decision(thought="stuck: the same action again", action=self.last)
        if slips and obs.actions:
            self.slipped += 1
            return Decision(thought="a slip: a random legal action", action=self.rng.choice(obs.actions))
        self.followed += 1
        return Decision(thought="follow the expert plan", action=plan[0] if plan else None)

    def update(self, step: Step) -> Mapping[str, Any] | None:
        if step.decision.action is not None:
            self.last = step.decision.action
        return None

    def report(self) -> Mapping[str, Any]:
        return {"expert_actions": self.followed, "slips": self.slipped, "repeats": self.repeated}
