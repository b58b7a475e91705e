"""One episode in a worker: build the benchmark, model and method from the config, play, write the result.

Only plain config dicts and `EpisodeResult`s cross process boundaries: every worker builds its own benchmark,
env and model, and a fresh method for each episode.
"""

from __future__ import annotations

import gc
import os
import traceback
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pos_bench import events
from pos_bench.build import build
from pos_bench.loop import RetryBudget, Tally, play
from pos_bench.models.kept import RESPONSES
from pos_bench.models.roles import build_model
from pos_bench.protocols import Benchmark, Env, ExpertBenchmark, Model, playing_under
from pos_bench.redact import redactor_for
from pos_bench.runner.env_slots import env_gate
from pos_bench.runner.logs import worker_logs
from pos_bench.runner.pool import Shared
from pos_bench.runner.summary import context_load
from pos_bench.transcript import ID_FILE, Recorded, Transcript, episode_dir, remove_inside, write_result
from pos_bench.types import EpisodeResult, Ledger, Task, result_from_json, result_row


def settle_heap() -> None:
    """In a process that plays one episode at a time: collect the garbage of the episodes before, then move
    everything still alive (modules, the environment engine's grammar and knowledge base, the SDKs' types, the
    benchmark's caches) out of the garbage collector's sight (`gc.freeze`).

    An ALFWorld episode allocates enough that Python runs a full collection about four times per episode, and each
    one walked the whole heap of the worker, ~80 ms: 0.3 CPU-s per episode, 7% of the episode's CPU, spent scanning
    objects that live as long as the worker (5 raw games against the stand-in in one process, quiet). After the
    freeze a full collection walks what the episode made. The collection before it walks what the last episode
    left, not the frozen part. Only garbage in reference cycles among the frozen objects, made after they were
    frozen, stays uncollected; the full-size check's worker RSS over a sweep shows whether that grows.

    Not for a process that plays several episodes at once (threads, a Ray actor): it would freeze the objects of
    the episodes in flight."""
    gc.collect()
    gc.freeze()


def error_result(
    task: Task, error: BaseException, usage: Mapping[str, Any] | None = None, ledger: Ledger | None = None
) -> EpisodeResult:
    return EpisodeResult(
        task_id=task.id,
        status="error",
        error=f"{type(error).__name__}: {error}"[:4000],
        usage=dict(usage or {}),
        task_meta=dict(task.meta),
        ledger=ledger or Ledger(),
        trial=task.trial,
    )


def with_ledger(result: EpisodeResult, model: Recorded) -> EpisodeResult:
    """`result` with the serving failures of its policy calls in its ledger, labelled `refused` (or
    `overflow`) when the episode ended on one before the model answered any policy request."""
    ledger = result.ledger + model.failure_ledger()
    unplayed = None
    if result.status == "error" and model.answered == 0 and (ledger.overflow or ledger.refused):
        unplayed = "overflow" if ledger.overflow else "refused"
    return replace(result, ledger=ledger, unplayed=unplayed)


def run_episode(
    cfg: Mapping[str, Any],
    task: Task,
    run_dir: Path,
    own_process: bool = False,
    shared: Shared | None = None,
    driver_pid: int | None = None,
) -> EpisodeResult:
    """Play one task in isolation: any exception becomes an `error` result, never a crashed run. The full
    result goes to the episode's `result.json`; the compact row (plain values, secrets redacted) comes back.
    In a process other than the run's driver (`driver_pid`: a loky or Ray worker), log records go to the run's
    `run.log` as in the driver (`logs.py`)."""
    if own_process:  # a loky worker: one episode at a time
        settle_heap()
    redactor = redactor_for(cfg)
    if driver_pid is not None and os.getpid() != driver_pid:
        worker_logs(run_dir, redactor)
    folder = episode_dir(run_dir, task.id, task.trial)
    remove_inside(folder, run_dir)  # leftovers of an episode killed mid-way
    folder.mkdir(parents=True)
    (folder / ID_FILE).write_text(task.id, encoding="utf-8", errors="surrogatepass")
    log = Transcript(folder / "events.jsonl", keep=False, redactor=redactor)
    model: Recorded | None = None
    tally = Tally()
    try:
        benchmark = build(cfg["bench"])
        services = {"budget": shared.budget, "store": shared.store} if shared else {}
        model = Recorded(build_model(cfg, **services, trial=task.trial, keep_in=folder / RESPONSES), log)
        result = play_built(cfg, task, benchmark, model, log, tally)
    except Exception as error:  # noqa: BLE001 - the episode boundary: record it, the other episodes go on
        log.write(events.Error(error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc()))
        result = error_result(task, error, model.usage if model else None, tally.ledger())
    if model is not None:
        result = with_ledger(replace(result, **vars(context_load(model.calls))), model)
    try:
        write_result(folder / "result.json", result, redactor)
    except Exception as error:  # noqa: BLE001 - a result that cannot be written must not lose the episode
        log.write(events.Error(error=f"result.json not written: {type(error).__name__}: {error}"))
    log.close()
    return result_from_json(redactor.value(result_row(result)))


def play_built(
    cfg: Mapping[str, Any],
    task: Task,
    benchmark: Benchmark,
    model: Recorded,
    log: Transcript,
    tally: Tally | None = None,
) -> EpisodeResult:
    """Build the env and a fresh method around `model`, and play `task` to its end."""
    env = make_env(benchmark, model, expert=bool(cfg.get("expert", False)))
    gate = env_gate(cfg["runner"].get("env_slots"), benchmark)
    try:
        with build(cfg["method"])(model=model) as method, playing_under(gate):
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
                tally=tally,
                env_gate=gate,
            )
    finally:
        env.close()
    return replace(result, usage=dict(model.usage), served=tuple(model.served))


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
