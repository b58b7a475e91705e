"""CPU seconds of the answers that should be fast: `python -m pos_bench --cfg job bench=toy` and a misspelt key
(stopped by the pre-flight check with exit 2). Prints the median of several runs of each, as the child process's
user + system time (not wall time, so a busy machine inflates it less).

    uv run --frozen --all-extras python scripts/bench_startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMANDS = {
    "--cfg job bench=toy": ["--cfg", "job", "bench=toy"],
    "misspelt key (bench.n_taks=3)": ["bench=toy", "model=scripted", "method=raw", "bench.n_taks=3"],
}


def cpu_seconds(args: list[str]) -> tuple[float, int]:
    """User + system CPU seconds of one `python -m pos_bench ARGS` and its exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "pos_bench", *args], cwd=REPO, capture_output=True, text=True, check=False
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for name, command in COMMANDS.items():
        samples, codes = [], set()
        for _ in range(args.runs):
            seconds, code = cpu_seconds(command)
            samples.append(seconds)
            codes.add(code)
        print(
            f"{name}: median {statistics.median(samples):.2f} CPU-s over {args.runs} runs "
            f"(min {min(samples):.2f}, max {max(samples):.2f}; exit {sorted(codes)})"
        )


if __name__ == "__main__":
    main()
