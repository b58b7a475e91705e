"""Episodes on worker slots: each slot is one worker process (loky, through joblib) or one thread, playing one
episode at a time. A worker that dies (SIGKILL, segfault, out of memory) costs only the episode it was playing,
which comes back as an `error` result naming the signal; its slot gets a fresh worker and the run goes on. One
that dies between two episodes costs none: the next episode goes to a fresh worker.

A pool shared by all slots cannot do this: when one of its workers dies, every episode in flight fails with it.

Worker processes outlive their run. A Hydra sweep plays its runs one after another in one driver process, and a
fresh worker costs its start and its imports (compiled from source where no bytecode is installed): 16 workers
started anew for each of a sweep's 8 runs spent more CPU than the runs' model calls. So a run that ends with
nothing in flight leaves its workers idle for the next run of the same process (`take_slots`, `park`); they end
with the process. A run stopped part-way (Ctrl-C, an error) closes its workers instead. A worker started under
another environment, working directory or import path than the new run's (a key set between two runs of a
notebook) is not reused: it would not see the change.

A process slot's worker is forked from a server process that imported the run's modules once (`forkserver.py`),
instead of starting Python and importing them anew.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool  # loky's own is a subclass of it
from typing import Any

from pos_bench.runner.pool import forkserver
from pos_bench.runner.pool.contract import Placement, Pool, Shared
from pos_bench.types import EpisodeResult, Task

Work = Callable[[Task], EpisodeResult]
"""Plays one task; picklable (a module-level function or a `functools.partial` of one) for process slots."""


WATCHER = "pos_bench-parent-watcher"


def _worker_start(environment: dict[str, str]) -> None:
    """A worker takes the driver's `environment` as it was when the slot started it (its fork server has the
    environment the server started with).

    It ends as soon as the driver is gone (`multiprocessing`'s sentinel of the process that asked for it, a pipe
    only the driver holds open). A run killed with `kill -9` would otherwise leave its workers finishing their
    episodes, writing into episode folders that the resumed run is using; and the fork server, which waits for
    every process it forked, with them. One watcher thread per worker.

    Workers leave Ctrl-C to the main process, which stops the run and its workers cleanly.

    They also keep playing when they have grown. Loky ends a worker whose memory grew 300 MB past its size
    after its first task, taking that for a leak, and starts a fresh one, which imports everything again. An
    episode's worker grows that much by design: PACE loads its embedding model on first use, and a worker kept
    from an earlier run meets a new method. Measured: on a sweep of toy raw, acon and pace, one of the two
    workers was replaced during the pace run. A real leak shows in the full-size check's worker RSS over time
    (`pos_bench.fullsize`), where it is to be found and fixed (ALFWorld's planner library was one); replacing
    the worker hides it. So the check is off.

    Without it, loky forces a full garbage collection after every task that ends more than a second after the
    last one: on an ALFWorld worker, whose heap holds the engine's grammar and the SDKs, 25-30 ms per episode
    alone and more among 16 workers, while Python's own collector runs anyway. So that collection is off too
    (loky's delay between two of them made endless; it still collects once, after the first task)."""
    os.environ.clear()
    os.environ.update(environment)
    driver = multiprocessing.parent_process()
    sentinel = driver.sentinel if driver is not None else None
    parent = os.getppid()

    def watch() -> None:
        if sentinel is not None:
            multiprocessing.connection.wait([sentinel])
        else:  # started by loky itself (no fork server on this platform): the driver is the parent
            while os.getppid() == parent:
                time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name=WATCHER, daemon=True).start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from joblib.externals.loky import process_executor

    process_executor._USE_PSUTIL = False  # loky has no public switch for either
    process_executor._MEMORY_LEAK_CHECK_DELAY = float("inf")


def surroundings() -> tuple:
    """What a worker process takes from the driver when it starts, and keeps: the environment, the working
    directory and the import path."""
    return (tuple(sorted(os.environ.items())), os.getcwd(), tuple(sys.path))


class Slot:
    """One worker, busy with at most one episode."""

    def __init__(self, backend: str):
        self.backend = backend
        self._executor: Any = None
        self._latest: Future | None = None
        self.started_in: tuple | None = None
        """`surroundings()` when its worker started."""

    def submit(self, work: Work, task: Task) -> Future:
        try:
            self._latest = self._started().submit(work, task)
        except BrokenProcessPool:  # the worker died between two episodes: nothing was lost, start a new one
            self.discard()
            self._latest = self._started().submit(work, task)
        return self._latest

    def _started(self) -> Any:
        if self._executor is None:
            if self.backend == "threading":
                self._executor = ThreadPoolExecutor(max_workers=1)
            else:
                # imported here: joblib/loky costs a config error or `--cfg` nothing (tests/test_startup.py)
                from joblib.externals.loky import ProcessPoolExecutor

                forkserver.start(forkserver.ALWAYS)  # nothing to do when the run's session started it
                self._executor = ProcessPoolExecutor(
                    max_workers=1,
                    context=forkserver.context(),
                    initializer=_worker_start,
                    initargs=(dict(os.environ),),
                )
            self.started_in = surroundings()
        return self._executor

    def discard(self) -> None:
        """Drop a broken worker; the next episode starts a new one."""
        self.close()
        self._executor = None
        self.started_in = None

    def close(self) -> None:
        if self._executor is None:
            return
        if isinstance(self._executor, ThreadPoolExecutor):
            self._executor.shutdown(wait=False, cancel_futures=True)
        else:
            taken_up(self._latest)
            # waiting for the killed worker lets loky release its semaphores: none is reported leaked when
            # the run stops on Ctrl-C or SIGTERM
            self._executor.shutdown(wait=True, kill_workers=True)
        self._latest = None


def taken_up(future: Future | None, limit: float = 5.0) -> None:
    """Wait (at most `limit` seconds, in practice a millisecond) until loky's thread has taken the slot's latest
    episode, that is until its future runs or is done.

    Loky (3.6.0 in joblib 1.6.0, and its main branch of 2026-08) has a race. Told to stop with
    `kill_workers=True` before its thread took a just-submitted episode, the thread drops the episode's record but
    not its number, looks the number up, and dies on a `KeyError`: a traceback on the terminal, and the
    executor's semaphores left unreleased. A run met it when it stopped (a full disk, Ctrl-C) right after
    handing a free slot its next episode."""
    deadline = time.monotonic() + limit
    while future is not None and not (future.running() or future.done()) and time.monotonic() < deadline:
        time.sleep(0.001)


IDLE: list[Slot] = []
"""Process slots whose worker ended a run with nothing in flight, waiting for the next run of this process."""


def take_slots(backend: str, count: int) -> list[Slot]:
    """`count` slots for a run: idle workers of an earlier run first (process slots), then new ones. Idle
    workers beyond `count` are closed rather than kept holding their memory through a smaller run."""
    kept: list[Slot] = []
    if backend == "loky":
        now = surroundings()
        fitting = [slot for slot in IDLE if slot.started_in == now]
        kept = fitting[:count]
        for slot in IDLE:
            if slot not in kept:
                slot.close()
        IDLE.clear()
    return kept + [Slot(backend) for _ in range(count - len(kept))]


def park(slots: Sequence[Slot]) -> None:
    """Keep the started process slots of a finished run for the next one; close the rest."""
    for slot in slots:
        if slot.backend == "loky" and slot.started_in is not None:
            if not IDLE:
                atexit.unregister(close_idle)
                atexit.register(close_idle)  # after loky's own exit hooks were set up: runs before them
            IDLE.append(slot)
        else:
            slot.close()


def close_idle() -> None:
    """End the idle workers (at exit; tests that count processes)."""
    while IDLE:
        IDLE.pop().close()


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
    slots = take_slots(backend, max(1, min(size, len(tasks))))
    running: dict[Future, tuple[Slot, Task]] = {}
    started: dict[Future, float] = {}
    finished = False
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
        finished = True
    finally:
        if finished:
            park(slots)
        else:
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
