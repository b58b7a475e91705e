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

The slots are lock files (`flock`) in one folder per user on the host, so every worker process and thread of
every run on the host draws from the same ones: two runs side by side share the host's cores as well. On a
Ray cluster each host has its own folder and, by default, its own core count. Where `fcntl` is missing
(Windows) there is no limit.

A step that finds every slot taken waits in line (one more lock file, which the kernel gives to one waiter at a
time). The head of the line takes the first slot given back: a step that ends rings a bell (a named pipe the head
listens on), and the head looks again at least every `RECHECK_SECONDS` (a worker killed mid-step frees its slot
without ringing). Before, a waiter blocked on one slot chosen at random and kept waiting while another slot was
free and its core idle: lh_harness on 48 ALFWorld games, 16 in flight on 2 cores, had the cores 6.0-6.5% idle
through the run (`vmstat`), 3.7% with the bell, and the run 4% shorter (acon: 3.4% and 0.4% idle, 4.5% shorter).
The head looking every 2 ms instead of listening had them 3.1% idle, but the looking cost 1.7% of a core; the
bell costs nothing while nobody rings it (docs/reference/measurements.md).

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
from collections.abc import Iterator
from pathlib import Path

from pos_bench.protocols import Benchmark, ComputeBoundBenchmark, Gate

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

    def __init__(self, count: int, folder: Path | None = None):
        if count < 1:
            raise ValueError(f"env slots must be ≥ 1, got {count}")
        self.count = count
        self.folder = folder or slots_folder()
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.paths = [str(self.folder / f"slot-{i}.lock") for i in range(count)]
        # one line and one bell per slot count, so runs side by side with different counts never mix them
        self.line = str(self.folder / f"line-{count}.lock")
        self.bell = named_pipe(self.folder / f"bell-{count}")

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        # each take opens its own descriptors: flock excludes other open descriptions, so two threads of one
        # process holding the same descriptor would not exclude each other
        descriptors = [os.open(path, os.O_CREAT | os.O_RDWR, 0o600) for path in self.paths]
        try:
            if not any(_try_lock(fd) for fd in descriptors):
                self._wait_in_line(descriptors)
            yield
        finally:
            for fd in descriptors:  # closing them gives the slot taken back
                os.close(fd)
            self._ring()

    def _wait_in_line(self, descriptors: list[int]) -> None:
        """Take the line's lock (behind the steps waiting ahead), then the first slot given back."""
        line = os.open(self.line, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(line, fcntl.LOCK_EX)
            bell = self._open_bell()
            # poll, not select: a worker may hold more than select's 1,024 descriptors
            ringing = select.poll()
            if bell is not None:
                ringing.register(bell, select.POLLIN)
            try:  # listening before looking: a slot given back after the look rings, one before it is seen
                while not any(_try_lock(fd) for fd in descriptors):
                    ringing.poll(RECHECK_SECONDS * 1000)  # with no bell, a wait of RECHECK_SECONDS
                    if bell is not None:
                        with contextlib.suppress(BlockingIOError):
                            os.read(bell, 4096)
            finally:
                if bell is not None:
                    os.close(bell)
        finally:
            os.close(line)

    def _open_bell(self) -> int | None:
        """The bell, opened both to listen and to ring; None when there is none.

        To listen, it is opened for writing too: a pipe open only for reading reads as ended, at once, while
        nobody writes to it. To ring, it is opened for reading too: the open never fails for want of a listener,
        and the write never meets a pipe nobody reads (a head may stop listening between the two), which raises
        or, where SIGPIPE is not ignored, kills the process; with nobody listening, the ring is dropped when the
        pipe is closed."""
        if self.bell is None:
            return None
        try:
            return os.open(self.bell, os.O_RDWR | os.O_NONBLOCK)
        except OSError:  # the pipe was removed (a tmp cleaner): look every RECHECK_SECONDS
            return None

    def _ring(self) -> None:
        """Tell the head of the line, if there is one, that a slot was given back. Never raises: a ring that
        cannot be made costs the head at most `RECHECK_SECONDS`, never the step."""
        bell = self._open_bell()
        if bell is None:
            return
        try:
            with contextlib.suppress(BlockingIOError):  # a full pipe holds rings enough
                os.write(bell, b"\0")
        finally:
            os.close(bell)


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
