"""`runner.backend=ray`: episodes played by Ray actors, results gathered on the driver.

Besides the episode workers, the driver starts two small actors pinned to its own node: the endpoint
budget (one `LocalBudget` for every worker of the run, on every host) and, when the cache is on, the one
owner of the SQLite file (WAL must never be written from two hosts). Imported only when the backend is
asked for; `ray` comes with the `ray` extra (`uv sync --inexact --extra ray`).
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_bench.models.budget import Endpoint, LocalBudget
from pos_bench.models.cache import ResponseStore
from pos_bench.runner.pool.contract import Placement, Pool, Shared, threads_per_worker
from pos_bench.types import EpisodeResult, Reply, Task

# Workers run the driver's interpreter and installed environment (the same on every node), not one `uv run`
# per worker process, which Ray does by default when the driver was started with `uv run` and which
# resolves the environment again at every worker start. Read by Ray when it is imported.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

try:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError as missing:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "runner.backend=ray needs the `ray` package: uv sync --inexact --extra ray (or pip install 'pos_bench[ray]')"
    ) from missing

BUDGET_THREADS = 1024
"""Calls the budget actor serves at once: each waiting caller holds one of its threads."""


@dataclass(frozen=True)
class RayBudget:
    """The run's budget as seen from a worker: calls to the budget actor."""

    keeper: Any

    def acquire(self, endpoint: Endpoint) -> int:
        return ray.get(self.keeper.acquire.remote(endpoint))

    def release(self, lease: int, *, tokens: int, rate_limited: bool) -> None:
        # Not awaited: the slot comes back a moment later, which can only leave the cap less used.
        self.keeper.release.remote(lease, tokens=tokens, rate_limited=rate_limited)


@dataclass(frozen=True)
class RayStore:
    """The response cache as seen from a worker: calls to the actor that owns the SQLite file."""

    owner: Any

    def get(self, key: str) -> Reply | None:
        return ray.get(self.owner.get.remote(key))

    def put(self, key: str, request: str, reply: Reply, *, overwrite: bool) -> Reply:
        return ray.get(self.owner.put.remote(key, request, reply, overwrite=overwrite))


class EpisodeWorker:
    """One worker process; Ray runs its `play` calls in up to `max_concurrency` threads.

    `env` (the API keys the config names) is set here rather than through a Ray runtime environment, which
    would make Ray start a fresh process for every worker instead of taking one of its idle ones."""

    def __init__(self, play: Callable[[Any], Any], env: Mapping[str, str]):
        os.environ.update(env)
        self.play_one = play

    def play(self, item: Any) -> Any:
        return self.play_one(item)


def connect(address: str | None) -> bool:
    """Join the cluster at `address` (else `$RAY_ADDRESS`), or start a local instance on loopback.
    Returns whether this call connected (and so must disconnect)."""
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        ray.init(address=address)
    else:  # "local": a fresh instance, never one named by a stale /tmp/ray/ray_current_cluster
        ray.init(address="local", include_dashboard=False, _node_ip_address="127.0.0.1")
    return True


@contextlib.contextmanager
def session(
    placement: Placement, cache_path: str | None, env: Mapping[str, str], redact: Callable[[str], str]
) -> Iterator[RayPool]:
    """`env`: variables the episode workers need from the driver's environment (API keys); `redact` is
    applied by the cache owner to everything it stores."""
    started = connect(placement.ray_address)
    here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
    keeper = (
        ray.remote(LocalBudget)
        .options(num_cpus=0, max_concurrency=BUDGET_THREADS, scheduling_strategy=here)
        .remote()
    )
    owner = None
    if cache_path is not None:
        owner = (
            ray.remote(ResponseStore)
            .options(num_cpus=0, max_concurrency=16, scheduling_strategy=here)
            .remote(str(Path(cache_path).resolve()), redact=redact)
        )
    try:
        shared = Shared(RayBudget(keeper), RayStore(owner) if owner is not None else None)
        yield RayPool(placement, shared, env)
    finally:
        for actor in (keeper, owner):
            if actor is not None:
                ray.kill(actor)
        if started:
            ray.shutdown()


class RayPool(Pool):
    def __init__(self, placement: Placement, shared: Shared, env: Mapping[str, str]):
        self.placement = placement
        self.shared = shared
        self.env = dict(env)

    def map_unordered(
        self,
        play: Callable[[Task], EpisodeResult],
        tasks: Sequence[Task],
        *,
        tick: Callable[[list[Task]], None] | None = None,
    ) -> Iterator[EpisodeResult]:
        if not tasks:
            return
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        n_jobs = int(cpus) if self.placement.n_jobs == -1 else self.placement.n_jobs
        count = min(self.placement.workers or n_jobs, n_jobs, len(tasks))
        threads = threads_per_worker(n_jobs, count)
        worker = ray.remote(EpisodeWorker).options(
            num_cpus=min(1.0, cpus / count), max_concurrency=threads, scheduling_strategy="SPREAD"
        )
        workers = [worker.remote(play, self.env) for _ in range(count)]
        queue = deque(tasks)
        running: dict[Any, tuple[Task, int, Any]] = {}
        load = [0] * count

        def fill(slot: int) -> None:
            while queue and load[slot] < threads:
                task = queue.popleft()
                running[workers[slot].play.remote(task)] = (task, slot, workers[slot])
                load[slot] += 1

        for slot in range(count):
            fill(slot)
        try:
            while running:
                done, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
                for ref in done:
                    task, slot, actor = running.pop(ref)
                    load[slot] -= 1
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayActorError as error:
                        result = lost(task, f"WorkerDied: the Ray worker playing this episode died ({error})")
                        if workers[slot] is actor:  # the first loss seen from it: replace the dead worker
                            ray.kill(actor)
                            workers[slot] = worker.remote(play, self.env)
                    except ray.exceptions.RayError as error:
                        result = lost(task, f"ResultLost: {type(error).__name__}: {error}")
                    yield result
                    fill(slot)
                if tick is not None:
                    tick([task for task, _, _ in running.values()])
        finally:
            for actor in workers:
                ray.kill(actor)


def lost(task: Task, why: str) -> EpisodeResult:
    return EpisodeResult(
        task_id=task.id, status="error", error=why, task_meta=dict(task.meta), trial=task.trial
    )
