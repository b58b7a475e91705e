"""A total deadline on a remote model call, from the connect to the last byte of the reply.

httpx's timeouts bound each socket operation, not the call: a server that sends one byte a second never
trips a 5 s read timeout and holds the call for as long as it likes. A `deadline(seconds)` block sets the
calling thread's deadline (nestable: the earliest wins; `RemoteModel` sets `model.timeout` per attempt,
`Retrying` sets `retry.max_seconds` over all attempts); the providers' transport (`transport.py`) cuts each
socket operation of that thread to the time left, and fails one past the deadline at once with its own
timeout error, which the SDK reports as a timeout and the retry policy treats as transient.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float] = ContextVar("model_call_deadline", default=math.inf)
"""The current deadline on the `time.monotonic` clock; a context variable, so each thread has its own."""


@contextmanager
def deadline(seconds: float) -> Iterator[float]:
    """Within the block, this thread's socket operations end by `seconds` from now (or an earlier deadline
    already set by an enclosing block). Yields the deadline on the `time.monotonic` clock."""
    token = _DEADLINE.set(min(_DEADLINE.get(), time.monotonic() + seconds))
    try:
        yield _DEADLINE.get()
    finally:
        _DEADLINE.reset(token)


def remaining() -> float:
    """Seconds left before this thread's deadline (`inf` outside any `deadline` block)."""
    return _DEADLINE.get() - time.monotonic()


def bounded(timeout: float | None, expired: type[Exception]) -> float | None:
    """`timeout` for one socket operation, cut to the time left; `expired` is raised when none is left."""
    left = remaining()
    if left == math.inf:
        return timeout
    if left <= 0:
        raise expired("the model call's total deadline (model.timeout, retry.max_seconds) has passed")
    return left if timeout is None else min(timeout, left)
