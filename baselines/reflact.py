"""ReflAct (SPEC-BASE §9): each turn the policy writes a goal-state reflection in place of the thought (where it
is, what it holds, how that relates to the goal; the first one states the plan), then the action. Memory is
every earlier reflection, action and observation, as in raw. ALFWorld-style command benchmarks only; no extra
LLM calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from baselines.raw import RawHistory
from baselines.stateact import to_2_1_2, uses_2_1_2
from pos_bench.prompting import decision_model, policy_prompt, render_observation
from pos_bench.types import Brief, Observation, Prompt, Step, Task

INSTRUCTION = (
    'Write the key "reflection" where the reply contract says "thought". The reflection is one sentence on '
    "your state relative to the goal: where you are, what you are holding, and how that brings you closer to "
    "the goal or not. Your first reflection also states your plan. Every action must come from the available "
    'actions; "Nothing happens." means the last action was invalid.'
)

# A fictional episode in 2.1.1 text: (reflection, action, observation) per turn.
EXAMPLE_TASK = "put a clean spoon in drawer."
EXAMPLE_TURNS = (
    (
        (
            "I am in the middle of the room holding nothing; plan: find a spoon, clean it at the sinkbasin, then put "
            "it in the drawer, starting with the countertop."
        ),
        "go to countertop 1",
        "You arrive at loc 2. On the countertop 1, you see a spoon 3, and a bowl 1.",
    ),
    (
        "I am at countertop 1 holding nothing and a spoon 3 is here, the object my goal needs.",
        "take spoon 3 from countertop 1",
        "You pick up the spoon 3 from the countertop 1.",
    ),
    (
        "I hold spoon 3 but it is not clean yet, so the sinkbasin comes before the drawer.",
        "go to sinkbasin 1",
        "You arrive at loc 5. On the sinkbasin 1, you see nothing.",
    ),
    (
        "I am at sinkbasin 1 holding the unclean spoon 3; cleaning it here satisfies the first half of the goal.",
        "clean spoon 3 with sinkbasin 1",
        "You clean the spoon 3 using the sinkbasin 1.",
    ),
    (
        "I hold a clean spoon 3; only placing it in the drawer remains.",
        "go to drawer 1",
        "You arrive at loc 1. On the drawer 1, you see a fork 2.",
    ),
    (
        "I am at drawer 1 holding the clean spoon 3, so putting it here completes the goal.",
        "put spoon 3 in/on drawer 1",
        "You put the spoon 3 in/on the drawer 1.",
    ),
)


def render_example(modern: bool) -> str:
    fix = to_2_1_2 if modern else (lambda text: text)
    steps = [{"reflection": r, "action": fix(a), "observation": fix(o)} for r, a, o in EXAMPLE_TURNS]
    return f"Example episode (task: {EXAMPLE_TASK}):\n" + json.dumps(steps, indent=1, ensure_ascii=False)


class ReflAct(RawHistory):
    """Raw history with a goal-state reflection in place of the thought."""

    def unsupported(self, first: Observation) -> str | None:
        if first.tools:
            return "method=reflact needs a command benchmark (ALFWorld or toy); this one acts through tools."
        return None

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        problem = self.unsupported(first)
        if problem:
            raise ValueError(problem)
        super().start(task, brief, first)

    def prompt(self, obs: Observation) -> Prompt:
        sections = [
            self.brief.example,
            INSTRUCTION,
            render_example(uses_2_1_2(obs)),
            f"Task: {self.goal}",
            f"Current observation:\n{render_observation(obs)}",
            self.previous_steps(),
        ]
        schema = decision_model(obs, thought_key="reflection").model_json_schema()
        return policy_prompt(
            self.brief,
            obs,
            sections,
            max_tokens=self.brief.policy_max_tokens,
            max_repairs=self.max_json_retries,
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
        }
