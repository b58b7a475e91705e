"""What the embedded model (SmolLM2-135M in llama.cpp) costs: prompt and generation tokens per second per
thread count, calls per minute with one and two workers, and seconds per call (per role) and per step for
raw and PoS on the first turns of an ALFWorld game, with and without prefix reuse and per-role reply caps.

    .venv/bin/python scripts/bench_embedded.py [--turns 3] [--game 0] [--games 1] [--threads 1 2]
        [--parts rates workers steps]

Every figure has its CPU-second twin beside the wall one (process CPU time, and llama.cpp's own timings):
on a machine shared with other jobs, wall time measures the neighbours too. `valid` is the share of a role's
replies that parse as a JSON object.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pos_bench.build import build
from pos_bench.loop import play
from pos_bench.models.local import LocalModel
from pos_bench.runner.context_fit import first_prompt
from pos_bench.runner.rescore import compose_config
from pos_bench.transcript import Transcript
from pos_bench.types import Action, Observation, Prompt, Reply


@dataclass
class Call:
    role: str
    step: int
    wall: float
    cpu: float
    prompt_tokens: int
    cached_tokens: int
    generated: int
    valid: bool
    game: int = 1
    """Which of the games played by one model (1 = the first, on a freshly started server)."""


@dataclass
class Timed:
    """The model and env of one measured episode: every call is timed and given the step it serves."""

    model: LocalModel
    env: Any
    verbose: bool = False
    env_steps: int = 0
    game: int = 1
    calls: list[Call] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.model.name

    def describe(self) -> Mapping[str, Any]:
        return self.model.describe()

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        wall, cpu = time.perf_counter(), time.process_time()
        reply = self.model.generate(prompt, role=role)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        # a policy call opens the next step; the method's update calls belong to the step just played
        step = self.env_steps + 1 if role == "agent" else max(self.env_steps, 1)
        timings = self.model.last_timings
        if self.verbose:
            print(
                f"  call {role} game {self.game} step {step}: {wall:.1f} s wall, {cpu:.1f} CPU-s, {timings}",
                flush=True,
            )
        self.calls.append(
            Call(
                role,
                step,
                wall,
                cpu,
                timings.prompt_tokens,
                timings.cached_tokens,
                timings.generated_tokens,
                _is_object(reply.text),
                self.game,
            )
        )
        return reply

    def reset(self, task: Any) -> Observation:
        return self.env.reset(task)

    def step(self, action: Action) -> Observation:
        self.env_steps += 1
        return self.env.step(action)

    def score(self) -> Any:
        return self.env.score()

    def close(self) -> None:
        self.env.close()


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def sample_prompt() -> Prompt:
    """A realistic first policy prompt: ALFWorld's first game."""
    cfg = compose_config(["bench=alfworld", "bench.limit=1"])
    bench = build(cfg["bench"])
    env = bench.make_env(None)
    try:
        first = env.reset(bench.tasks()[0])
    finally:
        env.close()
    return first_prompt(bench.brief, first)


def rates(prompt: Prompt, threads: Sequence[int]) -> list[dict[str, Any]]:
    """Prompt and generation speed per thread count (free text, 128 tokens, no prefix reuse)."""
    free = Prompt(messages=prompt.messages, max_tokens=128)
    rows = []
    for n in threads:
        model = LocalModel(n_threads=n)
        model.generate(Prompt(messages=prompt.messages[:1], max_tokens=1))  # load outside the timer
        cpu = time.process_time()
        model.generate(free)
        cpu = time.process_time() - cpu
        t = model.last_timings
        total_ms = t.prompt_ms + t.generation_ms
        rows.append(
            {
                "threads": n,
                "prompt tok/s": t.prompt_tokens / (t.prompt_ms / 1000),
                "gen tok/s": t.generated_tokens / (t.generation_ms / 1000),
                # CPU time split between prompt and generation in the proportion llama.cpp's own timings give
                "prompt tok/CPU-s": t.prompt_tokens / (cpu * t.prompt_ms / total_ms),
                "gen tok/CPU-s": t.generated_tokens / (cpu * t.generation_ms / total_ms),
            }
        )
        model.close()
    return rows


def _worker_calls(job: tuple[Prompt, int, int]) -> float:
    prompt, threads, calls = job
    model = LocalModel(n_threads=threads)
    model.generate(Prompt(messages=prompt.messages[:1], max_tokens=1))
    started = time.perf_counter()
    for _ in range(calls):
        model.generate(prompt)
    return time.perf_counter() - started


def workers(prompt: Prompt, calls: int) -> list[dict[str, Any]]:
    """Calls per minute (wall) for 1 worker × 1 thread, 1 × 2 and 2 × 1, each worker in its own process."""
    short = Prompt(messages=prompt.messages, max_tokens=32)
    rows = []
    ctx = multiprocessing.get_context("spawn")
    for n_workers, threads in ((1, 1), (1, 2), (2, 1)):
        with ctx.Pool(n_workers) as pool:
            started = time.perf_counter()
            pool.map(_worker_calls, [(short, threads, calls)] * n_workers)
            wall = time.perf_counter() - started
        rows.append(
            {"workers × threads": f"{n_workers} × {threads}", "calls/min": 60 * n_workers * calls / wall}
        )
    return rows


def episode(
    method: str, turns: int, game: int, overrides: Sequence[str], verbose: bool, games: int = 1
) -> list[Call]:
    """Play `games` games from `game` on, one after another with one model (as a run's worker does: from the
    second game on, llama.cpp's prompt cache holds the roles' fixed prompts), `turns` turns each."""
    cfg = compose_config(
        [
            f"method={method}",
            "bench=alfworld",
            f"bench.start={game}",
            f"bench.limit={games}",
            f"bench.max_turns={turns}",
            *overrides,
        ]
    )
    bench = build(cfg["bench"])
    model = LocalModel(**{k: v for k, v in cfg["model"].items() if k != "_target_"})
    timed = Timed(model, bench.make_env(None), verbose)
    for number, task in enumerate(bench.tasks(), start=1):
        timed.game, timed.env_steps = number, 0
        try:
            with build(cfg["method"])(model=timed) as agent:
                play(
                    task,
                    timed,
                    agent,
                    timed,
                    brief=bench.brief,
                    max_turns=bench.max_turns,
                    log=Transcript(path=None, keep=False),
                )
        except Exception as error:  # noqa: BLE001 - the episode boundary: the calls made so far are still reported
            print(
                f"{method} {' '.join(overrides)}: game {number} ended by {type(error).__name__}: {error}"[
                    :300
                ],
                flush=True,
            )
    timed.close()
    model.close()
    return timed.calls


VARIANTS = {
    "raw": ("raw", ["model.cache_prompt=false"]),
    "raw +reuse": ("raw", ["model.cache_prompt=true"]),
    "pos": ("pos", ["model.cache_prompt=false", "model.reply_limits=null"]),
    "pos +caps": ("pos", ["model.cache_prompt=false"]),
    "pos +caps +reuse": ("pos", ["model.cache_prompt=true"]),
}
"""Name → (method, overrides of the embedded preset)."""


def summarize(name: str, calls: list[Call]) -> list[str]:
    lines = []
    by_step: dict[tuple[int, int], list[Call]] = {}
    for call in calls:
        by_step.setdefault((call.game, call.step), []).append(call)
    several = len({game for game, _ in by_step}) > 1
    for (game, step), group in sorted(by_step.items()):
        where = f"game {game} step {step}" if several else f"step {step}"
        lines.append(
            f"{name:18} {where:<16} {'':17} {len(group):5} {sum(c.wall for c in group):8.1f} "
            f"{sum(c.cpu for c in group):8.1f} {sum(c.prompt_tokens for c in group):7} "
            f"{sum(c.cached_tokens for c in group):7} {sum(c.generated for c in group):6}"
        )
    for role in dict.fromkeys(c.role for c in calls):
        group = [c for c in calls if c.role == role]
        lines.append(
            f"{name:18} role  {role:28} {len(group):5} {statistics.mean(c.wall for c in group):8.1f} "
            f"{statistics.mean(c.cpu for c in group):8.1f} {statistics.mean(c.prompt_tokens for c in group):7.0f} "
            f"{statistics.mean(c.cached_tokens for c in group):7.0f} {statistics.mean(c.generated for c in group):6.0f}"
            f"  valid {sum(c.valid for c in group)}/{len(group)} max gen {max(c.generated for c in group)}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--game", type=int, default=0)
    parser.add_argument(
        "--games", type=int, default=1, help="games played one after another by one model (steps per game)"
    )
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--calls", type=int, default=4, help="calls per worker for the workers figure")
    parser.add_argument("--parts", nargs="+", default=["rates", "workers", "steps"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--verbose", action="store_true", help="print every call as it ends")
    args = parser.parse_args()
    prompt = sample_prompt()
    if "rates" in args.parts:
        for row in rates(prompt, args.threads):
            print(
                "rates   "
                + "  ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items())
            )
    if "workers" in args.parts:
        rows = workers(prompt, args.calls)
        for row in rows:
            ratio = row["calls/min"] / rows[0]["calls/min"]
            print(
                f"workers {row['workers × threads']}: {row['calls/min']:.1f} calls/min ({ratio:.2f}× 1 × 1)"
            )
    if "steps" in args.parts:
        print(
            f"{'variant':18} {'what':34} {'calls':>5} {'wall s':>8} {'CPU s':>8} {'prompt':>7} {'reused':>7} "
            f"{'gen':>6}  (per step: totals; per role: means)"
        )
        for name in args.variants:
            method, overrides = VARIANTS[name]
            for line in summarize(
                name, episode(method, args.turns, args.game, overrides, args.verbose, args.games)
            ):
                print(line, flush=True)


if __name__ == "__main__":
    main()
