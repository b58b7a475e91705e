"""Overhead figures: the agent loop's own cost per step (scripted model, toy household, no engine) and the
real ALFWorld engine's reset and step cost on a few games.

    .venv/bin/python scripts/bench_loop.py [--episodes 200] [--games 3]
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
    env, steps, started = bench.make_env(None), 0, time.perf_counter()
    for task in bench.tasks():
        model = ScriptedModel()
        with make_method(model) as method:
            result = play(task, env, method, model, brief=bench.brief, max_turns=bench.max_turns,
                          log=Transcript(path=None, keep=False))
        steps += result.steps
    return (time.perf_counter() - started) * 1000 / max(steps, 1)


def engine_cost(games: int) -> tuple[list[float], list[float], list[float]]:
    """(reset ms, step ms with the planner, step ms without it) on the first `games` ALFWorld games.

    The expert's commands are replayed on an env without the planner, so both step figures cover the
    same commands."""
    from pos_bench.benchmarks.alfworld import AlfWorldBenchmark, AlfWorldEnv

    bench = AlfWorldBenchmark(limit=games)
    planned, plain = AlfWorldEnv(bench.text_version, expert_plan=True), AlfWorldEnv(bench.text_version)
    resets, with_plan, without_plan = [], [], []
    try:
        for task in bench.tasks():
            started = time.perf_counter()
            obs = planned.reset(task)
            resets.append((time.perf_counter() - started) * 1000)
            commands = []
            while not obs.done:
                commands.append(obs.info["expert_plan"][0])
                started = time.perf_counter()
                obs = planned.step(commands[-1])
                with_plan.append((time.perf_counter() - started) * 1000)
            plain.reset(task)
            for command in commands:
                started = time.perf_counter()
                plain.step(command)
                without_plan.append((time.perf_counter() - started) * 1000)
    finally:
        planned.close()
        plain.close()
    return resets, with_plan, without_plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200, help="toy episodes for the loop figure")
    parser.add_argument("--games", type=int, default=3, help="real ALFWorld games for the engine figure")
    args = parser.parse_args()
    rows = [
        ("loop + toy env, expert (no model)", loop_cost(lambda m: Expert(model=m), args.episodes)),
        ("loop + toy env, raw + scripted model", loop_cost(lambda m: RawHistory(model=m), args.episodes)),
    ]
    if args.games:
        resets, with_plan, without_plan = engine_cost(args.games)
        rows += [
            (f"ALFWorld reset (load game + plan), n={len(resets)}", statistics.median(resets)),
            (f"ALFWorld step with planner, n={len(with_plan)}", statistics.median(with_plan)),
            (f"ALFWorld step without planner, n={len(without_plan)}", statistics.median(without_plan)),
        ]
    print(f"{'what':48} {'ms':>10}  (loop rows: mean per step; engine rows: median)")
    for name, ms in rows:
        print(f"{name:48} {ms:10.3f}")


if __name__ == "__main__":
    main()
