"""What ALFWorld's ground truth costs per step (issue 28: at most 10% of a step): the expert's commands are
replayed on an environment with `truth=False` and on one with `truth=True` (the engine then computes its
facts every step), and the second also reads `truth()` after every step. CPU seconds of this process
(`time.process_time`), so other load on the machine does not count.

    .venv/bin/python scripts/bench_truth.py [--games 5] [--start 0] [--text-version 2.1.2]
"""

from __future__ import annotations

import argparse
import time

from pos_bench.benchmarks.alfworld.benchmark import AlfWorldBenchmark, AlfWorldEnv


def expert_commands(bench: AlfWorldBenchmark, task) -> list[str]:
    """The planner's commands for `task`, taken once so both replays run the same steps."""
    env = bench.make_expert_env(None)
    try:
        obs, commands = env.reset(task), []
        while not obs.done and obs.info["plan"]:
            commands.append(obs.info["plan"][0])
            obs = env.step(commands[-1])
        return commands
    finally:
        env.close()


def replay(env: AlfWorldEnv, task, commands: list[str], *, read_truth: bool) -> tuple[float, float]:
    """CPU seconds spent in `step` and in `truth()` over the replay."""
    env.reset(task)
    stepping = reading = 0.0
    for command in commands:
        started = time.process_time()
        env.step(command)
        stepping += time.process_time() - started
        if read_truth:
            started = time.process_time()
            truth = env.truth()
            reading += time.process_time() - started
            assert truth is not None and truth.facts
    return stepping, reading


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--text-version", default="2.1.2")
    args = parser.parse_args()
    bench = AlfWorldBenchmark(start=args.start, limit=args.games, text_version=args.text_version)
    plain = AlfWorldEnv(args.text_version, truth=False)
    truthful = AlfWorldEnv(args.text_version, truth=True)
    steps, base, with_facts, reading = 0, 0.0, 0.0, 0.0
    try:
        for task in bench.tasks():
            commands = expert_commands(bench, task)
            steps += len(commands)
            base += replay(plain, task, commands, read_truth=False)[0]
            stepped, read = replay(truthful, task, commands, read_truth=True)
            with_facts, reading = with_facts + stepped, reading + read
    finally:
        plain.close()
        truthful.close()
    per = 1000 / max(steps, 1)
    extra = (with_facts - base) + reading
    print(f"games {args.games}, expert steps {steps}, text {args.text_version} (CPU ms per step)")
    print(f"  step, truth off:            {base * per:8.2f}")
    print(f"  step, truth on (facts):     {with_facts * per:8.2f}")
    print(f"  truth() reading the facts:  {reading * per:8.2f}")
    print(f"  truth cost / step:          {100 * extra / base:7.1f}%  (facts' extra step time + truth())")


if __name__ == "__main__":
    main()
