"""Everything between a composed config and `results.jsonl`: `run(cfg, run_dir, labels)` goes pre-flight →
identity → lock → pending episodes → pool → summary.

- `preflight.py`: config checks and one build of everything before the first episode; `RunnerConfig`.
- `identity.py`: the run's fingerprint and folder; `code.py`: the episode code recorded beside it.
- `results.py`: `results.jsonl`, its one writer (the folder lock) and the pending tasks.
- `episode.py`: one episode in a worker.
- `pool/`: where episodes run (thread/process slots, Ray).
- `summary.py`, `progress.py`, `rescore.py`: the summary, the progress bar, judging a finished run again.
- `places.py`, `logs.py`: where the run was written from; where log lines go while it plays.
"""

from __future__ import annotations

import functools
import gc
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pos_bench.loop import RetryBudget
from pos_bench.redact import Redactor, redactor_for, scrub_urls
from pos_bench.runner import stop
from pos_bench.runner.code import CodeRecord, check_code, code_record
from pos_bench.runner.episode import run_episode
from pos_bench.runner.identity import RunIdentity, check_folder, run_identity
from pos_bench.runner.logs import run_logs
from pos_bench.runner.memory import fitted
from pos_bench.runner.places import here, moved, places
from pos_bench.runner.pool import Pool, one_episode_per_process, session
from pos_bench.runner.preflight import RECORDS, ConfigError, Prepared, RunnerConfig, preflight
from pos_bench.runner.progress import Progress
from pos_bench.runner.results import (
    NO_SPACE,
    DiskFull,
    ResultsFile,
    RunLocked,
    pending_tasks,
    record,
    trials_of,
    writer_lock,
)
from pos_bench.runner.summary import Summary, summarize, write_summary
from pos_bench.transcript import write_result
from pos_bench.types import Task, to_jsonable

__all__ = [
    "RECORDS",
    "ConfigError",
    "DiskFull",
    "Prepared",
    "RunInterrupted",
    "RunLocked",
    "RunnerConfig",
    "preflight",
    "run",
    "shorter_gc_pauses",
]


class RunInterrupted(RuntimeError):
    """Ctrl-C stopped the run; finished episodes are saved."""


def run(
    cfg: Mapping[str, Any],
    run_dir: Path,
    labels: Mapping[str, Any],
    *,
    prepared: Prepared | None = None,
    identity: RunIdentity | None = None,
    overrides: Sequence[str] = (),
) -> Summary:
    """Play every pending (task, trial) of the configured benchmark and write the run's summary. `overrides`
    (the command line's) are recorded in `run.json`, so a copied run folder can be re-scored on its own."""
    prepared = prepared or preflight(cfg)
    labels = {**labels, **prepared.labels}
    identity = identity or run_identity(cfg, prepared.description, prepared.upstream)
    runner = RunnerConfig(**cfg.get("runner", {}))
    redactor = redactor_for(cfg)
    check_folder(run_dir, identity)
    try:
        return play_run(cfg, run_dir, labels, prepared, identity, runner, redactor, overrides)
    except OSError as error:
        if error.errno in NO_SPACE:
            raise DiskFull.from_error(error, run_dir) from error
        raise


def play_run(
    cfg: Mapping[str, Any],
    run_dir: Path,
    labels: Mapping[str, Any],
    prepared: Prepared,
    identity: RunIdentity,
    runner: RunnerConfig,
    redactor: Redactor,
    overrides: Sequence[str] = (),
) -> Summary:
    run_dir.mkdir(parents=True, exist_ok=True)
    with writer_lock(run_dir):
        results = ResultsFile(run_dir / "results.jsonl", redactor)
        where = places(run_dir, here(run_dir))
        if moved(where):
            print(moved(where), flush=True)
        history = code_history(run_dir, code_record(), runner.allow_code_change)
        episodes = trials_of(prepared.tasks, runner.trials)
        todo = pending_tasks(prepared.tasks, results, retry_errors=runner.retry_errors, trials=runner.trials)
        history[-1]["tasks"] = list(dict.fromkeys([*history[-1].get("tasks", []), *(t.id for t in todo)]))
        write_run_json(
            run_dir,
            cfg,
            labels,
            prepared,
            identity,
            redactor,
            history,
            overrides=overrides,
            where=where,
            episodes=len(episodes),
        )
        with run_logs(run_dir, redactor):  # dependencies' log lines and warnings: run.log, not the terminal
            play_pending(cfg, run_dir, runner, episodes, todo, results)
        wanted = {(t.id, t.trial) for t in episodes}
        rows = [r for r in results.read() if (r.task_id, r.trial) in wanted]
        summary = summarize(rows, labels, cfg.get("prices"))
        write_summary(run_dir / "summary.json", summary, redactor)
    return summary


def write_run_json(
    run_dir: Path,
    cfg: Mapping[str, Any],
    labels: Mapping[str, Any],
    prepared: Prepared,
    identity: RunIdentity,
    redactor: Redactor,
    history: list[dict[str, Any]],
    *,
    overrides: Sequence[str] = (),
    where: Sequence[Mapping[str, Any]] = (),
    episodes: int | None = None,
) -> None:
    """The run's `run.json`: labels, identity, the episode code, the model's description, the config it ran
    with, the command-line `overrides` (so a copied folder can be re-scored alone) and the places it was
    written from (`places.py`), and `tasks`, the number of episodes (task, trial) it plays, so a reader knows
    what is left of an interrupted run."""
    meta = {
        "labels": dict(labels),
        "identity": {"fingerprint": identity.fingerprint, "settings": identity.settings},
        "code": {**history[-1]["record"]},
        "code_history": [{k: v for k, v in h.items() if k != "record"} for h in history],
        "model": prepared.description,
        "upstream": prepared.upstream,
        "config": cfg,
        # SPEC-BASE §0: how unusable replies end is a framework choice, recorded with the run
        "retry_budget": to_jsonable(RetryBudget(**(cfg.get("loop") or {}))),
        "overrides": [scrub_urls(o) for o in overrides],
        "places": [dict(p) for p in where],
        "tasks": episodes,
    }
    write_result(run_dir / "run.json", meta, redactor)


def code_history(run_dir: Path, current: CodeRecord, allow_change: bool) -> list[dict[str, Any]]:
    """The folder's `code_history` with `current` last: refused (`CodeChanged`) when the recorded code differs
    and no override is given. A folder from before code was recorded resumes with a printed note."""
    path = run_dir / "run.json"
    recorded: dict[str, Any] = {}
    if path.is_file():
        try:
            recorded = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeError):
            recorded = {}
        if not isinstance(recorded, dict):
            recorded = {}
        if "code" not in recorded:
            print(
                f"note: {path} records no code (written before code was recorded); resuming, and the code "
                "of the episodes played from now on is recorded.",
                flush=True,
            )
    changed = check_code(recorded.get("code"), current, allow_change=allow_change)
    history = [dict(h) for h in recorded.get("code_history") or [] if isinstance(h, dict)]
    if history and history[-1].get("digest") == current.digest:
        history[-1]["record"] = current.as_json()
        return history
    history.append(
        {"digest": current.digest, "commit": current.commit, "changed": changed, "record": current.as_json()}
    )
    return history


def play_pending(
    cfg: Mapping[str, Any],
    run_dir: Path,
    runner: RunnerConfig,
    tasks: list[Task],
    todo: list[Task],
    results: ResultsFile,
) -> None:
    """Play `todo` on the configured pool, appending each result as it comes; Ctrl-C keeps what finished."""
    total = len(tasks)
    progress = Progress(
        run_dir,
        total=total,
        finished=total - len(todo),
        enabled=runner.progress,
        turn_budget=cfg["bench"].get("max_turns"),
    )
    placement, capped = fitted(runner.placement(), cfg["bench"])
    if (
        capped
    ):  # episodes with servers of their own: as many in flight as memory allows, said before the first
        print(capped, flush=True)
    try:
        with session(placement, cfg) as pool, shorter_gc_pauses():
            for result in played(cfg, run_dir, runner, pool, todo, progress):
                record(results, result)
                progress.finished(result)
    except KeyboardInterrupt:
        raise RunInterrupted(
            f"interrupted: {progress.saved} of {total} episodes "
            f"are saved in {run_dir}; run the same command again to resume."
        ) from None
    finally:
        progress.close()


def played(
    cfg: Mapping[str, Any],
    run_dir: Path,
    runner: RunnerConfig,
    pool: Pool,
    todo: list[Task],
    progress: Progress,
) -> Iterator:
    """One result per task in completion order; a dead worker costs its episode only."""
    work = functools.partial(
        run_episode,
        cfg,
        run_dir=run_dir.resolve(),
        own_process=one_episode_per_process(runner.backend),
        shared=pool.shared,
        driver_pid=os.getpid(),
    )

    def tick(in_flight: list[Task]) -> None:
        stop.check()  # a Ctrl-C whose KeyboardInterrupt Python lost still stops the run within a tick
        progress.tick(in_flight)

    return pool.map_unordered(work, todo, tick=tick)


@contextmanager
def shorter_gc_pauses() -> Iterator[None]:
    """Speed shortcut: while the episodes run, the garbage collector leaves out what existed before them
    (`gc.freeze`), so a full collection, which stops every thread of the process, scans what the episodes made
    instead of the whole heap. Saves 0.1–0.2 s per pause, several per run of 64 threads (docs/reference/runner.md "Client cost
    per call", `scripts/bench_concurrency.py`). Unfrozen afterwards, so nothing outlives the run uncollected; a
    process that froze objects itself (a pre-fork server) keeps its own arrangement."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
