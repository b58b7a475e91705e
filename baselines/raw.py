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
        self._shown: list[str] = []
        """Each step of `history` as it stands in the prompt's list, written once (`previous_steps`)."""

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
        """Every earlier step in full, as a JSON list (the initial observation is not part of it), indented by
        one space per level. The history only grows, so each step is written once and the list joined from the
        written steps: the same text as writing the whole list at every turn, which cost a pure-Python encoder
        pass over every step so far (the indented form is not the C encoder's)."""
        if not self.history:
            return "Previous steps:\nnone yet"
        for step in self.history[len(self._shown) :]:  # within the list, each line one level deeper
            self._shown.append(" " + json.dumps(step, indent=1, ensure_ascii=False).replace("\n", "\n "))
        return "Previous steps:\n[\n" + ",\n".join(self._shown) + "\n]"

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
