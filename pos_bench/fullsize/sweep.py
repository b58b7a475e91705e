"""Playing the sweep the way a user does: the stand-in in one child process, `python -m pos_bench -m …` in
another (sampled while it runs); the estimate taken before it; the tables and the report built after it."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_bench.fullsize.browser import browser_check
from pos_bench.fullsize.processes import Sample, Sampler, alive
from pos_bench.models.transport import NO_PROXY_NAMES, reached_directly
from pos_bench.standin.command import READY

REPO = Path(__file__).resolve().parents[2]
PR_SET_CHILD_SUBREAPER = 36
"""prctl(2)'s option, from <linux/prctl.h>."""
SERVED = "standin"
"""The model id the stand-in lists and every pointed model asks for."""


@contextlib.contextmanager
def standin(argv: Sequence[str]) -> Iterator[str]:
    """The stand-in in a child process (as a real endpoint: its work is not counted as the harness's); its
    base URL."""
    command = [sys.executable, "-m", "pos_bench.standin", *argv, "--port", "0"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO)
    before = {name: os.environ.get(name) for name in NO_PROXY_NAMES}
    try:
        line = child.stdout.readline() if child.stdout else ""
        if not line.startswith(READY):
            raise SystemExit(f"the stand-in did not start: {line!r}")
        url = line[len(READY) :].strip()
        reached_directly(urllib.parse.urlsplit(url).hostname or "127.0.0.1")
        yield url
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        child.terminate()
        child.wait(timeout=30)


def standin_stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/standin/stats", timeout=10) as reply:
        return json.loads(reply.read())


def pointed_at(url: str, overrides: Sequence[str]) -> list[str]:
    """Overrides that send the policy model and every per-role model of the config to the stand-in."""
    from pos_bench.estimate import combinations, compose, configs

    moved = ["model=vllm", f"model.base_url={url}", f"model.model={SERVED}"]
    with configs():
        first = next(combinations([*overrides, *moved]))
        cfg = compose(first, hydra=True)
    for role in cfg.roles or {}:
        if f"model@roles.{role}" in cfg.hydra.runtime.choices:
            moved.append(f"model@roles.{role}=vllm")
        else:
            moved.append(f"roles.{role}.api_key_env=null")
        moved += [f"roles.{role}.base_url={url}", f"roles.{role}.model={SERVED}"]
    return moved


@dataclass(frozen=True)
class Played:
    wall: float
    cpu: float
    """User + system seconds of the sweep's process tree (what it and its waited-for children used)."""
    code: int
    samples: tuple[Sample, ...]
    left_running: tuple[str, ...]
    output: str


def play(overrides: Sequence[str], interval: float) -> Played:
    """`python -m pos_bench -m <overrides>` in a child process, sampled while it runs."""
    adopt_orphans()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    command = [sys.executable, "-m", "pos_bench", "-m", *overrides]
    with tempfile.TemporaryFile("w+") as out:
        child = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            with Sampler(child.pid, interval) as sampler:
                code = child.wait()
        except BaseException:  # stopped (Ctrl-C, SIGTERM): the sweep stops its workers and keeps its rows
            child.terminate()
            child.wait(timeout=120)
            raise
        out.seek(0)
        output = out.read()
    wall = time.perf_counter() - started
    left = alive(sampler.seen)
    # helpers (the fork server, resource trackers) end on their own once the driver is gone
    for _ in range(50):
        reap(sampler.seen)
        if not left:
            break
        time.sleep(0.1)
        left = alive(sampler.seen)
    reap(sampler.seen)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Played(wall, cpu, code, tuple(sampler.samples), tuple(left), output)


def adopt_orphans() -> None:
    """Become the reaper of this process's descendants whose parent ends first (Linux's child subreaper): the
    workers forked by the driver's fork server, and the server itself, outlive the driver by a moment. Reaped
    here, their CPU counts in this process's `RUSAGE_CHILDREN`, as a worker's did when the driver reaped it."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap(pids: set[int]) -> None:
    """Wait for those of `pids` that ended and were left to this process (`adopt_orphans`)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def predicted(overrides: Sequence[str], probe_tasks: int = 5) -> dict[str, tuple[float, float, float]]:
    """`python -m pos_bench.estimate`'s calls and tokens per episode per (bench/method), from an empty
    results root (so from each method's structure, as before a first run)."""
    from pos_bench.estimate import configs, estimate

    with tempfile.TemporaryDirectory(prefix="pos_bench-fullsize-estimate-") as empty, configs():
        options = argparse.Namespace(
            seconds_per_call=None,
            concurrency=None,
            results=empty,
            input_per_mtok=None,
            output_per_mtok=None,
            probe_turns=None,  # the whole turn budget
            probe_tasks=probe_tasks,
        )
        found = estimate(list(overrides), options)
    out = {}
    for row in found:
        roles = row.profile.roles.values()
        out[f"{row.choices['bench']}/{row.choices['method']}"] = (
            sum(r.calls for r in roles),
            sum(r.input_tokens for r in roles),
            sum(r.output_tokens for r in roles),
        )
    return out


def predicted_or_why(
    overrides: Sequence[str], probe_tasks: int = 5
) -> tuple[dict[str, tuple[float, float, float]], str]:
    """`predicted`, or no prediction and the reason in one line. The estimate is one figure of the check: when it
    fails (a setting it cannot probe, a probe episode that errs), its traceback goes to stderr, the printout says
    why in its estimate section, and the sweep is still played and measured."""
    try:
        return predicted(overrides, probe_tasks), ""
    except Exception as error:  # noqa: BLE001 - whatever stops the estimate is reported, never the sweep's end
        traceback.print_exc(file=sys.stderr)
        reason = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        print(
            f"full-size check: the estimate failed ({reason}); the sweep is played without it",
            file=sys.stderr,
        )
        return {}, reason


@dataclass(frozen=True)
class Built:
    tables_s: float
    report_s: float
    report_bytes: int
    failed: tuple[str, ...] = field(default=())
    browser: str = ""
    """The browser check's line (`browser.py`)."""


def build_times(root: Path, *, browser: bool = True) -> Built:
    """Wall seconds of `scripts/tables.py` and `python -m pos_bench.report` over the whole sweep."""
    failed, seconds = [], []
    report = root / "report.html"
    for command in (
        [sys.executable, str(REPO / "scripts" / "tables.py"), str(root)],
        [sys.executable, "-m", "pos_bench.report", str(root), "-o", str(report)],
    ):
        started = time.perf_counter()
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
        seconds.append(time.perf_counter() - started)
        if done.returncode:
            failed.append(f"{' '.join(command[1:3])}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
    size = report.stat().st_size if report.exists() else 0
    seen = browser_check(report) if report.exists() and browser else "browser check skipped (--no-browser)"
    return Built(seconds[0], seconds[1], size, tuple(failed), seen)
