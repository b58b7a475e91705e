"""Generating a LOCA case's world with the user's checkout, and caching it.

Upstream's environment constructor wipes `task_dir` and generates the mock services' databases, the agent
workspace, the ground truth and the instruction; the first `reset()` generates them all again (13–28 s per case
at 8k here). A generated world is stored under the cache key (checkout commit, length, family, seed): the task
folder's files, the environment object (pickled; its checker reads its paths from it) and the instruction. A world
is only reused at the task folder it was generated in, because generated files and the object hold absolute paths.
"""

from __future__ import annotations

import importlib
import json
import logging
import pickle
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_bench.benchmarks.loca.real.configs import CaseConfig


@dataclass
class World:
    """A ready task folder and the upstream environment object that checks it."""

    env: Any
    prompt: str
    seconds: float
    cached: bool


def generate(case: CaseConfig, task_dir: Path) -> World:
    """Build the case's environment in `task_dir` as upstream does: constructor, then `reset()`."""
    started = time.perf_counter()
    module, _, name = case.env_class.rpartition(".")
    env_class = getattr(importlib.import_module(module), name)
    env = env_class(**dict(case.env_params), task_dir=str(task_dir))
    prompt, _ = env.reset()
    return World(env=env, prompt=str(prompt), seconds=time.perf_counter() - started, cached=False)


def _reattach_logs(env: Any, log: Path) -> None:
    """A pickled logger comes back without handlers; point the environment's own loggers at its env.log again."""
    for value in vars(env).values():
        if isinstance(value, logging.Logger) and not value.handlers:
            handler = logging.FileHandler(log, mode="a", encoding="utf-8")
            handler.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(message)s"))
            value.addHandler(handler)
            value.setLevel(logging.DEBUG)
            value.propagate = False


class WorldCache:
    """Generated worlds under `<cache_dir>/<commit>/<length>/<family>/seed_<seed>/`."""

    def __init__(self, cache_dir: Path, commit: str | None):
        self.cache_dir, self.commit = Path(cache_dir).expanduser(), commit

    def entry(self, case: CaseConfig) -> Path | None:
        return None if self.commit is None else self.cache_dir / self.commit / case.case_id

    def has(self, case: CaseConfig, task_dir: Path) -> bool:
        """Whether a world of `case` generated at `task_dir` is cached."""
        entry = self.entry(case)
        if entry is None or not (entry / "meta.json").is_file():
            return False
        return json.loads((entry / "meta.json").read_text(encoding="utf-8"))["task_dir"] == str(task_dir)

    def load(self, case: CaseConfig, task_dir: Path) -> World | None:
        """The cached world restored into `task_dir`, or None on a miss."""
        started = time.perf_counter()
        entry = self.entry(case)
        if entry is None or not (entry / "meta.json").is_file():
            return None
        meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
        if meta["task_dir"] != str(task_dir):
            return None
        env = pickle.loads((entry / "env.pkl").read_bytes())
        shutil.rmtree(task_dir, ignore_errors=True)
        shutil.copytree(entry / "tree", task_dir, symlinks=True)
        _reattach_logs(env, task_dir / "logs" / "env.log")
        return World(env=env, prompt=meta["prompt"], seconds=time.perf_counter() - started, cached=True)

    def load_tools(self, case: CaseConfig, launch_key: str) -> list[dict[str, Any]] | None:
        """The tool list the case's servers reported when launched with the same command lines."""
        entry = self.entry(case)
        path = None if entry is None else entry / f"tools-{launch_key}.json"
        return None if path is None or not path.is_file() else json.loads(path.read_text(encoding="utf-8"))

    def store_tools(self, case: CaseConfig, launch_key: str, tools: list[dict[str, Any]]) -> None:
        """Keep a validated tool list, so a cached reset needs no server launch (each call launches them)."""
        entry = self.entry(case)
        if entry is not None and entry.is_dir():
            (entry / f"tools-{launch_key}.json").write_text(json.dumps(tools), encoding="utf-8")

    def store(self, case: CaseConfig, task_dir: Path, world: World) -> str:
        """Keep `world` (just generated in `task_dir`); returns "stored", or why it was not."""
        entry = self.entry(case)
        if entry is None:
            return "no commit (not a git checkout)"
        try:
            state = pickle.dumps(world.env)
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            return f"environment not picklable: {error}"
        staging = entry.with_name(entry.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(task_dir, staging / "tree", symlinks=True)
        (staging / "env.pkl").write_bytes(state)
        meta = {"task_dir": str(task_dir), "prompt": world.prompt, "generation_seconds": world.seconds}
        (staging / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        shutil.rmtree(entry, ignore_errors=True)
        staging.rename(entry)
        return "stored"
