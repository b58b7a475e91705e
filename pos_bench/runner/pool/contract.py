"""The backend contract: how many episodes run at once and where (`Placement`), what a run's workers share
(`Shared`), and a started backend (`Pool`) that plays tasks and hands results back in completion order."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from pos_bench.models.budget import Budget
from pos_bench.models.cache import Store
from pos_bench.types import EpisodeResult, Task

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
    episode_timeout: float | None = None
    """Seconds an episode may run; past it the episode is an `EpisodeTimeout` error and its worker is
    replaced (loky: killed; threading: abandoned). None: no limit."""

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"runner.backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"runner.workers must be ≥ 1 or null, got {self.workers}")


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


def threads_per_worker(n_jobs: int, workers: int) -> int:
    return max(1, math.ceil(n_jobs / workers))
