"""`python -m pos_bench.fullsize <overrides> [--jobs 16] …` (or `scripts/bench_fullsize.py`): play a sweep
against the stand-in endpoint and print what it cost the harness (issue 44; docs/fullsize.md).

    python -m pos_bench.fullsize +experiment=table1_alfworld --jobs 16
    python -m pos_bench.fullsize +experiment=table1_clindiag method=raw,pos --jobs 16
    python -m pos_bench.fullsize bench=toy method=raw,pos bench.limit=2 --jobs 2      # a small look

The stand-in (`scripts/standin_server.py`; its options through `--standin "…"`) starts on a free loopback port,
and `model=vllm` and every per-role model of the experiment are pointed at it. Before the sweep, the estimate
(`python -m pos_bench.estimate`) is taken on an empty results root, so from each method's structure; then the
sweep runs as a user runs it (`python -m pos_bench -m …` in a child process) while its processes are sampled.
Every printed figure is computed from this sweep's run folders, samples and stand-in counts:
- wall time against the limit: the larger of the stand-in's service bound (its model over the calls each
  episode made, `standin.service.service_bound`) and the environments' CPU time (their recorded actions played
  again here, `--env-sample` episodes per run) divided by the cores;
- client CPU per call: the driver and workers' CPU over each run's span, less the environments', per call; and
  the CPU inside the calls (`Call.cpu_seconds`);
- RSS of the driver and the workers over time, open files, child processes (and any left running);
- transcript bytes per episode; the time to build the tables and the report over the sweep;
- the estimate's calls and tokens per episode against the measured ones, per run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pos_bench.fullsize.printout import printout, run_figures
from pos_bench.fullsize.record import read_runs
from pos_bench.fullsize.sweep import build_times, play, pointed_at, predicted_or_why, standin, standin_stats
from pos_bench.runner.overrides import settable
from pos_bench.standin.command import parse as standin_settings


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "overrides", nargs="*", help="Hydra overrides of the sweep (+experiment=…, bench.limit=…)"
    )
    parser.add_argument("--jobs", type=int, default=16, help="episodes in flight (runner.n_jobs)")
    parser.add_argument("--backend", default="loky", help="runner.backend")
    parser.add_argument("--standin", default="", help='the stand-in\'s options, e.g. "--tokens-per-s 15"')
    parser.add_argument("--results", type=Path, help="results root (default: a fresh temporary one, removed)")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="cores the limit divides by")
    parser.add_argument("--env-sample", type=int, default=20, help="episodes per run whose env is replayed")
    parser.add_argument(
        "--probe-tasks", type=int, default=5, help="the estimate's --probe-tasks (LOCA: 15, one per family)"
    )
    parser.add_argument("--sample-s", type=float, default=1.0, help="seconds between process samples")
    parser.add_argument("--no-build", action="store_true", help="skip timing the tables and the report")
    parser.add_argument(
        "--no-browser", action="store_true", help="skip opening the report in headless Chromium"
    )
    return parser


def compiled_from_source() -> str | None:
    """A warning when every worker will compile its imports from source: this Python writes no bytecode
    (`PYTHONDONTWRITEBYTECODE`) and the installed packages have none (uv installs none by default). Each of
    the sweep's worker processes then spends seconds compiling, which the client CPU per call counts."""
    import importlib.util

    import openai

    if not sys.flags.dont_write_bytecode or Path(importlib.util.cache_from_source(openai.__file__)).exists():
        return None
    site = Path(openai.__file__).parents[1]
    return (
        "full-size check: this Python writes no bytecode (PYTHONDONTWRITEBYTECODE is set) and the installed "
        "packages have none, so every worker process compiles its imports from source and the client CPU per "
        f"call counts it; compile them once first: python -m compileall -q {site} (or UV_COMPILE_BYTECODE=1 "
        "uv sync)"
    )


def stop_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM unwinds as Ctrl-C does, so the stand-in and the sweep are stopped rather than left running."""
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    warning = compiled_from_source()
    if warning:
        print(warning, file=sys.stderr)
    args.overrides = settable(args.overrides)  # `model.timeout=2` as `python -m pos_bench` takes it
    _, settings = standin_settings(shlex.split(args.standin))
    with contextlib.ExitStack() as stack:
        root = args.results or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="pos_bench-fullsize-"))
        )
        runner = [
            f"runner.n_jobs={args.jobs}",
            f"runner.backend={args.backend}",
            "runner.progress=false",
            f"results_root={root}",
        ]
        url = stack.enter_context(standin(shlex.split(args.standin)))
        overrides = [*args.overrides, *runner, *pointed_at(url, args.overrides)]
        prediction, estimate_failed = predicted_or_why(overrides, args.probe_tasks)
        played = play(overrides, args.sample_s)
        stats = standin_stats(url)
        if played.code:
            print(played.output[-3000:], file=sys.stderr)
        runs = read_runs(root)
        figures = [
            run_figures(run, settings.service, played.samples, cores=args.cores, env_sample=args.env_sample)
            for run in runs
        ]
        built = None if args.no_build else build_times(root, browser=not args.no_browser)
        print(printout(settings.service, played, stats, runs, figures, prediction, built, estimate_failed))
    return played.code


if __name__ == "__main__":
    sys.exit(main())
