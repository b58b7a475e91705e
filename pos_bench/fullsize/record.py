"""What a sweep's run folders recorded, read episode by episode (one `events.jsonl` at a time): the calls the
endpoint served, the actions, the span, the files; and the environments' CPU, by playing recorded actions again."""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_bench import events
from pos_bench.runner.summary import BENCHMARK_ROLE_PREFIX
from pos_bench.standin.service import CallCost
from pos_bench.types import Task, ToolCall


@dataclass(frozen=True)
class Episode:
    task: Task
    calls: tuple[CallCost, ...]
    """The calls the endpoint served, in order (response-cache hits left out: they never reach it)."""
    cache_hits: int
    actions: tuple[Any, ...]
    started: float
    ended: float
    in_call_cpu: tuple[float, ...]
    """`Call.cpu_seconds` of every call: the worker's CPU while the call was under way."""
    files: Mapping[str, int]
    """Bytes of each file in the episode folder."""
    env_cpu: float | None = None
    """The worker's CPU in the environment's reset and steps where the run played (`Reset.cpu_seconds`,
    `Step.cpu_seconds`), less the benchmark roles' calls made inside the steps (ClinDiag's provider); None for
    a transcript that has no such figures."""
    local_cpu: float = 0.0
    """The worker's CPU in the method's own model where the run played (PACE's encoder: its memory records'
    `embedding.cpu_seconds`)."""


@dataclass(frozen=True)
class Run:
    folder: Path
    label: str
    config: Mapping[str, Any]
    rows: tuple[Mapping[str, Any], ...]
    episodes: tuple[Episode, ...]

    @property
    def calls(self) -> int:
        """Model calls the episodes made, response-cache hits included."""
        return sum(len(e.calls) + e.cache_hits for e in self.episodes)


def read_episode(folder: Path) -> Episode:
    """One episode's calls, actions and times, read line by line from its `events.jsonl`."""
    task, calls, actions, times, cpu, hits = None, [], [], [], [], 0
    env_cpu, in_roles = None, 0.0  # in_roles: benchmark roles' call CPU since the last step
    local_cpu = 0.0
    for event in events.read(folder / "events.jsonl"):
        if event.time is not None:
            times.append(event.time)
        if isinstance(event, (events.Reset, events.Step)) and event.cpu_seconds is not None:
            env_cpu = (
                (env_cpu or 0.0) + event.cpu_seconds - (in_roles if isinstance(event, events.Step) else 0.0)
            )
            in_roles = 0.0
        if isinstance(event, events.Reset):
            task = Task(**{k: v for k, v in event.task.items() if k in ("id", "source", "meta", "trial")})
        elif isinstance(event, events.Call):
            if event.role.startswith(BENCHMARK_ROLE_PREFIX):
                in_roles += event.cpu_seconds or 0.0
            usage = event.usage
            if event.cached:
                hits += 1
            else:
                calls.append(CallCost(usage.input_tokens, usage.cached_input_tokens, usage.output_tokens))
            cpu.append(event.cpu_seconds or 0.0)
        elif isinstance(event, events.Memory):
            embedding = event.record.get("embedding") if isinstance(event.record, Mapping) else None
            if isinstance(embedding, Mapping):
                local_cpu += embedding.get("cpu_seconds") or 0.0
        elif isinstance(event, events.Step):
            action = event.action
            actions.append(
                ToolCall(action["name"], action.get("arguments", {})) if isinstance(action, dict) else action
            )
    if task is None:
        raise ValueError(f"{folder / 'events.jsonl'} has no reset event")
    files = {p.name: p.stat().st_size for p in folder.iterdir() if p.is_file()}
    return Episode(
        task,
        tuple(calls),
        hits,
        tuple(actions),
        min(times),
        max(times),
        tuple(cpu),
        files,
        env_cpu,
        local_cpu,
    )


def read_runs(root: Path) -> list[Run]:
    runs = []
    for run_json in sorted(root.glob("*/*/*/*/run.json")):
        folder = run_json.parent
        rows = [
            json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines() if line.strip()
        ]
        episodes = [
            read_episode(e) for e in sorted((folder / "episodes").iterdir()) if (e / "events.jsonl").exists()
        ]
        label = "/".join(folder.relative_to(root).parts[:2])
        config = json.loads(run_json.read_text())["config"]
        runs.append(Run(folder, label, config, tuple(rows), tuple(episodes)))
    return runs


@dataclass(frozen=True)
class EnvCost:
    seconds: float
    """The run's environments' CPU seconds: the sampled episodes' per reset and per step, scaled to the run."""
    sampled: int


def env_cpu(run: Run, sample: int) -> EnvCost:
    """Play the recorded actions of up to `sample` episodes again on fresh environments, reading the truth
    after the reset and each step as the loop does, in this process, with
    the heap settled before each as a worker settles it (`settle_heap`), so the environments' CPU is counted
    under the garbage collection a run's episodes meet."""
    from pos_bench.build import build
    from pos_bench.loop import read_truth
    from pos_bench.models.scripted import ScriptedModel, schema_reply
    from pos_bench.runner.episode import settle_heap

    benchmark = build(run.config["bench"])
    model = ScriptedModel(default=schema_reply)  # an environment that asks a model (ClinDiag's provider)
    chosen = run.episodes[:: max(len(run.episodes) // max(sample, 1), 1)][:sample]
    resets, steps, stepped = 0.0, 0.0, 0
    try:
        for episode in chosen:
            settle_heap()
            started = time.process_time()
            env = benchmark.make_env(model)
            env.reset(episode.task)
            read_truth(env)
            middle = time.process_time()
            for action in episode.actions:
                env.step(action)
                read_truth(env)
            env.score()
            env.close()
            resets += middle - started
            steps += time.process_time() - middle
            stepped += len(episode.actions)
    finally:
        gc.unfreeze()  # this process goes on to build the tables
    if not chosen:
        return EnvCost(0.0, 0)
    all_steps = sum(len(e.actions) for e in run.episodes)
    per_step = steps / stepped if stepped else 0.0
    return EnvCost(resets / len(chosen) * len(run.episodes) + per_step * all_steps, len(chosen))


def slots(config: Mapping[str, Any]) -> int:
    jobs = int(config["runner"].get("n_jobs") or 1)
    cap = config["model"].get("max_concurrency")
    return max(1, min(jobs, int(cap)) if cap else jobs)


def per_episode(rows: Sequence[Mapping[str, Any]]) -> tuple[float, float, float]:
    """Mean calls, input tokens and output tokens per finished episode, over every role."""
    done = [row for row in rows if row.get("status") == "done"]
    if not done:
        return 0.0, 0.0, 0.0
    sums = [
        [sum(u.get(key, 0) for u in (row.get("usage") or {}).values()) for row in done]
        for key in ("calls", "input_tokens", "output_tokens")
    ]
    return tuple(statistics.fmean(values) for values in sums)  # type: ignore[return-value]
