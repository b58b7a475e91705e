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

The slots are a semaphore the kernel keeps (`kernel_semaphore.py`, Linux), found through a file in one folder per
user on the host, so every worker process and thread of every run on the host with the same slot count draws from
the same units: two runs side by side share the host's cores as well. A waiting step sleeps once and wakes with its
slot, and a worker killed mid-step gives its slot back. Against the lock files below, which put a waiting step to
sleep twice, 48 raw ALFWorld games at 16 in flight measured 1.20–1.47 ms of client CPU per call (1.29 median of 4,
a first version of this semaphore) against 1.38–1.91 (1.45), runs alternated on a quiet machine
(docs/reference/measurements.md). On a Ray cluster each host has its own folder and, by default, its own core
count.

Where the kernel has no such semaphore (another system, System V IPC turned off), the slots are lock files
(`flock`) in the same folder, shared by every count. Where `fcntl` is missing (Windows) there is no limit.

A step that finds every lock-file slot taken waits in line (one more lock file, which the kernel gives to one
waiter at a time). The head of the line takes the first slot given back: a step that ends while one waits rings a
bell (a named pipe the head listens on), and the head looks again at least every `RECHECK_SECONDS` (a worker
killed mid-step frees its slot without ringing). Before, a waiter blocked on one slot chosen at random and kept waiting
while another slot was free and its core idle: lh_harness on 48 ALFWorld games, 16 in flight on 2 cores, had the
cores 6.0-6.5% idle through the run (`vmstat`), 3.7% with the bell, and the run 4% shorter (acon: 3.4% and 0.4%
idle, 4.5% shorter). The head looking every 2 ms instead of listening had them 3.1% idle, but the looking cost
1.7% of a core; the bell costs nothing while nobody rings it (docs/reference/measurements.md).

A method that runs a model of its own in the worker (PACE's sentence encoder) computes like an environment
step, so it takes its turn through the same slots: `protocols.local_compute()` holds the gate of the episode
being played (`protocols.playing_under`), none outside an episode.
"""

from __future__ import annotations

import contextlib
import os
import select
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from pos_bench.protocols import Benchmark, ComputeBoundBenchmark, Gate
from pos_bench.runner.kernel_semaphore import kernel_semaphore

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

RECHECK_SECONDS = 0.1
"""The longest the head of the line waits for a bell before looking at the slots again."""


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

    def __init__(self, count: int, folder: Path | None = None, *, kernel: bool = True):
        if count < 1:
            raise ValueError(f"env slots must be ≥ 1, got {count}")
        self.count = count
        self.folder = folder or slots_folder()
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.semaphore = kernel_semaphore(self.folder / f"semaphore-{count}", count) if kernel else None
        """The kernel's semaphore where the system has one (`kernel_semaphore.py`); else the lock files below."""
        self.paths = [str(self.folder / f"slot-{i}.lock") for i in range(count)]
        # one line and one bell per slot count, so runs side by side with different counts never mix them
        self.line = str(self.folder / f"line-{count}.lock")
        self.bell = named_pipe(self.folder / f"bell-{count}")

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        if self.semaphore is not None:
            with self.semaphore.held():
                yield
            return
        mine = _thread_descriptors(self)
        taken: int | None = None
        try:
            taken = next((fd for fd in mine.slots if _try_lock(fd)), None)
            if taken is None:
                taken = self._wait_in_line(mine)
            yield
        finally:
            try:
                if taken is not None:
                    fcntl.flock(taken, fcntl.LOCK_UN)  # gives the slot back
                if someone_waits(mine.line):
                    self._ring()
            finally:
                mine.release()  # whatever raised above, the thread's next take reuses its descriptors

    def _wait_in_line(self, mine: _Descriptors) -> int:
        """Take the line's lock (behind the steps waiting ahead), then the first slot given back."""
        fcntl.flock(mine.line, fcntl.LOCK_EX)
        try:
            bell = _process_bell(self.bell)
            # poll, not select: a worker may hold more than select's 1,024 descriptors
            ringing = select.poll()
            if bell is not None:
                ringing.register(bell, select.POLLIN)
                _drain(bell)  # rings made while nobody listened say nothing about the slots now
            # listening before looking: a slot given back after the look rings, one before it is seen
            while (taken := next((fd for fd in mine.slots if _try_lock(fd)), None)) is None:
                ringing.poll(RECHECK_SECONDS * 1000)  # with no bell, a wait of RECHECK_SECONDS
                if bell is not None:
                    _drain(bell)
            return taken
        finally:
            fcntl.flock(mine.line, fcntl.LOCK_UN)

    def _ring(self) -> None:
        """Tell the head of the line, if there is one, that a slot was given back. Never raises: a ring that
        cannot be made costs the head at most `RECHECK_SECONDS`, never the step."""
        bell = _process_bell(self.bell)
        if bell is not None:
            with contextlib.suppress(BlockingIOError):  # a full pipe holds rings enough
                os.write(bell, b"\0")


class _Descriptors:
    """A thread's own descriptors of the slot files and the line (flock excludes other open descriptions, so two
    threads of one process sharing a descriptor would not exclude each other). Kept open between steps: opening
    and closing the files at every step cost more CPU than the step's lines once a step had left the caches
    cold. Closed when the thread ends; a take nested in another take of the same thread gets descriptors of its
    own, closed when it ends."""

    def __init__(self, slots: EnvSlots, *, nested: bool = False):
        self.nested = nested
        self.slots: list[int] = []
        self.line = -1
        self.busy = False
        try:
            self.slots = [os.open(path, os.O_CREAT | os.O_RDWR, 0o600) for path in slots.paths]
            self.line = os.open(slots.line, os.O_CREAT | os.O_RDWR, 0o600)
        except OSError:
            self.close()
            raise

    def release(self) -> None:
        if self.nested:
            self.close()
        self.busy = False

    def close(self) -> None:
        for fd in [*self.slots, self.line]:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.slots, self.line = [], -1

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the modules it uses may be gone
            self.close()


_THREAD = threading.local()
"""This thread's `_Descriptors` by (pid, slot folder, count)."""


def _thread_descriptors(slots: EnvSlots) -> _Descriptors:
    """This thread's descriptors of `slots`, marked busy; fresh ones for a take nested in another."""
    kept: dict[tuple[int, str, int], _Descriptors] = _THREAD.__dict__.setdefault("kept", {})
    key = (os.getpid(), str(slots.folder), slots.count)
    mine = kept.get(key)
    if mine is not None and mine.busy:
        mine = _Descriptors(slots, nested=True)
    elif mine is None:
        for other in [k for k in kept if k[0] != key[0]]:  # a forked child's copies of its parent's
            kept.pop(other).close()
        mine = kept[key] = _Descriptors(slots)
    mine.busy = True
    return mine


_BELLS: dict[tuple[int, str], int | None] = {}
"""The process's descriptor of each bell, opened once, both to listen and to ring."""
_BELLS_LOCK = threading.Lock()


def _process_bell(path: str | None) -> int | None:
    """The bell at `path` opened both to listen and to ring, once per process; None when there is none.

    To listen, it is opened for writing too: a pipe open only for reading reads as ended, at once, while nobody
    writes to it. To ring, it is opened for reading too: the open never fails for want of a listener, and the
    write never meets a pipe nobody reads (a head may stop listening), which raises or, where SIGPIPE is not
    ignored, kills the process. Since every process keeps it open, rings made while nobody listens stay in the
    pipe (up to its size, then they are dropped): the head drains them before it looks. A ring that opened and
    closed it cost 59 µs of CPU in an ALFWorld episode, 39 µs without them (the write itself, `someone_waits`)."""
    if path is None:
        return None
    key = (os.getpid(), path)
    with _BELLS_LOCK:
        if key not in _BELLS:
            for other in [k for k in _BELLS if k[0] != key[0]]:  # a forked child's copy of its parent's
                fd = _BELLS.pop(other)
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            try:
                _BELLS[key] = os.open(path, os.O_RDWR | os.O_NONBLOCK)
            except OSError:  # the pipe was removed (a tmp cleaner): look every RECHECK_SECONDS
                return None
        return _BELLS[key]


def someone_waits(line: int) -> bool:
    """Whether a step is at the head of the line (it holds the line's lock), so that a slot given back must ring.

    Asked after the slot is given back: a step that takes the head after the question looks at the slots after
    it, and sees that one. A ring writes to the named pipe, and the file system then updates the pipe file's
    times (on ext4 a journal entry, whenever a clock tick has passed since the last): 39 µs of CPU per ring in an
    ALFWorld episode, spent for nothing at every step nobody waited for."""
    try:
        fcntl.flock(line, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(line, fcntl.LOCK_UN)
    return False


def _drain(bell: int) -> None:
    with contextlib.suppress(BlockingIOError):
        while os.read(bell, 4096):
            pass


def named_pipe(path: Path) -> str | None:
    """The named pipe at `path`, made if missing; None where the file system has none (the head of the line
    then only looks every `RECHECK_SECONDS`)."""
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: no `mkfifo` on this system
        os.mkfifo(path, 0o600)
    try:
        return str(path) if stat.S_ISFIFO(os.stat(path).st_mode) else None
    except OSError:
        return None


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
