"""Raw trajectory (ReAct): the policy sees the task, the current observation and every earlier step in full
(SPEC-BASE §3)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pos_bench.prompting import example_section, policy_prompt, render_observation
from pos_bench.protocols import MethodBase, Model
from pos_bench.types import Brief, Observation, Prompt, Step, Task, action_json


class RawHistory(MethodBase):
    def __init__(self, model: Model, *, max_json_retries: int = 2):
        if max_json_retries < 0:
            raise ValueError(f"max_json_retries must be ≥ 0, got {max_json_retries}")
        self.model = model
        self.max_json_retries = max_json_retries
        self.history: list[dict[str, Any]] = []

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        self.brief = brief
        self.goal = first.goal

    def prompt(self, obs: Observation) -> Prompt:
        sections = [
            example_section(self.brief),
            f"Task: {self.goal}",
            self.previous_steps(),  # before the observation: it only grows, so the prefix cache keeps it
            f"Current observation:\n{render_observation(obs)}",
        ]
        return policy_prompt(
            self.brief,
            obs,
            sections,
            max_json_retries=self.max_json_retries,
        )

    def previous_steps(self) -> str:
        """Every earlier step in full, as a JSON list (the initial observation is not part of it)."""
        return "Previous steps:\n" + (
            json.dumps(self.history, indent=1, ensure_ascii=False) if self.history else "none yet"
        )

    def update(self, step: Step) -> Mapping[str, Any] | None:
        if step.after is not None:
            self.history.append(
                {
                    "thought": step.decision.thought,
                    "action": action_json(step.decision.action),
                    "observation": step.after.text,
                }
            )
        return None

    def report(self) -> Mapping[str, Any]:
        return {"history_steps": len(self.history)}
