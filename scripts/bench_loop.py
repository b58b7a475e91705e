"""Overhead figures: the agent loop's own cost per step (scripted model, toy household, no engine) and the
real ALFWorld engine's reset and step cost on a few games.

    .venv/bin/python scripts/bench_loop.py [--episodes 200] [--games 3] [--start 0]
"""

from __future__ import annotations

import argparse
import statistics
import time

from baselines.expert import Expert
from baselines.raw import RawHistory
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Transcript


def loop_cost(make_method, episodes: int) -> float:
    """Milliseconds per executed step over `episodes` toy episodes."""
    bench = ToyBenchmark(n_tasks=episodes, max_turns=20)
    env, steps, started = bench.make_expert_env(None), 0, time.perf_counter()
    for task in bench.tasks():
        model = ScriptedModel()
        with make_method(model) as method:
            result = play(
                task,
                env,
                method,
                model,
                brief=bench.brief,
                max_turns=bench.max_turns,
                log=Transcript(path=None, keep=False),
            )
        steps += result.steps
    return (time.perf_counter() - started) * 1000 / max(steps, 1)


def engine_cost(games: int, start: int) -> dict[str, list[float]]:
    """Reset and step milliseconds, with and without the planner, on `games` ALFWorld games from `start`.

    The expert's commands are replayed on an env without the planner, so both step figures cover the
    same commands."""
    from pos_bench.benchmarks.alfworld.benchmark import AlfWorldBenchmark

    bench = AlfWorldBenchmark(start=start, limit=games)
    planned, plain = bench.make_expert_env(None), bench.make_env(None)
    cost: dict[str, list[float]] = {"reset, planner": [], "step, planner": [], "reset": [], "step": []}
    try:
        for task in bench.tasks():
            started = time.perf_counter()
            obs = planned.reset(task)
            cost["reset, planner"].append((time.perf_counter() - started) * 1000)
            commands = []
            while not obs.done:
                commands.append(obs.info["plan"][0])
                started = time.perf_counter()
                obs = planned.step(commands[-1])
                cost["step, planner"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            plain.reset(task)
            cost["reset"].append((time.perf_counter() - started) * 1000)
            for command in commands:
                started = time.perf_counter()
                plain.step(command)
                cost["step"].append((time.perf_counter() - started) * 1000)
    finally:
        planned.close()
        plain.close()
    return cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200, help="toy episodes for the loop figure")
    parser.add_argument("--games", type=int, default=3, help="real ALFWorld games for the engine figure")
    parser.add_argument(
        "--start", type=int, default=0, help="first game (sorted order; pick_two games are 117-133)"
    )
    args = parser.parse_args()
    loop_rows = [
        ("loop + toy env, expert (no model)", loop_cost(lambda m: Expert(model=m), args.episodes)),
        ("loop + toy env, raw + scripted model", loop_cost(lambda m: RawHistory(model=m), args.episodes)),
    ]
    print(f"{'what':48} {'mean ms':>10} {'median ms':>10} {'max ms':>10}")
    for name, ms in loop_rows:
        print(f"{name:48} {ms:10.3f} {'':>10} {'':>10}")
    if args.games:
        for name, values in engine_cost(args.games, args.start).items():
            label = f"ALFWorld {name}, n={len(values)}"
            print(
                f"{label:48} {statistics.mean(values):10.1f} {statistics.median(values):10.1f} {max(values):10.1f}"
            )


if __name__ == "__main__":
    main()
