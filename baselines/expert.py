"""The engine's own expert as a policy: no model, a sanity check of benchmark and harness.

It follows `info["expert_plan"]`, which ALFWorld's planner (and the toy household's oracle) provide.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pos_bench.protocols import MethodBase, Model
from pos_bench.types import Brief, Decision, Observation, Step, Task


class Expert(MethodBase):
    def __init__(self, model: Model | None = None):
        self.followed = 0

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        return None

    def prompt(self, obs: Observation) -> Decision:
        plan = obs.info.get("expert_plan")
        if plan is None:
            raise ValueError(
                "method=expert needs a benchmark whose observations carry info['expert_plan'] "
                "(bench=alfworld or bench=toy with bench.expert_plan=true, which conf/method/expert.yaml sets)"
            )
        return Decision(thought="follow the expert plan", action=plan[0] if plan else None)

    def update(self, step: Step) -> Mapping[str, Any] | None:
        self.followed += 1
        return None

    def report(self) -> Mapping[str, Any]:
        return {"expert_actions": self.followed}
