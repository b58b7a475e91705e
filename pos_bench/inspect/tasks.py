"""pos_bench's benchmarks as inspect tasks: `inspect eval pos_bench/alfworld --model <provider/model> -T method=pos`.

One sample per benchmark task (id = the task id, epochs = trials). The solver plays pos_bench's own loop with the
chosen method in a worker thread (inspect's event loop is never blocked; `max_samples` bounds the episodes in
flight, `max_connections` the model calls, which go back to inspect's loop through `inspect_bridge`). When the
episode ends, its transcript joins the sample's with the export's mapping (`pos_bench.export.inspect_log`): a
span per turn with every model call (its role and exact prompt), each step and each memory record. The scorers
are the benchmark's: `success` (accuracy) and `score` (mean). Per-role usage is inspect's own `role_usage`.
"""

from __future__ import annotations

import uuid
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Score, Target, accuracy, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from pos_bench.inspect.config import compose_config
from pos_bench.inspect.episodes import EvalRun
from pos_bench.types import Task as BenchTask
from pos_bench.types import to_jsonable

RESULT = "pos_bench_result"
"""The sample store key of the episode's result (what the scorers read)."""

BENCHES = ("toy", "alfworld", "clindiag", "rca100", "rca_synthetic", "loca", "loca_mini")


def threads() -> Any:
    """The worker-thread limiter of the episodes: wide enough that inspect's `max_samples` is the bound."""
    import anyio

    return anyio.CapacityLimiter(1024)


def sample_of(task: BenchTask) -> Sample:
    return Sample(
        id=task.id,
        input=f"Play the pos_bench task {task.id}.",
        metadata={"source": task.source, **{str(k): v for k, v in dict(task.meta).items()}},
    )


def restamped(event: Any, prefix: str, parent: str | None) -> Any:
    """An exported event made unique in the live log: its uuid, span id and span reference prefixed, and the
    turn spans placed under the solver's span."""
    update: dict[str, Any] = {}
    for name in ("uuid", "id", "span_id"):
        value = getattr(event, name, None)
        if isinstance(value, str):
            update[name] = f"{prefix}-{value}"
    if getattr(event, "event", None) == "span_begin":
        update["parent_id"] = parent
    return event.model_copy(update=update)


def add_to_transcript(episode: list[Any], model: str) -> None:
    """The episode's pos_bench events in the sample's inspect transcript, mapped as the export maps them."""
    from inspect_ai.log import transcript
    from inspect_ai.util._span import current_span_id

    from pos_bench.export.inspect_log import transcript as exported

    prefix, parent = uuid.uuid4().hex[:8], current_span_id()
    live = transcript()
    for event in exported(episode, model) if episode else []:
        live._event(restamped(event, prefix, parent))


@solver
def play_episode(run: EvalRun) -> Solver:
    """Play the sample's benchmark task with pos_bench's loop, the method and settings of the task's config."""

    limiter = threads()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        import anyio
        from inspect_ai.model import ModelOutput, get_model

        from pos_bench.export.inspect_log import conversation, read_events
        from pos_bench.models.inspect_bridge import calls_to_this_loop

        model = str(get_model())
        bench_task = run.task(str(state.sample_id), state.epoch)
        with calls_to_this_loop():
            result, folder = await anyio.to_thread.run_sync(run.play, model, bench_task, limiter=limiter)
        episode = read_events(folder, bench_task.id, bench_task.trial)
        add_to_transcript(episode, model)
        messages = conversation(episode)
        if messages:
            state.messages = messages
            state.output = ModelOutput.from_content(model, messages[-1].text)
        state.store.set(RESULT, to_jsonable(result))
        state.metadata["run_folder"] = str(folder)
        return state

    return solve


def _result(state: TaskState) -> dict[str, Any]:
    return state.store.get(RESULT) or {}


@scorer(metrics=[accuracy()])
def success() -> Any:
    """The benchmark's verdict; an errored episode is a failure, its error the explanation."""

    async def score(state: TaskState, target: Target) -> Score:
        result = _result(state)
        explanation = result.get("error") or result.get("final_observation") or None
        return Score(value=bool(result.get("success")), explanation=explanation, metadata=_meta(result))

    return score


@scorer(metrics=[mean()])
def score() -> Any:
    """The benchmark's score value."""

    async def value(state: TaskState, target: Target) -> Score:
        return Score(value=float(_result(state).get("score") or 0.0))

    return value


def _meta(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("status", "turns", "steps", "meta_actions", "spent_turns", "ledger", "usage", "trial")
    return {key: result.get(key) for key in keys if key in result}


def bench_task(bench: str, args: dict[str, Any]) -> Task:
    """The inspect task of `bench` with pos_bench settings `args` (see `pos_bench.inspect.config`)."""
    cfg, overrides = compose_config(bench, args)
    method = str(args.get("method", "raw"))
    run = EvalRun(cfg, overrides, bench=bench, method=method)
    return Task(
        dataset=MemoryDataset([sample_of(t) for t in run.tasks], name=bench),
        solver=play_episode(run),
        scorer=[success(), score()],
        metadata={"pos_bench": {"bench": bench, "method": method, "overrides": overrides}},
    )


@task
def toy(**args: Any) -> Task:
    """The toy household (pure Python, ALFWorld's grammar): a quick check of a method."""
    return bench_task("toy", args)


@task
def alfworld(**args: Any) -> Task:
    """ALFWorld's unseen games (needs the `alfworld` extra and the staged data)."""
    return bench_task("alfworld", args)


@task
def clindiag(**args: Any) -> Task:
    """ClinDiag's diagnosis cases."""
    return bench_task("clindiag", args)


@task
def rca100(**args: Any) -> Task:
    """RCA-100's root-cause cases (needs the `rca` extra and the staged data)."""
    return bench_task("rca100", args)


@task
def rca_synthetic(**args: Any) -> Task:
    """The synthetic root-cause cases."""
    return bench_task("rca_synthetic", args)


@task
def loca(**args: Any) -> Task:
    """LOCA-bench on its upstream checkout (needs the `loca` extra)."""
    return bench_task("loca", args)


@task
def loca_mini(**args: Any) -> Task:
    """The mini LOCA tool-use tasks (core only)."""
    return bench_task("loca_mini", args)
