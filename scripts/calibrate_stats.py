"""Check the analysis' verdicts against agents of known skill: A/A (the same slip twice) and A/B (two slips) on
the toy household, with one trial and with three, R repetitions each (`pos_bench/analysis/calibration.py`).

python scripts/calibrate_stats.py [--tasks 100] [--plays 20] [--repetitions 200] [--slip-a 0.33] [--slip-b 0.38]
                                  [--max-turns 12] [--root DIR] [--seed 0]

It first plays the pools (the expert with `method.slip`, `--plays` seeded trials of every task, no model call;
a few minutes on two cores), measures each slip's true success rate on its pool, then prints one row per
scenario: the rate of `gain`/`loss` verdicts (A/A: should stay at or below α = 5%; A/B: detections, against the
power `stats.detection_power` predicts), and the coverage of the 95% paired intervals (should be near 95%).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from pos_bench.analysis.calibration import pool_rate, scenario, table
from pos_bench.analysis.runs import load_run
from pos_bench.runner import run

REPO = Path(__file__).resolve().parents[1]


def play_pool(root: Path, slip: float, args: argparse.Namespace) -> Path:
    """The expert with `slip` on `args.tasks` toy tasks, `args.plays` trials each; resumes if already played."""
    folder = root / f"slip-{slip}"
    cfg = {
        "bench": {
            "_target_": "pos_bench.benchmarks.toy.ToyBenchmark",
            "n_tasks": args.tasks,
            "max_turns": args.max_turns,
        },
        "method": {"_target_": "baselines.expert.Expert", "_partial_": True, "slip": slip, "seed": args.seed},
        "model": {"_target_": "pos_bench.models.scripted.ScriptedModel"},
        "expert": True,
        "runner": {"backend": "loky", "n_jobs": args.jobs, "progress": False, "trials": args.plays},
        "roles": {},
        "cache": {"mode": "off"},
    }
    run(cfg, folder, {"bench": "toy", "method": f"expert-slip-{slip}", "model": "none", "label": "full"})
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--plays", type=int, default=20, help="seeded trials per task in each pool (≥ 6)")
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--slip-a", type=float, default=0.33)
    parser.add_argument("--slip-b", type=float, default=0.38)
    parser.add_argument("--max-turns", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", type=Path, default=REPO / "results" / "calibration")
    args = parser.parse_args()
    started = time.perf_counter()
    pool_a = load_run(play_pool(args.root, args.slip_a, args), with_events=False)
    pool_b = load_run(play_pool(args.root, args.slip_b, args), with_events=False)
    played = time.perf_counter() - started
    print(
        f"pools: slip {args.slip_a}: rate {pool_rate(pool_a):.3f}; slip {args.slip_b}: rate {pool_rate(pool_b):.3f} "
        f"({args.tasks} tasks × {args.plays} plays each, played in {played:.0f} s)"
    )
    r = args.repetitions
    scenarios = [
        scenario(f"A/A slip {args.slip_a}", pool_a, None, trials=1, repetitions=r, seed=args.seed + 1),
        scenario(
            f"A/B slip {args.slip_a} vs {args.slip_b}",
            pool_a,
            pool_b,
            trials=1,
            repetitions=r,
            seed=args.seed + 2,
        ),
        scenario(f"A/A slip {args.slip_a}", pool_a, None, trials=3, repetitions=r, seed=args.seed + 3),
        scenario(
            f"A/B slip {args.slip_a} vs {args.slip_b}",
            pool_a,
            pool_b,
            trials=3,
            repetitions=r,
            seed=args.seed + 4,
        ),
    ]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    )
    print(table(scenarios).to_string(index=False))
    print(
        f"\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {commit.stdout.strip() or '?'}, "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
