"""The engine's own expert as a policy: no model, a sanity check of benchmark and harness.

It follows `info["plan"]`, which a benchmark's expert environment provides (`ExpertBenchmark.make_expert_env`:
ALFWorld's planner, the toy household's oracle); `conf/method/expert.yaml` asks the runner for that environment.
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
        plan = obs.info.get("plan")
        if plan is None:
            raise ValueError(
                "method=expert needs the benchmark's expert environment (observations carrying info['plan']); "
                "run it with the expert: true that conf/method/expert.yaml sets"
            )
        return Decision(thought="follow the expert plan", action=plan[0] if plan else None)

    def update(self, step: Step) -> Mapping[str, Any] | None:
        self.followed += 1
        return None

    def report(self) -> Mapping[str, Any]:
        return {"expert_actions": self.followed}
