import signal
import subprocess
import sys
import threading
import time

import pytest

from pos_bench.runner import RunInterrupted, run, stop
from tests.runner.test_run import RAW, config, lines


def test_a_stop_whose_keyboard_interrupt_python_lost_still_ends_the_run_within_a_tick(tmp_path, monkeypatch):
    monkeypatch.setattr(stop, "RECEIVED", [])
    cfg = config(method=RAW, n_tasks=40)
    cfg["model"]["delay"] = 0.05
    results = tmp_path / "results.jsonl"

    def signal_arrives_but_its_interrupt_is_swallowed():
        while not (results.is_file() and results.read_text().strip()):
            time.sleep(0.02)
        stop.RECEIVED.append(signal.SIGINT)  # what the handler records before its raise is lost

    threading.Thread(target=signal_arrives_but_its_interrupt_is_swallowed, daemon=True).start()
    with pytest.raises(RunInterrupted, match="episodes are saved"):
        run(cfg, tmp_path, {"bench": "toy", "method": "raw"})
    assert 1 <= len(lines(results)) < 40
    assert stop.exit_code() == 130


def test_sigterm_exits_143_and_ctrl_c_130(monkeypatch):
    monkeypatch.setattr(stop, "RECEIVED", [signal.SIGTERM])
    assert stop.exit_code() == 143
    monkeypatch.setattr(stop, "RECEIVED", [signal.SIGINT])
    assert stop.exit_code() == 130


FEEDER_ENDS_AT_THE_EXIT = """
import multiprocessing, multiprocessing.synchronize as synchronize, os, threading, time
from _multiprocessing import sem_unlink
from multiprocessing.resource_tracker import unregister
from pos_bench.runner import stop

in_feeder = threading.Event()

def slow_cleanup(name):
    # the standard library's cleanup with a wider window between unlinking the name and telling the tracker
    sem_unlink(name)
    if threading.current_thread() is not threading.main_thread():
        in_feeder.set()
        time.sleep(0.5)
    unregister(name, "semaphore")

synchronize.SemLock._cleanup = staticmethod(slow_cleanup)
deleted = threading.Event()

class Episode:
    def __reduce__(self):  # pickled by the feeder thread: it stays alive until the queue is deleted
        deleted.wait(10)
        return str, ("an episode",)

queue = multiprocessing.get_context("forkserver").Queue()  # named semaphores, as a process pool's queues
queue.put(Episode())
queue.close()
del queue  # the feeder thread now holds the last references to the queue's semaphores
deleted.set()
assert in_feeder.wait(10), "the feeder thread did not release the semaphores"
stop.release_before_fast_exit()
os._exit(143)
"""


def test_a_fast_exit_waits_for_a_feeder_thread_releasing_its_semaphores_so_none_is_reported_leaked():
    done = subprocess.run(
        [sys.executable, "-c", FEEDER_ENDS_AT_THE_EXIT],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 143, done.stderr
    assert "leaked" not in done.stderr and "No such file" not in done.stderr, done.stderr
