"""Worker processes forked from one server process that has imported, once, what every episode imports.

A worker started from scratch spends ~0.7 CPU-s before its first episode plays: Python's start, then imports
(ALFWorld's engine, TextWorld, ~0.4 s; the OpenAI SDK ~0.35 s; pos_bench's episode code ~0.15 s). Sixteen workers
cost ~11 CPU-s, on a 2-core machine ~6 s of wall time before the 16th episode starts, all of it paid by the first
run of a sweep. Measured on 48 raw ALFWorld games against the stand-in: client CPU per call 3.41 / 4.63 / 6.93 ms
with 4 / 8 / 16 workers, i.e. ~0.73 CPU-s per worker over ~2.2 ms per call. Forked, the 16 workers' run took
2.86 ms per call (the server's 1.1–1.3 CPU-s of imports, paid once before the first episode, left out).

So process slots are started through Python's forkserver (`multiprocessing`'s own, Linux's default start method
from Python 3.14): a server process started once per driver imports the run's modules (`preload`), and each
worker is a fork of it, sharing those modules' memory until it writes to it. What is imported is named by the
run's config: `pos_bench.runner.episode` and the module of every `_target_` in it (benchmark, method, model, role
models). Then each module imported so far that lists a `WORKER_IMPORTS` (the engines, SDKs and tokenizers it
imports only on first use, so that a config error or `--cfg` costs nothing) has those imported too.

A worker still gets what a worker started from scratch gets:
- the driver's working directory, import path and main module name, at its own start (`multiprocessing` sends
  them);
- the driver's environment at its own start (`_worker_start` sets it from what the slot sent);
- the imports of modules the preload did not name, on first use.

What it does not get: modules that the server imported before a change made in the driver afterwards (a source
file edited, an import path changed between two runs of one notebook) stay as they were imported. Such a change
needs a new driver process, as it did for the idle workers a run leaves to the next one.

A worker ends as soon as the driver is gone, `kill -9` included (`slots._worker_start`); the server ends once the
driver and every worker it forked are gone (it waits on a pipe they all hold open).

Like any forkserver or spawn start, a worker imports the driver's main script (a user's own script that runs
pos_bench) under the name `__mp_main__`: such a script keeps its work under `if __name__ == "__main__":`. The
`python -m pos_bench …` entry points have no such script.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

PRELOAD_VARIABLE = "POS_BENCH_WORKER_PRELOAD"
"""The modules the server imports, comma-separated; set only in the server's own environment."""

ALWAYS = ("pos_bench.runner.episode",)


def worker_modules(cfg: Mapping[str, Any]) -> tuple[str, ...]:
    """The modules every worker of the run configured by `cfg` imports: the episode code and the module of each
    `_target_` in the config."""
    found = dict.fromkeys(ALWAYS)
    for target in targets(cfg):
        module, _, _ = target.rpartition(".")
        if module:
            found[module] = None
    return tuple(found)


def targets(node: Any) -> Iterator[str]:
    if isinstance(node, Mapping):
        target = node.get("_target_")
        if isinstance(target, str):
            yield target
        for value in node.values():
            yield from targets(value)
    elif isinstance(node, list | tuple):
        for value in node:
            yield from targets(value)


def available() -> bool:
    """Whether this platform has a forkserver (not Windows, where workers start from scratch, as loky starts them)."""
    return "forkserver" in multiprocessing.get_all_start_methods()


def start(modules: tuple[str, ...]) -> None:
    """Start this process's forkserver importing `modules` (and their `WORKER_IMPORTS`), unless it runs
    already: a sweep's later runs fork from the server of its first."""
    if not available():
        return
    from multiprocessing import forkserver

    forkserver.set_forkserver_preload(["pos_bench.runner.pool.preload"])
    before = os.environ.get(PRELOAD_VARIABLE)
    os.environ[PRELOAD_VARIABLE] = ",".join(modules)  # the server copies the environment when it starts
    try:
        forkserver.ensure_running()
    finally:
        if before is None:
            os.environ.pop(PRELOAD_VARIABLE, None)
        else:
            os.environ[PRELOAD_VARIABLE] = before


def context() -> Any:
    """The `multiprocessing` context loky starts process slots with (None: loky's own)."""
    from joblib.externals.loky.backend.context import get_context

    return get_context("forkserver") if available() else None


def preload(names: str) -> list[str]:
    """Import each module in `names` (comma-separated), then the `WORKER_IMPORTS` of every module imported by
    then; return those that failed. A module that fails is left to the worker, which meets the failure where the
    episode needs the module, with its own error."""
    failed = [name for name in filter(None, names.split(",")) if not imported(name)]
    wanted = {
        extra for module in list(sys.modules.values()) for extra in getattr(module, "WORKER_IMPORTS", ())
    }
    return failed + [name for name in sorted(wanted) if not imported(name)]


def imported(name: str) -> bool:
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001 - the server must start whatever one module does on import
        return False
    return True
