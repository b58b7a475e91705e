"""Where episodes run: worker slots on this host (`loky` processes, `threading`; `slots.py`), or Ray (`ray`)
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
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pos_bench.models.budget import FileBudget, LocalBudget
from pos_bench.models.cache import ResponseStore
from pos_bench.redact import key_variables, redactor_for
from pos_bench.runner.pool import forkserver
from pos_bench.runner.pool.contract import BACKENDS, Placement, Pool, Shared, Tick
from pos_bench.runner.pool.slots import SlotPool

__all__ = [
    "BACKENDS",
    "Placement",
    "Pool",
    "Shared",
    "SlotPool",
    "Tick",
    "one_episode_per_process",
    "session",
]


def one_episode_per_process(backend: str) -> bool:
    """Whether each worker process plays one episode at a time (loky), so that it may settle its heap between
    two episodes; threads and Ray actors play several at once."""
    return backend == "loky"


def cache_path(cfg: Mapping[str, Any]) -> str | None:
    """The response cache file of the run, or None when the cache is off."""
    cache = cfg.get("cache") or {}
    return None if cache.get("mode", "off") == "off" else cache.get("path")


@contextlib.contextmanager
def session(placement: Placement, cfg: Mapping[str, Any]) -> Iterator[Pool]:
    """Start the backend (and its shared services) for the run configured by `cfg`; stop what was
    started on exit."""
    if placement.backend == "ray":
        # ray is an optional extra, imported only when asked for
        from pos_bench.runner.pool import ray as ray_pool

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
    forkserver.start(forkserver.worker_modules(cfg))
    with budget_folder() as folder:
        yield SlotPool(placement, Shared(FileBudget(folder)))


BUDGET_PREFIX = "pos_bench_budget_"
OWNER = "owner.lock"
"""Locked by the run that uses the folder, for as long as it runs: the kernel releases it when the run ends,
`kill -9` included."""


@contextlib.contextmanager
def budget_folder() -> Iterator[Path]:
    """A fresh folder in the temporary directory for the run's endpoint budget (`FileBudget`), removed at the end.
    A run that was killed could not remove its own; the next run removes every such folder whose owner lock it
    can take (so whose run is gone, whatever process namespace it ran in) and that is over a minute old (not one
    whose run is between making it and locking it). A folder without an owner lock is left alone."""
    root = Path(tempfile.gettempdir())
    for left in root.glob(f"{BUDGET_PREFIX}*"):
        with contextlib.suppress(OSError), open(left / OWNER) as owner:
            fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)  # OSError: its run still plays
            if time.time() - os.fstat(owner.fileno()).st_mtime > 60:
                shutil.rmtree(left, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=BUDGET_PREFIX))
    try:
        with open(folder / OWNER, "a") as owner:
            fcntl.flock(owner, fcntl.LOCK_EX)
            yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
