"""Pre-flight checks → lock the run folder → skip finished tasks → episodes on worker slots → `results.jsonl`
(one writer) → summary.

Only plain config dicts and `EpisodeResult`s cross process boundaries; every worker builds its own
benchmark, env, model and method, and a fresh method for each episode. `episodes()` is the one place that
decides where episodes run, so another backend slots in there.
"""

from __future__ import annotations

import functools
import gc
import os
import shutil
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from hydra.errors import InstantiationException

from pos_bench.backends import Placement, Pool, Shared, session, worker_parent_pid
from pos_bench.build import build
from pos_bench.context_load import context_load
from pos_bench.identity import RunIdentity, check_folder, run_identity
from pos_bench.loop import RetryBudget, play
from pos_bench.models.cache import CacheConfig, ResponseStore
from pos_bench.models.retry import RetryPolicy
from pos_bench.models.roles import build_model
from pos_bench.preflight import ConfigError, check_config
from pos_bench.progress import Progress
from pos_bench.protocols import Benchmark, Env, ExpertBenchmark, LabelledBenchmark, Model, SourcedBenchmark
from pos_bench.redact import redactor_for
from pos_bench.results import ResultsFile
from pos_bench.summary import Price, Summary, summarize, write_summary
from pos_bench.transcript import Recorded, Transcript, episode_dir, write_result
from pos_bench.types import EpisodeResult, Observation, Task, result_from_json, result_row, to_jsonable


@dataclass(frozen=True)
class RunnerConfig:
    n_jobs: int = 1
    """Episodes in flight at once."""
    backend: str = "loky"
    """`loky` (one worker process per slot, for CPU-bound engines and local models), `threading` (for remote
    endpoints, where episodes mostly wait on the network) or `ray` (processes on a Ray cluster); see
    `backends.py`."""
    workers: int | None = None
    """Ray: worker processes sharing the `n_jobs` episodes in flight (default: one per episode)."""
    ray_address: str | None = None
    """Ray: the cluster to join; default `$RAY_ADDRESS`, else a local instance on loopback."""
    retry_errors: bool = True
    """On resume, play again the episodes that ended in an error (their old rows are dropped); false keeps
    them as finished."""
    max_meta_per_turn: int = 3
    """Meta-actions (glimpse, retrieve…) allowed in one turn before the turn counts as spent."""
    progress: bool = True

    def __post_init__(self) -> None:
        if self.n_jobs == 0 or self.n_jobs < -1:
            raise ValueError(f"runner.n_jobs must be a positive number or -1 (all cores), got {self.n_jobs}")
        Placement(self.backend, self.n_jobs, self.workers, self.ray_address)
        if self.max_meta_per_turn < 0:
            raise ValueError(f"runner.max_meta_per_turn must be ≥ 0, got {self.max_meta_per_turn}")


RECORDS = {
    "runner": RunnerConfig,
    "retry": RetryPolicy,
    "cache": CacheConfig,
    "prices": Price,
    "loop": RetryBudget,
}
"""The plain config nodes and the records that validate them."""


class RunLocked(RuntimeError):
    """Another process is writing the same run folder."""


class RunInterrupted(RuntimeError):
    """Ctrl-C stopped the run; finished episodes are saved."""


WATCHER = "pos_bench-parent-watcher"


def exit_with_parent(parent_pid: int) -> None:
    """In a worker process, end the worker as soon as the run's main process is gone.

    A run killed with `kill -9` would otherwise leave its workers finishing their episodes (and writing
    into episode folders that the resumed run is using). One watcher thread per worker process.
    """
    if os.getpid() == parent_pid or any(t.name == WATCHER for t in threading.enumerate()):
        return

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name=WATCHER, daemon=True).start()


def error_result(task: Task, error: BaseException, usage: Mapping[str, Any] | None = None) -> EpisodeResult:
    return EpisodeResult(
        task_id=task.id,
        status="error",
        error=f"{type(error).__name__}: {error}"[:4000],
        usage=dict(usage or {}),
        task_meta=dict(task.meta),
    )


def run_episode(
    cfg: Mapping[str, Any],
    task: Task,
    run_dir: Path,
    parent_pid: int | None = None,
    shared: Shared | None = None,
) -> EpisodeResult:
    """Play one task in isolation: any exception becomes an `error` result, never a crashed run. The full
    result goes to the episode's `result.json`; the compact row (plain values, secrets redacted) comes back."""
    if parent_pid is not None:
        exit_with_parent(parent_pid)
    redactor = redactor_for(cfg)
    folder = episode_dir(run_dir, task.id)
    shutil.rmtree(folder, ignore_errors=True)  # leftovers of an episode killed mid-way
    log = Transcript(folder / "events.jsonl", keep=False, redactor=redactor)
    model: Recorded | None = None
    try:
        benchmark = build(cfg["bench"])
        services = {"budget": shared.budget, "store": shared.store} if shared else {}
        model = Recorded(build_model(cfg, **services), log)
        env = make_env(benchmark, model, expert=bool(cfg.get("expert", False)))
        try:
            with build(cfg["method"])(model=model) as method:
                result = play(
                    task,
                    env,
                    method,
                    model,
                    brief=benchmark.brief,
                    max_turns=benchmark.max_turns,
                    log=log,
                    max_meta_per_turn=cfg["runner"].get("max_meta_per_turn", 3),
                    budget=RetryBudget(**(cfg.get("loop") or {})),
                )
        finally:
            env.close()
        result = replace(result, usage=dict(model.usage), served=tuple(model.served))
    except Exception as error:  # noqa: BLE001 - the episode boundary: record it, the other episodes go on
        log.write("error", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
        result = error_result(task, error, model.usage if model else None)
    if model is not None:
        result = replace(result, **vars(context_load(model.calls)))
    try:
        write_result(folder / "result.json", result, redactor)
    except Exception as error:  # noqa: BLE001 - a result that cannot be written must not lose the episode
        log.write("error", error=f"result.json not written: {type(error).__name__}: {error}")
    log.close()
    return result_from_json(redactor.value(result_row(result)))


def make_env(benchmark: Benchmark, model: Model, *, expert: bool) -> Env:
    """The benchmark's environment, or its expert environment when the run plays the expert."""
    if not expert:
        return benchmark.make_env(model)
    if not isinstance(benchmark, ExpertBenchmark):
        raise ValueError(no_expert(benchmark))  # noqa: TRY004 - a config choice, not a programming error
    return benchmark.make_expert_env(model)


def no_expert(benchmark: Benchmark) -> str:
    return (
        f"method=expert needs a benchmark with a planner expert of its own, and {type(benchmark).__name__} has "
        "none: the expert runs on bench=alfworld and bench=toy."
    )


def episodes(
    work: Callable[[Task], EpisodeResult],
    tasks: list[Task],
    pool: Pool,
    tick: Callable[[list[Task]], None] | None = None,
) -> Iterator[EpisodeResult]:
    """Where episodes run (`backends.py`): one result per task, in completion order; a dead worker costs its
    episode only."""
    return pool.map_unordered(work, tasks, tick=tick)


def pending_tasks(tasks: Iterable[Task], results: ResultsFile, *, retry_errors: bool) -> list[Task]:
    if retry_errors:
        results.drop_errors()
    finished = {r.task_id for r in results.read()}
    return [t for t in tasks if t.id not in finished]


@dataclass(frozen=True)
class Prepared:
    """What the pre-flight checks built: the task list and the model's identity."""

    tasks: list[Task]
    description: Mapping[str, Any]
    labels: Mapping[str, str] = field(default_factory=dict)
    """The benchmark's own labels (e.g. `judge`), added to the run's."""
    upstream: Mapping[str, Any] | None = None
    """The benchmark's outside code (`SourcedBenchmark.upstream()`), for run.json and the fingerprint."""


def preflight(cfg: Mapping[str, Any]) -> Prepared:
    """Find, before the first episode, the config errors that would fail every episode (`ConfigError`)."""
    check_config(cfg, RECORDS)
    try:
        benchmark = build(cfg["bench"])
        tasks = list(benchmark.tasks())
        upstream = to_jsonable(benchmark.upstream()) if isinstance(benchmark, SourcedBenchmark) else None
    except Exception as error:  # any failure here would fail every episode: report it once, with its cause
        cause = error.__cause__ if isinstance(error, InstantiationException) and error.__cause__ else error
        raise ConfigError(f"bench cannot be built: {type(cause).__name__}: {cause}") from error
    if cfg.get("expert", False) and not isinstance(benchmark, ExpertBenchmark):
        raise ConfigError(no_expert(benchmark))
    labels = dict(benchmark.labels) if isinstance(benchmark, LabelledBenchmark) else {}
    try:
        model = build_model(cfg)
        description = dict(model.describe())
        method = build(cfg["method"])(model=model)
    except Exception as error:
        raise ConfigError(f"the model or method cannot be built: {type(error).__name__}: {error}") from error
    problem = method.unsupported(first_observation(benchmark, model, tasks)) if tasks else None
    if problem:
        raise ConfigError(problem)
    cache = CacheConfig(**(cfg.get("cache") or {}))
    if cache.mode != "off":
        ResponseStore(cache.path, timeout=5.0).check()
    return Prepared(tasks, description, labels, upstream)


def first_observation(benchmark: Benchmark, model: Model, tasks: list[Task]) -> Observation:
    """The opening observation of the first task, for the method's `unsupported` check (no action taken)."""
    env = benchmark.make_env(model)
    try:
        return env.reset(tasks[0])
    finally:
        env.close()


@contextmanager
def older_objects_frozen() -> Iterator[None]:
    """While the episodes run, the garbage collector leaves out what existed before them (modules, classes,
    the run's config): a full collection, which stops every thread of the process, then scans what the
    episodes made instead of the whole heap (measured: 0.1–0.2 s per pause, several per run of 64 threads).
    Unfrozen afterwards, so nothing outlives the run uncollected. A process that froze objects itself (a
    pre-fork server) keeps its own arrangement: nothing is frozen or unfrozen then."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def writer_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run folder's lock: a second process on the same folder is refused, never a second writer."""
    owner = run_dir / ".writer"
    lock = FileLock(run_dir / ".lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        holder = owner.read_text().strip() if owner.is_file() else "unknown"
        raise RunLocked(
            f"another pos_bench process ({holder}) is writing {run_dir}; nothing was run. Wait for it to finish "
            "(then rerun this command to resume) or stop it."
        ) from None
    try:
        owner.write_text(f"pid {os.getpid()}")
        yield
    finally:
        lock.release()


def run(
    cfg: Mapping[str, Any],
    run_dir: Path,
    labels: Mapping[str, Any],
    *,
    prepared: Prepared | None = None,
    identity: RunIdentity | None = None,
) -> Summary:
    """Play every pending task of the configured benchmark and write the run's summary."""
    prepared = prepared or preflight(cfg)
    labels = {**labels, **prepared.labels}
    identity = identity or run_identity(cfg, prepared.description, prepared.upstream)
    runner = RunnerConfig(**cfg.get("runner", {}))
    redactor = redactor_for(cfg)
    check_folder(run_dir, identity)
    run_dir.mkdir(parents=True, exist_ok=True)
    with writer_lock(run_dir):
        results = ResultsFile(run_dir / "results.jsonl", redactor)
        todo = pending_tasks(prepared.tasks, results, retry_errors=runner.retry_errors)
        meta = {
            "labels": dict(labels),
            "identity": {"fingerprint": identity.fingerprint, "settings": identity.settings},
            "model": prepared.description,
            "upstream": prepared.upstream,
            "config": cfg,
            # SPEC-BASE §0: how unusable replies end is a framework choice, recorded with the run
            "retry_budget": to_jsonable(RetryBudget(**(cfg.get("loop") or {}))),
        }
        write_result(run_dir / "run.json", meta, redactor)
        total = len(prepared.tasks)
        progress = Progress(run_dir, total=total, finished=total - len(todo), enabled=runner.progress)
        placement = Placement(runner.backend, runner.n_jobs, runner.workers, runner.ray_address)
        try:
            with session(placement, cfg) as pool, older_objects_frozen():
                work = functools.partial(
                    run_episode,
                    cfg,
                    run_dir=run_dir.resolve(),
                    parent_pid=worker_parent_pid(runner.backend),
                    shared=pool.shared,
                )
                for result in episodes(work, todo, pool, tick=progress.tick):
                    record(results, result)
                    progress.finished(result)
        except KeyboardInterrupt:
            raise RunInterrupted(
                f"interrupted: {progress.saved} of {total} episodes "
                f"are saved in {run_dir}; run the same command again to resume."
            ) from None
        finally:
            progress.close()
        wanted = {t.id for t in prepared.tasks}
        summary = summarize([r for r in results.read() if r.task_id in wanted], labels, cfg.get("prices"))
        write_summary(run_dir / "summary.json", summary, redactor)
    return summary


def record(results: ResultsFile, result: EpisodeResult) -> None:
    """Append `result`; a result that cannot be written becomes an `error` row, so the run goes on."""
    try:
        results.append(result)
    except (TypeError, ValueError, UnicodeError) as error:
        results.append(error_result(Task(result.task_id, meta=result.task_meta), error))
