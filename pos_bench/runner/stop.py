"""Stopping a run from outside. Ctrl-C (SIGINT) and `kill PID` (SIGTERM, what a scheduler or a container stop
sends) stop it the same way: the episodes that finished are saved, temporary folders removed, one line says how
to resume; the exit code is 130 or 143.

Python raises a stop as a `KeyboardInterrupt` between two bytecodes of the main thread. When that moment falls
inside a finalizer or a weakref callback (a garbage collection may run one at any allocation), Python prints
"Exception ignored" and the run goes on as if nothing had been asked (seen in about 1 stop in 60 under load).
So the handler also records the signal, and the runner's loop, which looks about once a second, raises the
stop again when it was lost (`check`).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

RECEIVED: list[int] = []
"""The stop signals received by this process, in order."""


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
