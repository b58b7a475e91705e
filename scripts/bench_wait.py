"""What waiting on the model costs the harness (issue 44): its CPU per model call for ALFWorld episodes played in a
process forked after the run's preload (as a worker of the loky pool is), against a stand-in that answers at once
and against one at its default pace (~0.2 s a reply), and at that pace again with the cores kept busy by
lowest-priority loops, so that they never idle while the episodes wait.

The harness's CPU is the process's CPU over each episode less what its environment steps cost (their
`cpu_seconds`), per model call; "in calls" is the part inside the calls (`Call.cpu_seconds`). The first episode of
each process is left out (it builds the engine's caches). Measure alone: anything else on the cores changes what a
wait costs, which is the point of the measure.

    .venv/bin/python scripts/bench_wait.py [--method raw] [--games 4] [--rounds 2]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pos_bench import events
from pos_bench.fullsize.sweep import standin
from pos_bench.transcript import episode_dir

AT_ONCE = ["--tokens-per-s", "100000", "--batch-tokens-per-s", "1000000", "--prefill-tokens-per-s", "1e7"]
AT_ONCE += ["--first-token-s", "0"]


def config(method: str, url: str) -> dict:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    overrides = [f"method={method}", "bench=alfworld", "model=vllm", f"model.base_url={url}"]
    overrides += ["model.model=standin", "model.api_key_env=OPENAI_API_KEY", "cache.mode=off"]
    with initialize_config_dir(
        config_dir=str(Path(__file__).resolve().parents[1] / "conf"), version_base=None
    ):
        return OmegaConf.to_container(compose("config", overrides=overrides), resolve=True)


def play(cfg: dict, games: int, out: Connection) -> None:
    """In the forked process: the games, and per game after the first (harness ms per call, in-call ms per call)."""
    from pos_bench.build import build
    from pos_bench.runner.episode import run_episode

    run_dir = Path(tempfile.mkdtemp(prefix="pos_bench-wait-"))
    figures = []
    for index, task in enumerate(list(build(cfg["bench"]).tasks())[: games + 1]):
        cpu = time.process_time()
        run_episode(cfg, task, run_dir, own_process=True)
        cpu = time.process_time() - cpu
        rows = list(events.read(episode_dir(run_dir, task.id) / "events.jsonl"))
        env = sum(e.cpu_seconds or 0.0 for e in rows if isinstance(e, events.Step | events.Reset))
        calls = [e for e in rows if isinstance(e, events.Call)]
        if index and calls:
            inside = sum(e.cpu_seconds or 0.0 for e in calls)
            figures.append(((cpu - env) / len(calls) * 1e3, inside / len(calls) * 1e3))
    out.send(figures)


def worker_figures(cfg: dict, games: int) -> list[tuple[float, float]]:
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=play, args=(cfg, games, send))
    child.start()
    send.close()  # the child holds the only writing end: if it dies, the read below ends instead of waiting
    try:
        figures = receive.recv()
    except EOFError:
        child.join()
        raise SystemExit(
            f"the process playing the games ended (exit {child.exitcode}) before sending its figures"
        ) from None
    child.join()
    return figures


@contextlib.contextmanager
def busy_cores(count: int) -> Iterator[None]:
    loops = [
        subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "while True: pass"]) for _ in range(count)
    ]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--method", default="raw")
    parser.add_argument("--games", type=int, default=4, help="games per process after its first")
    parser.add_argument(
        "--rounds", type=int, default=2, help="processes per setting, the settings alternating"
    )
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-stand-in")
    from pos_bench.runner.pool.forkserver import preload, worker_modules

    with standin(AT_ONCE) as fast, standin([]) as paced:
        settings = {
            "replies at once": (config(args.method, fast), False),
            "replies at the stand-in's pace": (config(args.method, paced), False),
            "that pace, cores kept busy": (config(args.method, paced), True),
        }
        failed = preload(",".join(worker_modules(settings["replies at once"][0])))
        if failed:
            raise SystemExit(f"could not import {failed}")
        gc.collect()
        gc.freeze()
        found: dict[str, list[tuple[float, float]]] = {name: [] for name in settings}
        for _ in range(args.rounds):
            for name, (cfg, busy) in settings.items():
                with busy_cores(os.cpu_count() or 1) if busy else contextlib.nullcontext():
                    found[name] += worker_figures(cfg, args.games)
    print(
        f"{args.method}: the harness's CPU per model call, {args.rounds} processes × {args.games} games each"
    )
    for name, figures in found.items():
        harness, inside = zip(*figures, strict=True)
        print(
            f"  {name:32} {statistics.median(harness):5.2f} ms (in calls {statistics.median(inside):4.2f}); "
            f"per game {' '.join(f'{h:.2f}' for h in harness)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
