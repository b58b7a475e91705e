"""Stopping a run from outside. Ctrl-C (SIGINT) and `kill PID` (SIGTERM, what a scheduler or a container stop
sends) stop it the same way: the episodes that finished are saved, temporary folders removed, one line says how
to resume; the exit code is 130 or 143.

Python raises a stop as a `KeyboardInterrupt` between two bytecodes of the main thread. When that moment falls
inside a finalizer or a weakref callback (a garbage collection may run one at any allocation), Python prints
"Exception ignored" and the run goes on as if nothing had been asked (seen once in about 135 stops under load).
So the handler also records the signal, and the runner's loop, which looks about once a second, raises the
stop again when it was lost (`check`).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any

RECEIVED: list[int] = []
"""The stop signals received by this process, in order."""

FEEDER_THREAD = "QueueFeederThread"
"""The name `multiprocessing` gives the thread that writes a queue's items to its pipe."""


def listen() -> None:
    """Handle SIGINT and SIGTERM as a stop (only the main thread may set handlers; elsewhere nothing changes)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)


def _stop(signum: int, _frame: Any) -> None:
    RECEIVED.append(signum)
    raise KeyboardInterrupt


def check() -> None:
    """Raise the stop if a signal arrived whose `KeyboardInterrupt` was lost; nothing otherwise."""
    if RECEIVED:
        raise KeyboardInterrupt


def exit_code() -> int:
    """130 after Ctrl-C, 143 after SIGTERM, as a shell reports a process those signals ended."""
    return 143 if signal.SIGTERM in RECEIVED else 130


def release_before_fast_exit(feeder_wait: float = 2.0) -> None:
    """Run the exit finalizers that free what outlives the process, when a stopped run leaves by `os._exit`.

    `multiprocessing` and loky register them to run at a normal interpreter exit, which `os._exit` skips:
    - each named semaphore's unlinking. A pool's call queue is sometimes still alive at the stop, after its
      executor was shut down and its workers killed (5 stops in 232 under load; its feeder thread holds it, below),
      and the resource tracker then printed "There appear to be 3 leaked semlock objects";
    - the removal of `multiprocessing`'s temporary folder (`pymp-*` in TMPDIR), which holds the fork server's
      socket (`runner/pool/forkserver.py`).

    Only those run here: they wait on nothing, whereas the other exit finalizers (joining a queue's feeder thread
    without a bound) could wait on a killed worker. The one wait here is bounded (below).

    A queue's feeder thread may outlive its executor's shutdown (loky lets it go rather than join it), and it
    unlinks the queue's semaphores itself as it ends: first the name, then a message to the resource tracker.
    `os._exit` between the two left the tracker warning of a leaked semaphore it could no longer find (3 stops
    in 12 with that window widened to 50 ms, once in a CI run). So the feeder threads still alive are first given
    `feeder_wait` seconds in all to end."""
    util = sys.modules.get("multiprocessing.util")
    if util is None:
        return
    deadline = time.monotonic() + feeder_wait
    for thread in threading.enumerate():
        if thread.name == FEEDER_THREAD and thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    cleanups = [util._remove_temp_dir] if hasattr(util, "_remove_temp_dir") else []
    for name in ("multiprocessing.synchronize", "joblib.externals.loky.backend.synchronize"):
        module = sys.modules.get(name)
        if module is not None:
            cleanups.append(module.SemLock._cleanup)
    registry = getattr(util, "_finalizer_registry", {})  # the standard library's table of exit finalizers
    for finalizer in list(registry.values()):
        if getattr(finalizer, "_callback", None) in cleanups:
            try:
                finalizer()
            except OSError:  # already unlinked or removed
                pass
