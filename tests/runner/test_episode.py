"""A worker process that plays one episode at a time settles its heap before each one (`settle_heap`)."""

import gc
import os
import weakref

from pos_bench.build import build
from pos_bench.runner.episode import run_episode, settle_heap
from tests.runner.test_run import config


class _Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the collector frees it


def test_settling_collects_the_cycles_left_behind_and_freezes_what_lives_on():
    left = _Node()
    gone = weakref.ref(left)
    del left
    lives = _Node()
    try:
        settle_heap()
        assert gone() is None  # collected first, never frozen
        assert not any(o is lives for o in gc.get_objects())  # out of every collection's sight
        made = _Node()
        dropped = weakref.ref(made)
        del made
        gc.collect()
        assert dropped() is None  # what comes after is still collected
    finally:
        gc.unfreeze()


def test_a_worker_episode_starts_settled_and_a_thread_episode_does_not(tmp_path):
    cfg = config()
    task = next(iter(build(cfg["bench"]).tasks()))
    gc.unfreeze()
    try:
        result = run_episode(cfg, task, tmp_path, driver_pid=os.getpid())  # a thread of the driver
        assert result.status == "done"
        assert gc.get_freeze_count() == 0
        # as the runner calls a loky worker
        loky_worker = {"own_process": True, "driver_pid": os.getpid()}
        result = run_episode(cfg, task, tmp_path, **loky_worker)
        assert result.status == "done"
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
