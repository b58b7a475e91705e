"""Where episodes run: worker slots on this host (`loky` processes, `threading`; `workers.py`), or Ray (`ray`)
on a cluster.

The runner hands over one function and the pending tasks, and gets results back in completion order, so
`results.jsonl` keeps one writer on the driver whatever the backend. A backend also provides the run's
shared services (`Shared`): the endpoint budget every worker draws from, and the response store when the
cache file must have one owner.

Ray: the episodes are played by `workers` actor processes, each running up to ⌈n_jobs / workers⌉ episodes
in threads (episodes against an endpoint mostly wait on the network; several processes spread the client
CPU over cores). The driver connects to `runner.ray_address`, else `$RAY_ADDRESS`, else starts a local
instance on loopback. A worker process that dies loses only the episodes it was playing: each becomes an
`error` result, a fresh actor takes the dead one's place, and the run goes on.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_bench.models.budget import Budget, FileBudget, LocalBudget
from pos_bench.models.cache import ResponseStore, Store
from pos_bench.redact import key_variables, redactor_for
from pos_bench.types import EpisodeResult, Task
from pos_bench.workers import play_all

BACKENDS = ("loky", "threading", "ray")


@dataclass(frozen=True)
class Shared:
    """What every worker of one run shares; crosses to the workers with each episode."""

    budget: Budget
    store: Store | None = None
    """A response store every worker goes through (Ray: an actor owning the SQLite file on the driver's
    node; threads: one `ResponseStore`), or None when each worker process opens the file itself (loky:
    SQLite in WAL mode)."""


@dataclass(frozen=True)
class Placement:
    """How many episodes run at once and where; the runner's `RunnerConfig` fields of the same names."""

    backend: str = "loky"
    n_jobs: int = 1
    workers: int | None = None
    """Ray: worker processes sharing the `n_jobs` episodes (default: one per episode)."""
    ray_address: str | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"runner.backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"runner.workers must be ≥ 1 or null, got {self.workers}")


def worker_parent_pid(backend: str) -> int | None:
    """The pid a worker should die with: the driver's for loky (its children outlive a `kill -9`d driver
    otherwise); None for threads (the driver itself) and Ray (Ray ends a dead driver's actors)."""
    return os.getpid() if backend == "loky" else None


def cache_path(cfg: Mapping[str, Any]) -> str | None:
    """The response cache file of the run, or None when the cache is off."""
    cache = cfg.get("cache") or {}
    return None if cache.get("mode", "off") == "off" else cache.get("path")


@contextlib.contextmanager
def session(placement: Placement, cfg: Mapping[str, Any]) -> Iterator[Pool]:
    """Start the backend (and its shared services) for the run configured by `cfg`; stop what was
    started on exit."""
    if placement.backend == "ray":
        from pos_bench import ray_pool  # ray is an optional extra, imported only when asked for

        # Workers on other hosts have their node's environment, not the driver's: pass the API keys.
        env = {name: os.environ[name] for name in key_variables(cfg) if name in os.environ}
        with ray_pool.session(placement, cache_path(cfg), env, redactor_for(cfg).text) as pool:
            yield pool
        return
    if placement.backend == "threading":
        # One store for the run's threads (a connection per thread inside), not one per episode.
        path = cache_path(cfg)
        store = ResponseStore(path, redact=redactor_for(cfg).text) if path is not None else None
        yield SlotPool(placement, Shared(LocalBudget(), store))
        return
    folder = Path(tempfile.mkdtemp(prefix="pos_bench_budget_"))
    try:
        yield SlotPool(placement, Shared(FileBudget(folder)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


Tick = Callable[[list[Task]], None]
"""Sees the tasks in flight about once a second (progress)."""


class Pool:
    """A started backend: its shared services and a way to play tasks in parallel."""

    shared: Shared

    def map_unordered(
        self, play: Callable[[Task], EpisodeResult], tasks: Sequence[Task], *, tick: Tick | None = None
    ) -> Iterator[EpisodeResult]:
        """`play` over `tasks`, one result per task in completion order; a task whose worker died under it
        comes back as an `error` result."""
        raise NotImplementedError


class SlotPool(Pool):
    def __init__(self, placement: Placement, shared: Shared):
        self.placement = placement
        self.shared = shared

    def map_unordered(self, play, tasks, *, tick=None):
        return play_all(play, tasks, n_jobs=self.placement.n_jobs, backend=self.placement.backend, tick=tick)


def threads_per_worker(n_jobs: int, workers: int) -> int:
    return max(1, math.ceil(n_jobs / workers))
