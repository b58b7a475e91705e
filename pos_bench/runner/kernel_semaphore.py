"""A counting semaphore shared by every process of this user on this host, kept by the kernel (System V IPC,
Linux): a waiter sleeps once and wakes with its unit taken (the kernel performs the waiting operation for it, in
the order the waiters came), and a process that ends holding units, `kill -9` included, gives them back
(`SEM_UNDO`).

`env_slots.py` gates environment steps with it. Its lock files and bell, which it keeps where this is missing,
put a step that waits to sleep twice (behind the steps ahead of it, then for a slot), and at 16 episodes in flight
on two cores each wake-up ran on cold caches: raw on 48 ALFWorld games spent 0.25 ms of CPU per step entering the
gate (docs/reference/measurements.md).

The set's id is written in a file (one per slot count in the user's slots folder), under that file's lock, so
every process that opens the file shares the set. A set holds two semaphores: the count, and a tag that tells an
id the kernel has since given to another set from ours. The set outlives the runs, as the slot files do: one per
user, slot count and temporary folder on the host; a folder removed (a run under its own `TMPDIR`) leaves its set
in the kernel (`ipcs -s` lists it; `ipcrm -s <id>` removes it, and the next run makes a new one).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0
GETVAL, SETVAL = 12, 16
SEM_UNDO = 0x1000
"""Linux's values (`<sys/ipc.h>`, `<sys/sem.h>`); other systems number them otherwise and fall back to lock files."""
TAG = 0x5053
"""The value of the set's second semaphore: a set whose second semaphore holds anything else is not ours."""


class _SemBuf(ctypes.Structure):
    _fields_ = [("sem_num", ctypes.c_ushort), ("sem_op", ctypes.c_short), ("sem_flg", ctypes.c_short)]


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux") or fcntl is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # a CDLL call releases the GIL while it waits
        for name in ("semget", "semop", "semctl"):
            getattr(libc, name)
    except (OSError, AttributeError):
        return None
    libc.semget.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    libc.semop.argtypes = [ctypes.c_int, ctypes.POINTER(_SemBuf), ctypes.c_size_t]
    libc.semctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return libc


_LIBC = _libc()


def available() -> bool:
    """Whether this system has the kernel's semaphores (Linux's C library exposes them)."""
    return _LIBC is not None


class KernelSemaphore:
    """`count` units shared through the set whose id `path` holds; `held()` takes one, waiting while none is left."""

    def __init__(self, path: Path, count: int):
        if _LIBC is None:
            raise OSError(errno.ENOSYS, "System V semaphores are not available here")
        self.path, self.count = path, count
        self.id = self._open()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self._change(-1)
        try:
            yield
        finally:
            self._change(+1)

    def remove(self) -> None:
        """Remove the set from the kernel (tests; a user's `ipcrm -s`)."""
        _LIBC.semctl(self.id, 0, IPC_RMID, 0)

    def _change(self, by: int) -> None:
        operation = _SemBuf(0, by, SEM_UNDO)
        reopened = False
        while _LIBC.semop(self.id, ctypes.byref(operation), 1) != 0:
            error = ctypes.get_errno()
            if error == errno.EINTR:  # a signal: its Python handler runs here, before the wait goes on
                continue
            gone = error in (errno.EIDRM, errno.EINVAL)  # the set was removed under us (`ipcrm`)
            if gone and by > 0:  # a give-back: the unit went with the set
                return
            if gone and not reopened:  # a take: from a new set
                self.id, reopened = self._open(), True
                continue
            raise OSError(
                error, f"semop on the environment slots' semaphore set {self.id}: {os.strerror(error)}"
            )

    def _open(self) -> int:
        """The id in the file at `path` when it names a set of ours, else a new set's, written there."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            # one process at a time reads and makes: never two sets for one file
            fcntl.flock(fd, fcntl.LOCK_EX)
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            if text.isdigit() and _LIBC.semctl(int(text), 1, GETVAL, 0) == TAG:
                return int(text)
            semaphores = _LIBC.semget(IPC_PRIVATE, 2, IPC_CREAT | 0o600)
            if semaphores < 0:
                error = ctypes.get_errno()
                raise OSError(error, f"semget: {os.strerror(error)}")
            if (
                _LIBC.semctl(semaphores, 0, SETVAL, self.count) < 0
                or _LIBC.semctl(semaphores, 1, SETVAL, TAG) < 0
            ):
                error = ctypes.get_errno()
                _LIBC.semctl(semaphores, 0, IPC_RMID, 0)
                raise OSError(error, f"semctl: {os.strerror(error)}")
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(semaphores).encode(), 0)
            return semaphores
        finally:
            os.close(fd)  # and with it the lock


def kernel_semaphore(path: Path, count: int) -> KernelSemaphore | None:
    """The semaphore of `count` units at `path`, or None where the system has none (not Linux, IPC turned off in
    a sandbox, the set limit reached), said once in the log."""
    try:
        return KernelSemaphore(path, count)
    except OSError as error:
        if not getattr(kernel_semaphore, "said", False):
            logger.info("environment slots through lock files: no kernel semaphore (%s)", error)
            kernel_semaphore.said = True  # type: ignore[attr-defined]
        return None
