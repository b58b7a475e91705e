"""A pure-Python household in ALFWorld's command grammar and feedback text, for fast offline tests
(SPEC-BENCH §2.7.3). Deterministic per task; both the 2.1.1 and 2.1.2 text variants.

Not a benchmark to report: it exists so the loop, methods and runner can be tested in milliseconds.
Its oracle is the expert: environments from `make_expert_env` put the remaining plan in `info["plan"]`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from pos_bench.benchmarks.household import Household, household_truth
from pos_bench.protocols import Model
from pos_bench.truth import WorldTruth
from pos_bench.types import Action, Brief, Observation, Score, Task

SYSTEM = (
    "You are an agent in a household. Each turn you issue exactly one text command to reach the task "
    "goal. Commands must be copied exactly from the available actions."
)

EXAMPLE = (
    "Example (format only):\nTask: put a cup in drawer.\nObservation: You arrive at table 1. On the table 1, "
    'you see a cup 2.\nReply: {"thought": "The cup is here; take it.", "action": "take cup 2 from table 1"}'
)

RECEPTACLES = ("cabinet 1", "countertop 1", "drawer 1", "fridge 1", "microwave 1", "sinkbasin 1", "shelf 1")
OPENABLE = {"cabinet 1", "drawer 1", "fridge 1", "microwave 1"}
OBJECTS = ("mug 1", "apple 1", "book 1", "plate 1", "spoon 1")
TOOLS = {"clean": "sinkbasin 1", "heat": "microwave 1", "cool": "fridge 1"}
TASK_TYPES = ("pick_and_place", "clean", "heat", "cool")
PROPERTIES = ("clean", "hot", "cool")


@dataclass
class _World:
    where: dict[str, str]
    """object → receptacle holding it ("" when carried)."""
    opened: set[str] = field(default_factory=set)
    states: dict[str, set[str]] = field(default_factory=dict)
    at: str = ""
    holding: str = ""


class ToyEnv:
    def __init__(self, text_version: Literal["2.1.1", "2.1.2"] = "2.1.2", *, expert: bool = False):
        self.text_version = text_version
        self.expert = expert

    def reset(self, task: Task) -> Observation:
        rng = random.Random(task.source)
        self.kind = task.meta["task_type"]
        self.target_object = rng.choice(OBJECTS)
        holders = [r for r in RECEPTACLES if r not in TOOLS.values()]
        self.goal_receptacle = rng.choice([r for r in holders if r != "countertop 1"])
        self.world = _World(where={o: rng.choice(holders) for o in OBJECTS})
        self.won = False
        adjective = {"pick_and_place": "", "clean": "clean ", "heat": "hot ", "cool": "cool "}[self.kind]
        self.goal = f"put a {adjective}{self.target_object.split()[0]} in {self.goal_receptacle.split()[0]}."
        seen = ", ".join(f"a {r}" for r in RECEPTACLES)
        text = (
            "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, "
            f"you see {seen}.\n\nYour task is to: {self.goal}"
        )
        return self._observe(text)

    def _contents(self, receptacle: str) -> str:
        items = [o for o, r in self.world.where.items() if r == receptacle]
        return ", ".join(f"a {o}" for o in items) if items else "nothing"

    def _admissible(self) -> tuple[str, ...]:
        w = self.world
        commands = [f"go to {r}" for r in RECEPTACLES if r != w.at] + ["inventory", "look"]
        if self.text_version == "2.1.2":
            commands.append("help")
        if w.at:
            commands.append(f"examine {w.at}")
            if w.at in OPENABLE:
                commands.append(f"close {w.at}" if w.at in w.opened else f"open {w.at}")
            visible = w.at not in OPENABLE or w.at in w.opened
            if visible and not w.holding:
                commands += [f"take {o} from {w.at}" for o, r in w.where.items() if r == w.at]
            if visible and w.holding:
                put = (
                    f"move {w.holding} to {w.at}"
                    if self.text_version == "2.1.2"
                    else f"put {w.holding} in/on {w.at}"
                )
                commands.append(put)
            for verb, tool in TOOLS.items():
                if w.holding and w.at == tool:
                    commands.append(f"{verb} {w.holding} with {tool}")
        return tuple(sorted(commands))

    def _plan(self) -> list[str]:
        """The oracle's remaining commands from the current state."""
        w, obj, plan = self.world, self.target_object, []
        at = w.at
        if w.holding != obj:
            source = w.where[obj]
            if at != source:
                plan.append(f"go to {source}")
            if source in OPENABLE and source not in w.opened:
                plan.append(f"open {source}")
            plan.append(f"take {obj} from {source}")
            at = source
        needed = {"clean": "clean", "heat": "hot", "cool": "cool"}.get(self.kind)
        if needed and needed not in w.states.get(obj, set()):
            verb = {"clean": "clean", "hot": "heat", "cool": "cool"}[needed]
            if at != TOOLS[verb]:
                plan.append(f"go to {TOOLS[verb]}")
            plan.append(f"{verb} {obj} with {TOOLS[verb]}")
            at = TOOLS[verb]
        if at != self.goal_receptacle:
            plan.append(f"go to {self.goal_receptacle}")
        if self.goal_receptacle in OPENABLE and self.goal_receptacle not in w.opened:
            plan.append(f"open {self.goal_receptacle}")
        plan.append(
            f"move {obj} to {self.goal_receptacle}"
            if self.text_version == "2.1.2"
            else f"put {obj} in/on {self.goal_receptacle}"
        )
        return plan

    def _observe(self, text: str) -> Observation:
        return Observation(
            text=text,
            actions=self._admissible(),
            done=self.won,
            goal=self.goal,
            info={
                "won": self.won,
                **({"plan": [] if self.won else self._plan()} if self.expert else {}),
            },
        )

    def step(self, action: Action) -> Observation:
        command = action if isinstance(action, str) else ""
        return self._observe(
            self._execute(command.strip()) if command.strip() in self._admissible() else "Nothing happens."
        )

    def _execute(self, command: str) -> str:
        w = self.world
        verb, _, rest = command.partition(" ")
        if command.startswith("go to "):
            w.at = command[6:]
            where = w.at if self.text_version == "2.1.2" else f"loc {RECEPTACLES.index(w.at) + 1}"
            if w.at in OPENABLE and w.at not in w.opened:
                return f"You arrive at {where}. The {w.at} is closed."
            return f"You arrive at {where}. On the {w.at}, you see {self._contents(w.at)}."
        if verb == "open":
            w.opened.add(rest)
            return f"You open the {rest}. The {rest} is open. In it, you see {self._contents(rest)}."
        if verb == "close":
            w.opened.discard(rest)
            return f"You close the {rest}."
        if verb == "take":
            obj, _, source = rest.partition(" from ")
            w.where[obj], w.holding = "", obj
            return f"You pick up the {obj} from the {source}."
        if verb in ("move", "put"):
            w.where[w.holding], obj, w.holding = w.at, w.holding, ""
            self.won = self._goal_met()
            if self.text_version == "2.1.2":
                return f"You move the {obj} to the {w.at}."
            return f"You put the {obj} in/on the {w.at}."
        if verb in TOOLS:
            state = {"clean": "clean", "heat": "hot", "cool": "cool"}[verb]
            w.states.setdefault(w.holding, set()).add(state)
            return f"You {verb} the {w.holding} using the {w.at}."
        if verb == "inventory":
            return f"You are carrying: a {w.holding}." if w.holding else "You are not carrying anything."
        if verb == "examine":
            return f"On the {rest}, you see {self._contents(rest)}."
        if verb == "help":
            return "Available commands: look, inventory, go to, open, close, take, move, examine, clean, heat, cool."
        return f"You are facing the {w.at}." if w.at else "You are in the middle of a room."

    def _goal_met(self) -> bool:
        obj = self.target_object
        needed = {"clean": "clean", "heat": "hot", "cool": "cool"}.get(self.kind)
        placed = self.world.where.get(obj) == self.goal_receptacle
        return placed and (needed is None or needed in self.world.states.get(obj, set()))

    def score(self) -> Score:
        return Score(success=self.won, value=1.0 if self.won else 0.0)

    def truth(self) -> WorldTruth:
        """The household as it is now, in the same facts and vocabulary as ALFWorld's."""
        w = self.world
        return household_truth(
            Household(
                locations={o: (r,) if r else () for o, r in w.where.items()},
                receptacles=RECEPTACLES,
                held=w.holding,
                at=(w.at,) if w.at else (),
                openable={r: r in w.opened for r in OPENABLE},
                properties={o: {p: p in w.states.get(o, set()) for p in PROPERTIES} for o in OBJECTS},
            ),
            self.goal,
        )

    def close(self) -> None:
        return None


class ToyBenchmark:
    """`n_tasks` generated household tasks cycling through the task types."""

    def __init__(
        self,
        n_tasks: int = 8,
        *,
        start: int = 0,
        limit: int | None = None,
        max_turns: int = 20,
        text_version: Literal["2.1.1", "2.1.2"] = "2.1.2",
    ):
        if text_version not in ("2.1.1", "2.1.2"):
            raise ValueError(f"text_version must be '2.1.1' or '2.1.2', got {text_version!r}")
        if start < 0 or (limit is not None and limit < 0) or max_turns < 1:
            raise ValueError(f"bad slice or budget: start={start}, limit={limit}, max_turns={max_turns}")
        self.n_tasks, self.start, self.limit = n_tasks, start, limit
        self.max_turns = max_turns
        self.text_version = text_version
        self.brief = Brief(system=SYSTEM, example=EXAMPLE)

    def tasks(self) -> list[Task]:
        every = [
            Task(id=f"toy/{i:03d}", source=f"toy-{i}", meta={"task_type": TASK_TYPES[i % len(TASK_TYPES)]})
            for i in range(self.n_tasks)
        ]
        end = None if self.limit is None else self.start + self.limit
        return every[self.start : end]

    def make_env(self, model: Model) -> ToyEnv:
        return ToyEnv(self.text_version)

    def make_expert_env(self, model: Model) -> ToyEnv:
        return ToyEnv(self.text_version, expert=True)
