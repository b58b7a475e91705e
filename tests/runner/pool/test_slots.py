"""Worker slots: every task comes back once, and a lost result costs its own episode only."""

import functools
import os
import signal
import time

from pos_bench.runner.pool.slots import Slot, play_all
from pos_bench.types import EpisodeResult, Task

TASKS = [Task(f"t{i}", meta={"i": i}) for i in range(6)]


def play(task: Task, *, die_on: str = "", raise_on: str = "") -> EpisodeResult:
    if task.id == die_on:
        os.kill(os.getpid(), signal.SIGKILL)
    if task.id == raise_on:
        raise MemoryError("lost on the way back")
    return EpisodeResult(task.id, "done", success=True)


def test_threads_return_every_task_once_and_a_raising_task_becomes_an_error():
    results = list(play_all(functools.partial(play, raise_on="t2"), TASKS, n_jobs=3, backend="threading"))
    assert sorted(r.task_id for r in results) == [t.id for t in TASKS]
    (lost,) = [r for r in results if r.status == "error"]
    assert (
        lost.task_id == "t2"
        and lost.error.startswith("ResultLost: MemoryError")
        and lost.task_meta == {"i": 2}
    )


def test_a_dead_process_costs_its_own_task_and_its_slot_gets_a_new_worker():
    seen = []
    results = list(
        play_all(functools.partial(play, die_on="t1"), TASKS, n_jobs=2, backend="loky", tick=seen.append)
    )
    assert sorted(r.task_id for r in results) == [t.id for t in TASKS]
    (dead,) = [r for r in results if r.status == "error"]
    assert dead.task_id == "t1" and "SIGKILL" in dead.error
    assert seen  # the caller heard about the tasks in flight


def pid_of(task: Task) -> int:
    return os.getpid()


def test_a_worker_that_dies_between_episodes_is_replaced_without_losing_the_next_one():
    slot = Slot("loky")
    try:
        first = slot.submit(pid_of, Task("a")).result(timeout=60)
        os.kill(first, signal.SIGKILL)  # idle: between its episode and the next
        deadline = time.monotonic() + 30
        while slot._executor._flags.broken is None and time.monotonic() < deadline:
            time.sleep(0.05)  # until the executor has seen its worker die (loky has no public flag)
        second = slot.submit(pid_of, Task("b")).result(timeout=60)
        assert second != first  # played in full by a fresh worker
    finally:
        slot.close()
