"""LOCA-Bench's cost: reset time and tool-call latency per family in both server modes, and the prompt tokens
reused per turn by a model's prefix cache.

For each family (one seed, one length) and each `bench.servers` mode, one episode on a LOCA-bench checkout:
reset (world from the cache when it is there, then the servers), `--calls` calls of `filesystem_list_directory`
on the agent workspace (every family has the filesystem server; listing a folder of a few files is close to
no work for the tool, so the latency is the harness's and the MCP plumbing's), then `claim_done`, whose grade
is printed for both modes side by side. Times are wall seconds of `env.step`, plus this process's CPU-seconds
(the servers' own CPU is not included); on a loaded machine the wall times include waiting for a core.

    LOCA_BENCH_ROOT=~/LOCA-bench .venv/bin/python scripts/bench_loca.py --calls 5 --out loca_latency.json

With `--reuse DIR …` it measures nothing itself: it reads the transcripts of finished runs under each folder
(for instance the embedded long-context mode, `model=smollm2_32k`, whose llama.cpp reports the prompt tokens it
reused) and prints, per episode and turn, the prompt tokens sent, reused and evaluated again, with the turn's
wall and CPU seconds (`pos_bench.analysis.reuse`; CPU is the run process's, so on a shared host the fairer one).
Calls answered by the run's response cache reached no server and are counted apart; to have the server count
every call, run with `cache.mode=off`:

    .venv/bin/python scripts/bench_loca.py --reuse results/loca/raw/smollm2_32k results/loca/pos/smollm2_32k
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from pos_bench.analysis.reuse import Tokens, TurnReuse, after_first, episode_reuse
from pos_bench.benchmarks.loca.real.benchmark import LocaBenchmark
from pos_bench.benchmarks.loca.real.configs import read_cases
from pos_bench.types import ToolCall

CLAIM = "claim_done_claim_done"


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def measure(root: str, family: str, mode: str, args: argparse.Namespace) -> dict:
    bench = LocaBenchmark(
        root=root,
        lengths=[args.length],
        families=[family],
        seeds=[args.seed],
        servers=mode,
        keep_workspaces="all",
        work_dir=args.work_dir,
        cache_dir=args.cache_dir,
    )
    env = bench.make_env(None)
    try:
        cpu, started = time.process_time(), time.perf_counter()
        first = env.reset(bench.tasks()[0])
        reset = time.perf_counter() - started
        listing = ToolCall("filesystem_list_directory", {"path": str(env.task_dir / "agent_workspace")})
        walls, cpus = [], []
        for _ in range(args.calls):
            cpu_call, started = time.process_time(), time.perf_counter()
            seen = env.step(listing)
            walls.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu_call)
            if seen.text.startswith(("[Tool execution", "Tool '")):
                raise RuntimeError(f"{family} ({mode}): the listing failed: {seen.text[:300]}")
        env.step(ToolCall(CLAIM, {}))
        score = env.score()
        return {
            "family": family,
            "mode": mode,
            "tools": first.info["tools"],
            "world_cached": first.info["world_cached"],
            "reset_s": round(reset, 2),
            "servers_s": first.info["servers_seconds"],
            "first_call_s": round(walls[0], 3),
            "median_s": round(statistics.median(walls), 3),
            "p90_s": round(p90(walls), 3),
            "median_after_first_s": round(statistics.median(walls[1:]), 3) if len(walls) > 1 else None,
            "cpu_per_call_s": round(statistics.median(cpus), 3),
            "process_cpu_s": round(time.process_time() - cpu, 2),
            "grade": score.value,
        }
    finally:
        env.close()


def _share(tokens: Tokens) -> str:
    share = tokens.evaluated_share
    return "-" if share is None else f"{100 * share:.1f}%"


def _cpu(tokens: Tokens) -> str:
    return "-" if tokens.cpu_seconds is None else f"{tokens.cpu_seconds:.1f}"


def reuse_lines(label: str, turns: list[TurnReuse]) -> list[str]:
    """One episode's table: per turn the prompt tokens sent, reused and evaluated, the time, and the
    evaluated/sent tokens of each role; then the turns after the first, summed."""
    lines = [
        f"prompt tokens reused per turn: {label}",
        "turn | calls | prompt | reused | evaluated | evaluated % | wall s | CPU s | per role: evaluated/prompt",
    ]
    for turn in turns:
        total = turn.total
        roles = ", ".join(f"{r} {t.evaluated}/{t.prompt}" for r, t in turn.roles.items())
        if turn.from_response_cache:
            roles += f"; {turn.from_response_cache} from the response cache"
        lines.append(
            f"{turn.turn} | {total.calls} | {total.prompt} | {total.reused} | {total.evaluated} | "
            f"{_share(total)} | {total.wall_seconds:.1f} | {_cpu(total)} | {roles}"
        )
    later = [t for t in turns if t.turn >= 2]
    if later:
        summed = after_first(turns)
        policy = sum((t.roles.get("agent", Tokens()) for t in later), Tokens())
        cpu = [t.total.cpu_seconds for t in later if t.total.cpu_seconds is not None]
        lines.append(
            f"turns after the first ({len(later)}): {summed.evaluated} of {summed.prompt} prompt tokens evaluated "
            f"({_share(summed)}; policy calls {_share(policy)}), per turn median "
            f"{statistics.median(t.total.wall_seconds for t in later):.1f} s wall, "
            + (f"{statistics.median(cpu):.1f} CPU-s" if cpu else "CPU not recorded")
        )
        hits = sum(t.from_response_cache for t in later)
        if hits:
            lines.append(
                f"{hits} calls of those turns were answered by the run's response cache and reached no server: left "
                "out of these counts (a run with cache.mode=off sends every call to the server)"
            )
    return lines


def print_reuse(folders: list[Path]) -> int:
    found = 0
    for folder in folders:
        for log in sorted(folder.rglob("events.jsonl")):
            found += 1
            print("\n".join(reuse_lines(str(log.parent), episode_reuse(log.parent))), end="\n\n", flush=True)
    if not found:
        print(f"no episode transcripts (events.jsonl) under {', '.join(map(str, folders))}", file=sys.stderr)
    return 0 if found else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.environ.get("LOCA_BENCH_ROOT"))
    parser.add_argument("--length", default="8k")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--families", nargs="*", default=None, help="default: all 15")
    parser.add_argument("--modes", default="episode,per_call")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--work-dir", default="~/.cache/pos_bench/loca/work")
    parser.add_argument("--cache-dir", default="~/.cache/pos_bench/loca/worlds")
    parser.add_argument("--out", type=Path, default=None, help="also write the rows as JSON")
    parser.add_argument(
        "--reuse", type=Path, nargs="+", default=None, help="print the prompt reuse per turn of these runs"
    )
    args = parser.parse_args()
    if args.reuse:
        return print_reuse(args.reuse)
    if not args.root:
        parser.error("give --root or set LOCA_BENCH_ROOT")
    cases = read_cases(Path(args.root).expanduser() / "task-configs", args.length)
    families = args.families or list(dict.fromkeys(c.family for c in cases))
    rows = []
    header = "family | mode | tools | reset s | servers s | 1st call s | median s | p90 s | median after 1st s | grade"
    print(header, flush=True)
    for family in families:
        for mode in args.modes.split(","):
            row = measure(args.root, family, mode, args)
            rows.append(row)
            print(
                " | ".join(
                    str(row[k])
                    for k in (
                        "family",
                        "mode",
                        "tools",
                        "reset_s",
                        "servers_s",
                        "first_call_s",
                        "median_s",
                        "p90_s",
                        "median_after_first_s",
                        "grade",
                    )
                ),
                flush=True,
            )
            if args.out:
                args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    for mode in args.modes.split(","):
        mine = [r for r in rows if r["mode"] == mode]
        print(
            f"{mode}: median over families of the per-family median call {statistics.median(r['median_s'] for r in mine):.3f} s, "
            f"of the first call {statistics.median(r['first_call_s'] for r in mine):.2f} s, "
            f"of the reset {statistics.median(r['reset_s'] for r in mine):.1f} s"
        )
    by_family = {}
    for row in rows:
        by_family.setdefault(row["family"], {})[row["mode"]] = row["grade"]
    differing = [f for f, grades in by_family.items() if len(set(grades.values())) > 1]
    print(f"grades identical across modes for {len(by_family) - len(differing)}/{len(by_family)} families")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
