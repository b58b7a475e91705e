"""ALFWorld (SPEC-BENCH §2): the 134 `valid_unseen` TextWorld games by default (`split` also takes
`valid_seen` and `train`), played through the real engine (`textworld` + alfworld's wrappers), 2.1.2 text by
default.

Each observation's `info` carries `won` and, when enabled, the planner expert's remaining plan
(`info["plan"]`), which `method=expert` follows. The engine is imported only when an environment is made.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

from pos_bench.benchmarks.alfworld.data import (
    DEFAULT_SPLIT,
    MISSING_ENGINE,
    TEXT_VERSIONS,
    find_data_root,
    playable_gamefile,
    select_games,
    split_dir,
)
from pos_bench.benchmarks.alfworld.truth import alfworld_truth
from pos_bench.extras import MissingExtra, require
from pos_bench.protocols import Model
from pos_bench.truth import WorldTruth
from pos_bench.types import Action, Brief, Observation, Score, Task

ENGINE_STEP_CAP = 50
"""ALFWorld's `max_nb_steps_per_episode`: the engine ends an episode after this many commands."""

WORKER_IMPORTS = (
    "textworld",
    "textworld.envs.pddl.pddl",
    "alfworld.agents.environment.alfred_tw_env",
    "fast_downward",
)
"""The engine, imported when an environment is made; a run's worker processes have it imported before they start
(`runner/pool/forkserver.py`)."""

SYSTEM = (
    "You are a ReAct agent in a text-based household simulator. Your task is stated in the first "
    "observation; you pursue it one command per turn, and each command is one step in the environment.\n"
    "In your thought, record what the newest observation just showed (where you are, what you saw or "
    "changed, what you hold) and what is still unresolved before the task is complete.\n"
    "Your action is sent to the environment exactly as written, so the syntax must be exact: copy one "
    "command from the available actions, object numbers included. A command the environment cannot "
    'carry out changes nothing and is answered with "Nothing happens."\n'
    "Reply with a single JSON object and no text outside it."
)

_EXAMPLE = (
    "Example of the reply format (an invented room, not your task):\n"
    "Task: put a clean ladle in drawer.\n"
    "Observation: You arrive at {arrival}. On the sinkbasin 1, you see nothing.\n"
    "Available actions: clean ladle 2 with sinkbasin 1, examine sinkbasin 1, go to drawer 3, inventory, look, "
    "{put_here}\n"
    'Reply: {{"thought": "I am at sinkbasin 1 holding ladle 2, which is not clean yet. Still open: clean it, '
    'then bring it to a drawer.", "action": "clean ladle 2 with sinkbasin 1"}}\n'
    "Later, at drawer 3 with the clean ladle:\n"
    'Reply: {{"thought": "Drawer 3 is open and the ladle is clean; placing it finishes the task.", '
    '"action": "{put_drawer}"}}'
)


def example(text_version: str) -> str:
    """The format example, in the command syntax of `text_version`."""
    if text_version == "2.1.1":
        return _EXAMPLE.format(
            arrival="loc 7", put_here="put ladle 2 in/on sinkbasin 1", put_drawer="put ladle 2 in/on drawer 3"
        )
    return _EXAMPLE.format(
        arrival="sinkbasin 1",
        put_here="help, move ladle 2 to sinkbasin 1",
        put_drawer="move ladle 2 to drawer 3",
    )


def goal_of(text: str) -> str:
    """The task string: the text after "Your task is to:" in the first observation."""
    _, marker, rest = text.partition("Your task is to:")
    return rest.strip() if marker else ""


ENGINE = threading.Lock()
"""TextWorld has one module-wide text parser that is not thread-safe, and a game uses it when it loads (its PDDL)
and in every step (the admissible commands' text): two games at once in one process fail with `IndexError: pop
from empty list`. So the games of a process load and step one at a time. Episodes in threads of one process are
`runner.backend=threading`, a Ray actor's threads and `inspect eval pos_bench/alfworld`; their model calls still
overlap, and a step is mostly Python, which the interpreter's lock runs one at a time anyway."""


class Planners:
    """Copies of fast-downward's planner library for the games of one process, each used by one game at a time.

    TextWorld's PDDL environment loads a fresh copy of `libdownward.so` each time one is made (copied to a
    temporary file and opened there, so that two games of one process never share the library's global state),
    and a loaded library is never unloaded. Measured: the process's RSS grew 2.5 MB per game loaded, with the
    Python heap unchanged and `malloc_trim` giving none of it back. The driver loads one game per run in its
    pre-flight check (the first observation), so a sweep's driver grew that much per run (121 → 139 MB over 8
    runs), and a loky worker, which plays episodes of every run of a sweep, that much per episode.

    A copy goes back here when its game closes and the next game takes it: the library holds one game's task
    at a time and each load replaces it (TextWorld's own gym environments load game after game on one copy),
    so a process keeps as many copies as it ever had games open at once."""

    def __init__(self) -> None:
        self._free: list[Any] = []
        self._lock = threading.Lock()

    def take(self) -> Any:
        with self._lock:
            if self._free:
                return self._free.pop()
        import fast_downward

        return fast_downward.load_lib()

    def give_back(self, library: Any) -> None:
        with self._lock:
            self._free.append(library)


PLANNERS = Planners()
"""The process's planner libraries (`Planners`)."""


@functools.cache
def pooled_pddl_env() -> type:
    """TextWorld's PDDL environment on a library it is given instead of a copy of its own (its constructor
    does nothing else but check that fast-downward is installed; `Planners.take` imports it)."""
    import textworld
    from textworld.envs.pddl.pddl import PddlEnv

    class PooledPddlEnv(PddlEnv):
        def __init__(self, infos: Any, library: Any):
            textworld.Environment.__init__(self, infos)
            self.downward_lib = library

    return PooledPddlEnv


class AlfWorldEnv:
    """One TextWorld game at a time; `reset` loads the task's game file (about a second without the
    planner)."""

    def __init__(
        self,
        text_version: str = "2.1.2",
        *,
        max_steps: int = ENGINE_STEP_CAP,
        expert_plan: bool = False,
        truth: bool = True,
    ):
        try:
            import textworld
            from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredExpert, AlfredInfos
        except ImportError as error:
            raise MissingExtra(f"{MISSING_ENGINE} ({error})") from error
        self._textworld = textworld
        self._wrappers = (AlfredDemangler, AlfredInfos, AlfredExpert)
        self.text_version = text_version
        self.max_steps = max_steps
        self.expert_plan = expert_plan
        self.keeps_truth = truth
        """Ask the engine for its facts each step, so `truth()` can answer (scripts/bench_truth.py)."""
        self._game: Any = None
        self._library: Any = None
        """The planner library of the open game (`Planners`)."""
        self._state: Any = None
        self._goal = ""
        self._steps = 0

    def reset(self, task: Task) -> Observation:
        self.close()
        gamefile = playable_gamefile(Path(task.source), self.text_version)
        demangler, infos_wrapper, expert = self._wrappers
        wrappers = [demangler(shuffle=False), infos_wrapper]
        extras = ["gamefile"]
        if self.expert_plan:
            wrappers.append(expert(expert_type="planner"))
            extras.append("expert_plan")
        request = self._textworld.EnvInfos(
            won=True, admissible_commands=True, facts=self.keeps_truth, extras=extras
        )
        with ENGINE:
            self._game = self._started(gamefile, request, wrappers)
            self._state = self._game.reset()
        self._steps = 0
        self._goal = goal_of(self._state.feedback)
        return self._observe()

    def _started(self, gamefile: Path, request: Any, wrappers: list[Any]) -> Any:
        """`textworld.start(gamefile, request, wrappers)` for a PDDL game, on a planner library from
        `PLANNERS`, which `close` gives back."""
        if gamefile.suffix != ".tw-pddl":  # not an ALFWorld game: TextWorld picks the engine, as before
            return self._textworld.start(str(gamefile), request, wrappers=wrappers)
        self._library = PLANNERS.take()
        game = pooled_pddl_env()(request, self._library)
        for wrapper in wrappers:
            game = wrapper(game)
        game.load(str(gamefile))
        return game

    def step(self, action: Action) -> Observation:
        if self._game is None:
            raise RuntimeError("AlfWorldEnv.step called before reset")
        # A tool call or blank command is not a command; the engine answers it like any unknown one.
        command = action.strip() if isinstance(action, str) else ""
        with ENGINE:
            self._state, _, _ = self._game.step(command)
        self._steps += 1
        return self._observe()

    def _observe(self) -> Observation:
        state = self._state
        won = bool(state["won"])
        info = {"won": won, "steps": self._steps}
        if self.expert_plan:
            info["plan"] = list(state["extra.expert_plan"])
        return Observation(
            text=state.feedback,
            actions=tuple(state["admissible_commands"]),
            # The engine's own step cap (max_nb_steps_per_episode) ends the episode too.
            done=won or bool(state["lost"]) or self._steps >= self.max_steps,
            goal=self._goal,
            info=info,
        )

    def truth(self) -> WorldTruth | None:
        """The engine's facts as a household truth; None with `truth=False` or before the first reset."""
        if not self.keeps_truth or self._state is None:
            return None
        return alfworld_truth(self._state["facts"], self._goal)

    def score(self) -> Score:
        won = bool(self._state is not None and self._state["won"])
        return Score(success=won, value=1.0 if won else 0.0)

    def close(self) -> None:
        if self._game is not None:
            self._game.close()
        self._game = None
        if self._library is not None:
            PLANNERS.give_back(self._library)
            self._library = None


class AlfWorldBenchmark:
    """A split's games, sorted and sliced: by default `eval_out_of_distribution` (`json_2.1.1/valid_unseen`);
    `split=valid_seen` (140 games, in distribution) or `train` read the same tree, whose task ids then start
    with the split name.

    Data: `data_dir`, else `$ALFWORLD_DATA`, `~/.cache/alfworld`, then the staged tarball in
    `../shared/benchmarks/alfworld/` (see `alfworld/data.py` `find_data_root`).

    `make_expert_env` runs the planner after every step so observations carry `info["plan"]` (what
    `method=expert` follows). Only the expert asks for it: the planner takes up to tens of seconds on some
    games, far more than the engine step itself (scripts/bench_loop.py).

    Its engine computes every step in the worker, so the runner runs at most as many steps at once as the
    host has cores (`compute_bound`, `runner/env_slots.py`).
    """

    compute_bound = True

    def __init__(
        self,
        data_dir: str | None = None,
        *,
        start: int = 0,
        limit: int | None = None,
        max_turns: int = 50,
        text_version: str = "2.1.2",
        split: str = DEFAULT_SPLIT,
        truth: bool = True,
    ):
        require("alfworld", "alfworld", "textworld", what="bench=alfworld (the real TextWorld engine)")
        split_dir(split)  # validates the name
        if text_version not in TEXT_VERSIONS:
            raise ValueError(f"text_version must be one of {', '.join(TEXT_VERSIONS)}; got {text_version!r}")
        if start < 0:
            raise ValueError(f"start must be ≥ 0, got {start}")
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be ≥ 0 or null (all games), got {limit}")
        if max_turns < 1:
            raise ValueError(f"max_turns must be ≥ 1, got {max_turns}")
        self.data_dir = data_dir
        self.start, self.limit = start, limit
        self.max_turns = max_turns
        self.text_version = text_version
        self.split = split
        self.truth = truth
        """Environments report the engine's facts per step (`TruthfulEnv`); off saves their cost."""
        self.brief = Brief(
            system=SYSTEM, example=example(text_version), mode="execution", policy_max_tokens=512
        )
        self._tasks: list[Task] | None = None

    def tasks(self) -> list[Task]:
        if self._tasks is None:
            games = select_games(find_data_root(self.data_dir, self.split), self.split)
            end = None if self.limit is None else self.start + self.limit
            # ids of the evaluation split stay as they were; other splits are prefixed so results never mix
            prefix = "" if self.split == DEFAULT_SPLIT else f"{self.split}/"
            self._tasks = [
                Task(id=prefix + g.id, source=str(g.gamefile), meta={"task_type": g.task_type})
                for g in games[self.start : end]
            ]
        return self._tasks

    def make_env(self, model: Model) -> AlfWorldEnv:
        return AlfWorldEnv(self.text_version, max_steps=ENGINE_STEP_CAP, truth=self.truth)

    def make_expert_env(self, model: Model) -> AlfWorldEnv:
        return AlfWorldEnv(self.text_version, max_steps=ENGINE_STEP_CAP, expert_plan=True, truth=self.truth)
