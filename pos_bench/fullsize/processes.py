"""The sweep's processes, sampled while it plays: RSS, open files and CPU of the driver and of every process
below it, through psutil when it is installed (it comes with several extras), else /proc."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self


@dataclass(frozen=True)
class Sample:
    """The sweep's processes at one moment (`time` in seconds since the epoch, like transcript events)."""

    time: float
    driver_rss: int
    driver_files: int
    workers: int
    workers_rss: int
    worker_rss_max: int
    workers_files: int
    cpu: float
    """User + system seconds the driver and every worker seen so far have used (a gone worker: its last)."""


class Sampler:
    """Samples a process and its descendants every `interval` seconds in a thread, through psutil when it is
    installed, else /proc."""

    def __init__(self, pid: int, interval: float):
        self.pid, self.interval = pid, interval
        self.samples: list[Sample] = []
        self.seen: set[int] = set()
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            sample = self.sample()
            if sample is not None:
                self.samples.append(sample)
            self._stop.wait(self.interval)

    def sample(self) -> Sample | None:
        try:
            children = descendants(self.pid)
            driver = usage(self.pid)
        except (OSError, LookupError):
            return None  # the driver has just exited
        self.seen.update(children)
        workers = [(pid, u) for pid, u in zip(children, map(usage_or_none, children), strict=True) if u]
        self._cpu.update({self.pid: driver[2], **{pid: u[2] for pid, u in workers}})
        workers = [u for _, u in workers]
        return Sample(
            time=time.time(),
            driver_rss=driver[0],
            driver_files=driver[1],
            workers=len(workers),
            workers_rss=sum(u[0] for u in workers),
            worker_rss_max=max((u[0] for u in workers), default=0),
            workers_files=sum(u[1] for u in workers),
            cpu=sum(self._cpu.values()),
        )


def descendants(pid: int) -> list[int]:
    try:
        import psutil
    except ImportError:
        found, todo = [], [pid]
        while todo:
            for task in Path(f"/proc/{todo.pop()}/task").iterdir():
                kids = [int(k) for k in (task / "children").read_text().split()]
                found += kids
                todo += kids
        return found
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess as error:
        raise LookupError(pid) from error


def usage(pid: int) -> tuple[int, int, float]:
    """Resident bytes, open file descriptors and CPU seconds (user + system) of `pid`."""
    try:
        import psutil
    except ImportError:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        ticks = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11:13]
        cpu = sum(int(t) for t in ticks) / os.sysconf("SC_CLK_TCK")
        return pages * os.sysconf("SC_PAGE_SIZE"), len(os.listdir(f"/proc/{pid}/fd")), cpu
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            times = process.cpu_times()
            return process.memory_info().rss, process.num_fds(), times.user + times.system
    except psutil.Error as error:
        raise LookupError(pid) from error


def usage_or_none(pid: int) -> tuple[int, int, float] | None:
    try:
        return usage(pid)
    except (OSError, LookupError):
        return None


def alive(pids: set[int]) -> list[str]:
    """The command lines of those of `pids` that still run (zombies aside)."""
    left = []
    for pid in pids:
        with contextlib.suppress(OSError):
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state != "Z":
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                left.append(f"{pid}: {command[:200]}")
    return left


def cpu_between(samples: Sequence[Sample], start: float, end: float) -> float:
    """CPU seconds the sampled processes used from the last sample before `start` to the first after `end`."""
    if not samples:
        return 0.0
    first = next((s for s in reversed(samples) if s.time <= start), samples[0])
    last = next((s for s in samples if s.time >= end), samples[-1])
    return last.cpu - first.cpu


def children() -> set[int]:
    """This process's children and their descendants, now."""
    try:
        return set(descendants(os.getpid()))
    except (OSError, LookupError):
        return set()


def footprint(before: set[int]) -> tuple[int, float]:
    """The processes below this one that were not there `before` (an episode's servers, started since), and
    their resident memory in MB together."""
    started = children() - before
    sizes = [u[0] for u in map(usage_or_none, started) if u is not None]
    return len(sizes), sum(sizes) / 1e6
