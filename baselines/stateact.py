"""StateAct (SPEC-BASE §8): before each action the policy writes a state block (goal, locations visited, current
location, current inventory, thought); its memory is the episode in StateAct's text form. ALFWorld-style
command benchmarks only. No extra LLM calls.

The state block is realised as extra decision fields ahead of the action in the JSON schema, in StateAct's key
order. The two few-shot examples are of the task's own type (`alfworld_examples`), written in 2.1.1 text and
corrected to 2.1.2 (`put X in/on Y` → `move X to Y`, plus the matching feedback lines) when the admissible list
shows the 2.1.2 grammar.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from baselines.alfworld_examples import Episode, examples_for, states, to_2_1_2, uses_2_1_2
from pos_bench.prompting import decision_schema, example_section, policy_prompt, render_observation
from pos_bench.protocols import MethodBase, Model
from pos_bench.truth import AGENT, Claim
from pos_bench.types import Brief, Decision, Observation, Prompt, Step, Task

STATE_KEYS = ("goal", "locations_visited", "current_location", "current_inventory", "thought")

INSTRUCTION = (
    "Each turn, first write down your state and only then act. goal: the task goal in your own words; "
    "locations_visited: every place you have gone to so far; current_location: where you are now; "
    "current_inventory: what you are holding (None if nothing); thought: a short reasoning step only when one "
    "helps (else None); then action. The trajectory below shows your earlier state blocks (lines after '>') "
    "with the observation each action produced."
)


def _value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value if str(v).strip())
    text = str(value).strip() if value is not None else ""
    return text or "None"


def state_block(state: Mapping[str, Any], action: str) -> str:
    """One agent turn in StateAct's text form: `key: value` lines, the turn marked with a leading '>'."""
    lines = [f"{key.replace('_', ' ')}: {_value(state.get(key))}" for key in STATE_KEYS]
    lines.append(f"action: {action}")
    return "> " + "\n".join(lines)


def render_examples(episodes: Sequence[Episode], modern: bool) -> str:
    fix = to_2_1_2 if modern else (lambda text: text)
    parts = []
    for number, episode in enumerate(episodes, 1):
        lines = [f"Example {number}:", episode.opening, f"Your task is to: {episode.task}"]
        for state, (_, action, observation) in zip(states(episode), episode.turns, strict=True):
            lines += [state_block(state, fix(action)), fix(observation)]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


class StateAct(MethodBase):
    def __init__(self, model: Model, *, max_json_retries: int = 2, repeat_stop: int | None = None):
        if max_json_retries < 0 or (repeat_stop is not None and repeat_stop < 2):
            raise ValueError(
                f"need max_json_retries ≥ 0 and repeat_stop ≥ 2 or null; got {max_json_retries}, {repeat_stop}"
            )
        self.model = model
        self.max_json_retries = max_json_retries
        self.repeat_stop = repeat_stop
        self.turns: list[str] = []
        self.actions: list[str] = []
        self.stopped_at: int | None = None
        self.state: Mapping[str, Any] = {}
        """The newest state block."""

    def unsupported(self, first: Observation) -> str | None:
        if first.tools:
            return "method=stateact needs a command benchmark (ALFWorld or toy); this one acts through tools."
        return None

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        problem = self.unsupported(first)
        if problem:
            raise ValueError(problem)
        self.brief = brief
        self.goal = first.goal
        self.opening = first.text
        self.examples = examples_for(task.meta, count=2)

    def _schema(self, obs: Observation) -> dict[str, Any]:
        # `goal` takes the thought slot so the schema keeps StateAct's key order, thought last before action.
        extra: dict[str, tuple[Any, Any]] = {
            "locations_visited": (list[str], ...),
            "current_location": (str, ...),
            "current_inventory": (str, ...),
            "thought": (str, ...),
        }
        return decision_schema(obs, extra_fields=extra, thought_key="goal")

    def prompt(self, obs: Observation) -> Prompt | Decision:
        if self.stopped_at is not None:
            # The loop owns stopping: an action-less decision lets the remaining turns pass without model
            # calls or environment steps (each shows up as meta-actions, then a spent turn).
            return Decision(thought=f"stopped after {self.repeat_stop} identical actions", action=None)
        trajectory = "\n".join([self.opening, *self.turns])
        sections: Sequence[str] = [
            example_section(self.brief),
            INSTRUCTION,
            render_examples(self.examples.episodes, uses_2_1_2(obs.actions)),
            f"Task: {self.goal}",
            f"Your trajectory so far:\n{trajectory}",
            f"Current observation:\n{render_observation(obs)}",
        ]
        return policy_prompt(
            self.brief,
            obs,
            sections,
            max_json_retries=self.max_json_retries,
            schema=self._schema(obs),
        )

    def update(self, step: Step) -> Mapping[str, Any] | None:
        if step.after is None:
            return None
        action = str(step.decision.action)
        state = {**step.decision.extra, "thought": step.decision.thought}
        self.state = state
        self.turns += [state_block(state, action), step.after.text]
        self.actions.append(action)
        recent = self.actions[-self.repeat_stop :] if self.repeat_stop else []
        if self.repeat_stop and len(recent) == self.repeat_stop and len(set(recent)) == 1:
            self.stopped_at = step.turn
            return {"repeat_stop": step.turn, "action": action}
        return None

    def report(self) -> Mapping[str, Any]:
        return {
            "state_blocks": len(self.actions),
            "repeat_stopped_at_turn": self.stopped_at,
            "example_type": self.examples.task_type,
            "example_type_matched": self.examples.matched,
        }

    def claims(self) -> tuple[Claim, ...]:
        """The newest state line: where the agent is and what it holds (`ClaimingMethod`)."""
        where, held = _value(self.state.get("current_location")), _value(self.state.get("current_inventory"))
        claims = [] if where == "None" else [Claim(AGENT, "at", where, source="state line")]
        holding = Claim(AGENT, "holding nothing") if held == "None" else Claim(AGENT, "holding", held)
        return (*claims, *([] if not self.state else [holding]))
