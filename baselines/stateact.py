"""StateAct (SPEC-BASE §8): before each action the policy writes a state block (goal, locations visited, current
location, current inventory, thought); its memory is the episode in StateAct's text form. ALFWorld-style
command benchmarks only. No extra LLM calls.

The state block is realised as extra decision fields ahead of the action in the JSON schema, in StateAct's key
order. Few-shot examples are fictional, written in 2.1.1 text and corrected to 2.1.2 (`put X in/on Y` →
`move X to Y`, plus the matching feedback lines) when the admissible list shows the 2.1.2 grammar.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pos_bench.prompting import decision_model, policy_prompt, render_observation
from pos_bench.protocols import MethodBase, Model
from pos_bench.types import Brief, Decision, Observation, Prompt, Step, Task

STATE_KEYS = ("goal", "locations_visited", "current_location", "current_inventory", "thought")

INSTRUCTION = (
    "Each turn, first write down your state and only then act. goal: the task goal in your own words; "
    "locations_visited: every place you have gone to so far; current_location: where you are now; "
    "current_inventory: what you are holding (None if nothing); thought: a short reasoning step only when one "
    "helps (else None); then action. The trajectory below shows your earlier state blocks (lines after '>') "
    "with the observation each action produced."
)

# Fictional household episodes in 2.1.1 text: (state, action, observation) per turn.
EXAMPLES: tuple[tuple[str, str, tuple[tuple[Mapping[str, Any], str, str], ...]], ...] = (
    (
        "You are in the middle of a room. Looking quickly around you, you see a desk 1, a drawer 1, a shelf 1.",
        "put a pen on desk.",
        (
            (
                {
                    "goal": "put a pen on desk",
                    "locations_visited": [],
                    "current_location": "middle of the room",
                    "current_inventory": "",
                    "thought": "A pen is likely on the shelf or in the drawer; shelf first.",
                },
                "go to shelf 1",
                "You arrive at loc 3. On the shelf 1, you see a pen 1, and a vase 1.",
            ),
            (
                {
                    "goal": "put a pen on desk",
                    "locations_visited": ["shelf 1"],
                    "current_location": "shelf 1",
                    "current_inventory": "",
                    "thought": "",
                },
                "take pen 1 from shelf 1",
                "You pick up the pen 1 from the shelf 1.",
            ),
            (
                {
                    "goal": "put a pen on desk",
                    "locations_visited": ["shelf 1"],
                    "current_location": "shelf 1",
                    "current_inventory": "pen 1",
                    "thought": "",
                },
                "go to desk 1",
                "You arrive at loc 1. On the desk 1, you see a lamp 1.",
            ),
            (
                {
                    "goal": "put a pen on desk",
                    "locations_visited": ["shelf 1", "desk 1"],
                    "current_location": "desk 1",
                    "current_inventory": "pen 1",
                    "thought": "",
                },
                "put pen 1 in/on desk 1",
                "You put the pen 1 in/on the desk 1.",
            ),
        ),
    ),
    (
        (
            "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a countertop 1, a "
            "fridge 1, a microwave 1."
        ),
        "cool some egg and put it in cabinet.",
        (
            (
                {
                    "goal": "cool an egg, then put it in the cabinet",
                    "locations_visited": [],
                    "current_location": "middle of the room",
                    "current_inventory": "",
                    "thought": "Find an egg (countertop first), cool it with the fridge, then put it in the cabinet.",
                },
                "go to countertop 1",
                "You arrive at loc 2. On the countertop 1, you see a egg 2, and a knife 1.",
            ),
            (
                {
                    "goal": "cool an egg, then put it in the cabinet",
                    "locations_visited": ["countertop 1"],
                    "current_location": "countertop 1",
                    "current_inventory": "",
                    "thought": "",
                },
                "take egg 2 from countertop 1",
                "You pick up the egg 2 from the countertop 1.",
            ),
            (
                {
                    "goal": "cool an egg, then put it in the cabinet",
                    "locations_visited": ["countertop 1"],
                    "current_location": "countertop 1",
                    "current_inventory": "egg 2",
                    "thought": "",
                },
                "go to fridge 1",
                "You arrive at loc 4. The fridge 1 is closed.",
            ),
            (
                {
                    "goal": "cool an egg, then put it in the cabinet",
                    "locations_visited": ["countertop 1", "fridge 1"],
                    "current_location": "fridge 1",
                    "current_inventory": "egg 2",
                    "thought": "",
                },
                "cool egg 2 with fridge 1",
                "You cool the egg 2 using the fridge 1.",
            ),
            (
                {
                    "goal": "cool an egg, then put it in the cabinet",
                    "locations_visited": ["countertop 1", "fridge 1"],
                    "current_location": "fridge 1",
                    "current_inventory": "egg 2",
                    "thought": "The egg is cool.",
                },
                "go to cabinet 1",
                "You arrive at loc 1. The cabinet 1 is closed.",
            ),
            (
                {
                    "goal": "cool an egg, then put it in the cabinet",
                    "locations_visited": ["countertop 1", "fridge 1", "cabinet 1"],
                    "current_location": "cabinet 1",
                    "current_inventory": "egg 2",
                    "thought": "",
                },
                "open cabinet 1",
                "You open the cabinet 1. The cabinet 1 is open. In it, you see nothing.",
            ),
            (
                {
                    "goal": "cool an egg, then put it in the cabinet",
                    "locations_visited": ["countertop 1", "fridge 1", "cabinet 1"],
                    "current_location": "cabinet 1",
                    "current_inventory": "egg 2",
                    "thought": "",
                },
                "put egg 2 in/on cabinet 1",
                "You put the egg 2 in/on the cabinet 1.",
            ),
        ),
    ),
)


def uses_2_1_2(obs: Observation) -> bool:
    """Whether the admissible commands follow the 2.1.2 grammar (`help` exists, `put` became `move`)."""
    return any(a == "help" or a.startswith("move ") for a in obs.actions)


def to_2_1_2(text: str) -> str:
    """Apply the 2.1.1 → 2.1.2 text patches of SPEC-BASE §2.4 to an example line (StateAct's correction)."""
    text = re.sub(r"^put (.+) in/on (.+)$", r"move \1 to \2", text)
    text = re.sub(r"You put the (.+?) in/on the (.+?)\.", r"You move the \1 to the \2.", text)
    text = re.sub(r"You arrive at loc \d+\. On the ([^,]+),", r"You arrive at \1. On the \1,", text)
    return re.sub(r"You arrive at loc \d+\. The (.+?) is closed", r"You arrive at \1. The \1 is closed", text)


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


def render_examples(modern: bool) -> str:
    fix = to_2_1_2 if modern else (lambda text: text)
    parts = []
    for number, (opening, task, turns) in enumerate(EXAMPLES, 1):
        lines = [f"Example {number}:", opening, f"Your task is to: {task}"]
        for state, action, observation in turns:
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

    def _schema(self, obs: Observation) -> dict[str, Any]:
        # `goal` takes the thought slot so the schema keeps StateAct's key order, thought last before action.
        extra: dict[str, tuple[Any, Any]] = {
            "locations_visited": (list[str], ...),
            "current_location": (str, ...),
            "current_inventory": (str, ...),
            "thought": (str, ...),
        }
        return decision_model(obs, extra_fields=extra, thought_key="goal").model_json_schema()

    def prompt(self, obs: Observation) -> Prompt | Decision:
        if self.stopped_at is not None:
            # The loop owns stopping: an action-less decision lets the remaining turns pass without model
            # calls or environment steps (each shows up as meta-actions, then a spent turn).
            return Decision(thought=f"stopped after {self.repeat_stop} identical actions", action=None)
        trajectory = "\n".join([self.opening, *self.turns])
        sections: Sequence[str] = [
            self.brief.example,
            INSTRUCTION,
            render_examples(uses_2_1_2(obs)),
            f"Task: {self.goal}",
            f"Your trajectory so far:\n{trajectory}",
            f"Current observation:\n{render_observation(obs)}",
        ]
        return policy_prompt(
            self.brief,
            obs,
            sections,
            max_tokens=self.brief.policy_max_tokens,
            max_repairs=self.max_json_retries,
            schema=self._schema(obs),
        )

    def update(self, step: Step) -> Mapping[str, Any] | None:
        if step.after is None:
            return None
        action = str(step.decision.action)
        state = {**step.decision.extra, "thought": step.decision.thought}
        self.turns += [state_block(state, action), step.after.text]
        self.actions.append(action)
        recent = self.actions[-self.repeat_stop :] if self.repeat_stop else []
        if self.repeat_stop and len(recent) == self.repeat_stop and len(set(recent)) == 1:
            self.stopped_at = step.turn
            return {"repeat_stop": step.turn, "action": action}
        return None

    def report(self) -> Mapping[str, Any]:
        return {"state_blocks": len(self.actions), "repeat_stopped_at_turn": self.stopped_at}
