"""ReflAct (SPEC-BASE §9): each turn the policy writes a goal-state reflection in place of the thought (where it
is, what it holds, how that relates to the goal; the first one states the plan), then the action. Memory is
every earlier reflection, action and observation, as in raw. ALFWorld-style command benchmarks only; no extra
LLM calls. The few-shot examples are of the task's own type (`alfworld_examples`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from baselines.alfworld_examples import Episode, examples_for, to_2_1_2, uses_2_1_2
from baselines.raw import RawHistory
from pos_bench.prompting import decision_schema, example_section, policy_prompt, render_observation
from pos_bench.protocols import Model
from pos_bench.types import Brief, Observation, Prompt, Step, Task

INSTRUCTION = (
    'Write the key "reflection" where the reply contract says "thought". The reflection is one sentence on '
    "your state relative to the goal: where you are, what you are holding, and how that brings you closer to "
    "the goal or not. Your first reflection also states your plan. Every action must come from the available "
    'actions; "Nothing happens." means the last action was invalid.'
)


def render_examples(episodes: Sequence[Episode], modern: bool) -> str:
    fix = to_2_1_2 if modern else (lambda text: text)
    parts = []
    for episode in episodes:
        steps = [{"reflection": r, "action": fix(a), "observation": fix(o)} for r, a, o in episode.turns]
        parts.append(
            f"Example episode (task: {episode.task}):\n" + json.dumps(steps, indent=1, ensure_ascii=False)
        )
    return "\n\n".join(parts)


class ReflAct(RawHistory):
    """Raw history with a goal-state reflection in place of the thought; `n_examples` (1 or 2) episodes of the
    task's own type are shown (SPEC-BASE §9)."""

    def __init__(self, model: Model, *, max_json_retries: int = 2, n_examples: int = 1):
        if n_examples not in (1, 2):
            raise ValueError(f"n_examples must be 1 or 2, got {n_examples}")
        super().__init__(model, max_json_retries=max_json_retries)
        self.n_examples = n_examples

    def unsupported(self, first: Observation) -> str | None:
        if first.tools:
            return "method=reflact needs a command benchmark (ALFWorld or toy); this one acts through tools."
        return None

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        problem = self.unsupported(first)
        if problem:
            raise ValueError(problem)
        super().start(task, brief, first)
        self.examples = examples_for(task.meta, count=self.n_examples)

    def prompt(self, obs: Observation) -> Prompt:
        sections = [
            example_section(self.brief),
            INSTRUCTION,
            render_examples(self.examples.episodes, uses_2_1_2(obs.actions)),
            f"Task: {self.goal}",
            self.previous_steps(),  # before the observation: it only grows, so the prefix cache keeps it
            f"Current observation:\n{render_observation(obs)}",
        ]
        schema = decision_schema(obs, thought_key="reflection")
        return policy_prompt(
            self.brief,
            obs,
            sections,
            max_json_retries=self.max_json_retries,
            schema=schema,
        )

    def update(self, step: Step) -> Mapping[str, Any] | None:
        if step.after is None:
            return None
        # parse_decision files `reflection` under extra; a model that wrote "thought" instead still counts.
        reflection = step.decision.extra.get("reflection", step.decision.thought)
        self.history.append(
            {"reflection": str(reflection), "action": step.decision.action, "observation": step.after.text}
        )
        return None

    def report(self) -> Mapping[str, Any]:
        return {
            "history_steps": len(self.history),
            "empty_reflections": sum(not h["reflection"].strip() for h in self.history),
            "example_type": self.examples.task_type,
            "example_type_matched": self.examples.matched,
        }
