"""Tasks → skip finished → parallel episodes → `results.jsonl` (one writer) → summary.

Only plain config dicts and `EpisodeResult`s cross process boundaries; every worker builds its own
benchmark, env, model and method, and a fresh method for each episode.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from joblib import Parallel, delayed
from tqdm import tqdm

from pos_bench.loop import play
from pos_bench.models.roles import build_model
from pos_bench.protocols import Benchmark, Env, ExpertBenchmark, Model, Unsupported
from pos_bench.summary import Summary, summarize, write_summary
from pos_bench.transcript import Recorded, Transcript, write_result
from pos_bench.types import EpisodeResult, Task, result_from_json, to_jsonable


@dataclass(frozen=True)
class RunnerConfig:
    n_jobs: int = 1
    """Episodes in flight at once."""
    backend: str = "loky"
    """joblib backend: `loky` (processes, for CPU-bound engines and local models) or `threading`
    (for remote endpoints, where episodes mostly wait on the network)."""
    retry_errors: bool = False
    """On resume, play again the episodes that ended in an error (their old lines are dropped)."""
    max_meta_per_turn: int = 3
    """Meta-actions (glimpse, retrieve…) allowed in one turn before the turn counts as spent."""
    progress: bool = True

    def __post_init__(self) -> None:
        if self.n_jobs == 0 or self.n_jobs < -1:
            raise ValueError(f"runner.n_jobs must be a positive number or -1 (all cores), got {self.n_jobs}")
        if self.backend not in ("loky", "threading"):
            raise ValueError(f"runner.backend must be 'loky' or 'threading', got {self.backend!r}")
        if self.max_meta_per_turn < 0:
            raise ValueError(f"runner.max_meta_per_turn must be ≥ 0, got {self.max_meta_per_turn}")


def episode_dir(run_dir: Path, task_id: str) -> Path:
    return run_dir / "episodes" / re.sub(r"[^A-Za-z0-9._-]+", "__", task_id)


def exit_with_parent(parent_pid: int) -> None:
    """In a worker process, end the worker as soon as the run's main process is gone.

    A run killed with `kill -9` would otherwise leave its workers finishing their episodes (and writing
    into episode folders that the resumed run is using). One watcher thread per worker process.
    """
    if os.getpid() == parent_pid or any(t.name == WATCHER for t in threading.enumerate()):
        return

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name=WATCHER, daemon=True).start()


WATCHER = "pos_bench-parent-watcher"


def run_episode(
    cfg: Mapping[str, Any], task: Task, run_dir: Path, parent_pid: int | None = None
) -> EpisodeResult:
    """Play one task in isolation: any exception becomes an `error` result, never a crashed run, except
    `Unsupported`, which stops the run (the pair cannot play any episode)."""
    if parent_pid is not None:
        exit_with_parent(parent_pid)
    folder = episode_dir(run_dir, task.id)
    shutil.rmtree(folder, ignore_errors=True)  # leftovers of an episode killed mid-way
    log = Transcript(folder / "events.jsonl", keep=False)
    model: Recorded | None = None
    try:
        benchmark = instantiate(cfg["bench"], _convert_="all")
        model = Recorded(build_model(cfg), log)
        env = make_env(benchmark, model, expert=bool(cfg.get("expert", False)))
        try:
            with instantiate(cfg["method"], _convert_="all")(model=model) as method:
                result = play(
                    task,
                    env,
                    method,
                    model,
                    brief=benchmark.brief,
                    max_turns=benchmark.max_turns,
                    log=log,
                    max_meta_per_turn=cfg["runner"].get("max_meta_per_turn", 3),
                )
        finally:
            env.close()
        result = replace(result, usage=dict(model.usage))
    except Unsupported:
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    except Exception as error:  # noqa: BLE001 - the episode boundary: record it, the other episodes go on
        log.write("error", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
        result = EpisodeResult(
            task_id=task.id,
            status="error",
            error=f"{type(error).__name__}: {error}",
            usage=dict(model.usage) if model else {},
            task_meta=dict(task.meta),
        )
    write_result(folder / "result.json", result)
    log.close()
    return result


def make_env(benchmark: Benchmark, model: Model, *, expert: bool) -> Env:
    """The benchmark's environment, or its expert environment when the run plays the expert."""
    if not expert:
        return benchmark.make_env(model)
    if not isinstance(benchmark, ExpertBenchmark):
        raise Unsupported(no_expert(benchmark))
    return benchmark.make_expert_env(model)


def no_expert(benchmark: Benchmark) -> str:
    return (
        f"method=expert needs a benchmark with a planner expert of its own, and {type(benchmark).__name__} has "
        "none: the expert runs on bench=alfworld and bench=toy."
    )


class ResultsFile:
    """The run's append-only `results.jsonl`, written only by the parent process."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()

    def _drop_torn_tail(self) -> None:
        """A run killed mid-write can leave a partial last line; cut it so resume sees whole records."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            self.path.write_bytes(data[: data.rfind(b"\n") + 1])

    def read(self) -> list[EpisodeResult]:
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return [result_from_json(json.loads(line)) for line in lines if line.strip()]

    def drop_errors(self) -> None:
        kept = [r for r in self.read() if r.status != "error"]
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(to_jsonable(r)) + "\n" for r in kept), encoding="utf-8")
        tmp.replace(self.path)

    def append(self, result: EpisodeResult) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(to_jsonable(result), ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())


def pending_tasks(tasks: Iterable[Task], results: ResultsFile, *, retry_errors: bool) -> list[Task]:
    if retry_errors:
        results.drop_errors()
    finished = {r.task_id for r in results.read()}
    return [t for t in tasks if t.id not in finished]


def run(cfg: Mapping[str, Any], run_dir: Path, labels: Mapping[str, Any]) -> Summary:
    """Play every pending task of the configured benchmark and write the run's summary."""
    runner = RunnerConfig(**cfg.get("runner", {}))
    benchmark = instantiate(cfg["bench"], _convert_="all")
    if cfg.get("expert", False) and not isinstance(benchmark, ExpertBenchmark):
        raise Unsupported(no_expert(benchmark))
    tasks = list(benchmark.tasks())
    results = ResultsFile(run_dir / "results.jsonl")
    todo = pending_tasks(tasks, results, retry_errors=runner.retry_errors)
    meta = {"labels": dict(labels), "model": dict(build_model(cfg).describe()), "config": cfg}
    write_result(run_dir / "run.json", meta)
    jobs = (delayed(run_episode)(cfg, task, run_dir, os.getpid()) for task in todo)
    parallel = Parallel(n_jobs=runner.n_jobs, backend=runner.backend, return_as="generator_unordered")
    bar = tqdm(total=len(tasks), initial=len(tasks) - len(todo), disable=not runner.progress, desc="episodes")
    with bar:
        for result in parallel(jobs):
            results.append(result)
            bar.update(1)
            bar.set_postfix(success=result.success, status=result.status)
    wanted = {t.id for t in tasks}
    summary = summarize([r for r in results.read() if r.task_id in wanted], labels, cfg.get("prices"))
    write_summary(run_dir / "summary.json", summary)
    return summary
