"""At most N environment steps computing at once on a host (`runner.env_slots`), however many episodes are in
flight.

ALFWorld's engine computes every step in the worker (TextWorld's text grammar, the PDDL state, the planner
library): an episode in flight spends most of its time there or waiting on the model. With 16 episodes in
flight on 2 cores, 16 worker processes took turns on the cores in the middle of their steps, and every turn
found the caches cold: the environments' CPU where the run played was 17% above the same steps played alone
(`python -m pos_bench.fullsize bench=alfworld method=raw bench.limit=32 --jobs 16`: 143.9 against 123.2
CPU-s). Admitting as many steps at once as the host has cores brought it to 2% above (125.3 CPU-s) and the
run's wall time down 8%; the model calls still overlap, since only the steps wait their turn.

An environment that waits rather than computes (LOCA's tool servers, ClinDiag's provider model) would only be
slowed by the limit, so it applies by default only to a benchmark that declares its environments compute-bound
(`ComputeBoundBenchmark`); `runner.env_slots` set to a number applies that limit to any benchmark, 0 to none.

The slots are lock files (`flock`) in one folder per user on the host, so every worker process and thread of
every run on the host draws from the same ones: two runs side by side share the host's cores as well. On a
Ray cluster each host has its own folder and, by default, its own core count. Where `fcntl` is missing
(Windows) there is no limit.

A method that runs a model of its own in the worker (PACE's sentence encoder) computes like an environment
step, so it takes its turn through the same slots: `protocols.local_compute()` holds the gate of the episode
being played (`protocols.playing_under`), none outside an episode.
"""

from __future__ import annotations

import contextlib
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pos_bench.protocols import Benchmark, ComputeBoundBenchmark, Gate

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def host_cores() -> int:
    """The cores this process may run on (its CPU affinity, which container limits set), else the count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        return os.cpu_count() or 1


def slots_folder() -> Path:
    return Path(tempfile.gettempdir()) / f"pos_bench-env-slots-{os.getuid() if hasattr(os, 'getuid') else 0}"


class EnvSlots:
    """`count` slots shared by every process and thread of this user on the host; `held()` takes one, waiting
    while all are taken."""

    def __init__(self, count: int, folder: Path | None = None):
        if count < 1:
            raise ValueError(f"env slots must be ≥ 1, got {count}")
        self.count = count
        self.folder = folder or slots_folder()
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.paths = [str(self.folder / f"slot-{i}.lock") for i in range(count)]

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        # each take opens its own descriptors: flock excludes other open descriptions, so two threads of one
        # process holding the same descriptor would not exclude each other
        descriptors = [os.open(path, os.O_CREAT | os.O_RDWR, 0o600) for path in self.paths]
        try:
            taken = next((fd for fd in descriptors if _try_lock(fd)), None)
            if taken is None:  # all taken: wait on one of them, chosen at random so waiters spread out
                taken = random.choice(descriptors)
                fcntl.flock(taken, fcntl.LOCK_EX)
            yield  # closing the descriptor below releases the lock
        finally:
            for fd in descriptors:
                os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def env_gate(setting: int | None, benchmark: Benchmark) -> Gate:
    """The gate of a run's environment steps: `setting` slots (`runner.env_slots`), or when it is None the
    host's cores for a compute-bound benchmark and no limit for any other; 0 is no limit."""
    computes = isinstance(benchmark, ComputeBoundBenchmark) and benchmark.compute_bound
    count = (host_cores() if computes else 0) if setting is None else setting
    if count <= 0 or fcntl is None:
        return contextlib.nullcontext
    return EnvSlots(count).held
