"""Episodes on worker slots: each slot is one worker process (loky, through joblib) or one thread, playing one
episode at a time. A worker that dies (SIGKILL, segfault, out of memory) costs only the episode it was playing,
which comes back as an `error` result naming the signal; its slot gets a fresh worker and the run goes on. One
that dies between two episodes costs none: the next episode goes to a fresh worker.

A pool shared by all slots cannot do this: when one of its workers dies, every episode in flight fails with it.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool  # loky's own is a subclass of it
from typing import Any

from pos_bench.runner.pool.contract import Placement, Pool, Shared
from pos_bench.types import EpisodeResult, Task

Work = Callable[[Task], EpisodeResult]
"""Plays one task; picklable (a module-level function or a `functools.partial` of one) for process slots."""


def _quiet_worker() -> None:
    """Workers leave Ctrl-C to the main process, which stops the run and its workers cleanly."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Slot:
    """One worker, busy with at most one episode."""

    def __init__(self, backend: str):
        self.backend = backend
        self._executor: Any = None

    def submit(self, work: Work, task: Task) -> Future:
        try:
            return self._started().submit(work, task)
        except BrokenProcessPool:  # the worker died between two episodes: nothing was lost, start a new one
            self.discard()
            return self._started().submit(work, task)

    def _started(self) -> Any:
        if self._executor is None:
            if self.backend == "threading":
                self._executor = ThreadPoolExecutor(max_workers=1)
            else:
                # imported here: joblib/loky costs a config error or `--cfg` nothing (tests/test_startup.py)
                from joblib.externals.loky import ProcessPoolExecutor

                self._executor = ProcessPoolExecutor(max_workers=1, initializer=_quiet_worker)
        return self._executor

    def discard(self) -> None:
        """Drop a broken worker; the next episode starts a new one."""
        self.close()
        self._executor = None

    def close(self) -> None:
        if self._executor is None:
            return
        if isinstance(self._executor, ThreadPoolExecutor):
            self._executor.shutdown(wait=False, cancel_futures=True)
        else:
            # waiting for the killed worker lets loky release its semaphores: none is reported leaked when
            # the run stops on Ctrl-C or SIGTERM
            self._executor.shutdown(wait=True, kill_workers=True)


def crash_result(task: Task, error: Exception) -> EpisodeResult:
    """The `error` result of an episode whose worker died or whose result never came back."""
    text = str(error)
    codes = re.search(r"exit codes of the workers are \{(.*?)\}", text)
    if isinstance(error, BrokenProcessPool):
        code = codes.group(1) if codes else "unknown"
        cause = f"WorkerDied: the worker process died while playing this episode (exit {code})"
    else:
        cause = f"ResultLost: {type(error).__name__}: {text.splitlines()[0] if text else ''}"
    return EpisodeResult(
        task_id=task.id, status="error", error=cause, task_meta=dict(task.meta), trial=task.trial
    )


def overdue(started: dict[Future, float], timeout: float | None, done: set[Future]) -> list[Future]:
    """The unfinished futures that started more than `timeout` seconds ago."""
    if timeout is None:
        return []
    now = time.monotonic()
    return [f for f, at in started.items() if f not in done and now - at > timeout]


def timeout_result(task: Task, timeout: float | None) -> EpisodeResult:
    return EpisodeResult(
        task_id=task.id,
        status="error",
        error=f"EpisodeTimeout: the episode ran past runner.episode_timeout ({timeout:g} s); its worker was "
        "stopped and the run went on",
        task_meta=dict(task.meta),
        trial=task.trial,
    )


def play_all(
    work: Work,
    tasks: Sequence[Task],
    *,
    n_jobs: int,
    backend: str,
    tick: Callable[[list[Task]], None] | None = None,
    tick_seconds: float = 1.0,
    episode_timeout: float | None = None,
) -> Iterator[EpisodeResult]:
    """Yield one result per task, in completion order. `tick` sees the tasks in flight about once a second.
    An episode running past `episode_timeout` seconds is an `EpisodeTimeout` error and its slot gets a new
    worker (a process slot kills the old one; a thread slot abandons it)."""
    size = (os.cpu_count() or 1) if n_jobs == -1 else n_jobs
    queue = deque(tasks)
    slots = [Slot(backend) for _ in range(max(1, min(size, len(tasks))))]
    running: dict[Future, tuple[Slot, Task]] = {}
    started: dict[Future, float] = {}
    try:
        while queue or running:
            busy = {id(slot) for slot, _ in running.values()}
            for slot in slots:
                if queue and id(slot) not in busy:
                    task = queue.popleft()
                    future = slot.submit(work, task)
                    running[future], started[future] = (slot, task), time.monotonic()
            done, _ = wait(list(running), timeout=tick_seconds, return_when=FIRST_COMPLETED)
            for future in overdue(started, episode_timeout, done):
                slot, task = running.pop(future)
                started.pop(future)
                slot.discard()
                yield timeout_result(task, episode_timeout)
            for future in done:
                slot, task = running.pop(future)
                started.pop(future)
                try:
                    result = future.result()
                except Exception as error:  # noqa: BLE001 - a dead worker or a lost result costs its episode only
                    if isinstance(error, BrokenProcessPool):
                        slot.discard()
                    result = crash_result(task, error)
                yield result
            if tick is not None:
                tick([task for _, task in running.values()])
    finally:
        for slot in slots:
            slot.close()


class SlotPool(Pool):
    def __init__(self, placement: Placement, shared: Shared):
        self.placement = placement
        self.shared = shared

    def map_unordered(self, play, tasks, *, tick=None):
        return play_all(
            play,
            tasks,
            n_jobs=self.placement.n_jobs,
            backend=self.placement.backend,
            tick=tick,
            episode_timeout=self.placement.episode_timeout,
        )
