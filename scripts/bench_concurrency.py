"""How well a run against a remote endpoint overlaps its episodes.

Plays N toy episodes (method raw) against a loopback OpenAI-compatible stub that answers after a fixed delay,
through the real `openai` SDK and the runner, and compares the wall time with the critical path (the longest
episode's calls × delay). Then replays the recorded run from the response cache with the server stopped.

The stub runs in its own process, as a real endpoint would: in-process, its request handling would compete
with the episodes for the interpreter lock and be counted as client overhead.

    .venv/bin/python scripts/bench_concurrency.py --episodes 64 --turns 5 --delay 0.2 --jobs 64
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pos_bench.runner import run
from tests.models.stub_openai_server import StubOpenAI


def config(args: argparse.Namespace, model: dict, jobs: int, cache: dict) -> dict:
    return {
        "bench": {
            "_target_": "pos_bench.benchmarks.toy.ToyBenchmark",
            "n_tasks": args.episodes,
            "max_turns": args.turns,
        },
        "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
        "model": model,
        "roles": {},
        "runner": {"n_jobs": jobs, "backend": "threading", "progress": False},
        "cache": cache,
        "retry": {},
    }


def serve(delay: float, channel) -> None:
    """Child process: run the stub until told to stop, then report its highest number of requests in flight."""
    with StubOpenAI(delay=delay) as stub:
        channel.send(stub.url)
        channel.recv()
        channel.send(stub.max_in_flight)


@contextlib.contextmanager
def stub_process(delay: float) -> Iterator[tuple[str, dict]]:
    """The stub's URL and, after the block, `{"max_in_flight": n}`."""
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.get_context("spawn").Process(target=serve, args=(delay, theirs), daemon=True)
    child.start()
    report: dict = {}
    try:
        yield ours.recv(), report
    finally:
        ours.send("stop")
        report["max_in_flight"] = ours.recv()
        child.join(timeout=10)


def timed(cfg: dict, run_dir: Path) -> tuple[float, list[dict]]:
    started = time.perf_counter()
    run(cfg, run_dir, {"bench": "toy", "method": "raw", "model": "stub", "label": "bench"})
    wall = time.perf_counter() - started
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert all(r["status"] == "done" for r in rows), [r["error"] for r in rows if r["status"] != "done"]
    return wall, rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--turns", type=int, default=5, help="toy max_turns; every episode uses them all")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the stub waits before answering")
    parser.add_argument("--jobs", type=int, default=64, help="runner.n_jobs (threads) for the parallel run")
    parser.add_argument("--max-concurrency", type=int, default=64, help="model.max_concurrency")
    parser.add_argument(
        "--skip-serial", action="store_true", help="skip the 1-worker run (episodes × its time)"
    )
    args = parser.parse_args()
    os.environ.setdefault("BENCH_STUB_KEY", "sk-bench-not-a-real-key")
    importlib.import_module("openai")  # a one-time cost of seconds, kept out of the timed runs
    root = Path(tempfile.mkdtemp(prefix="bench_concurrency_"))
    cache = {"mode": "read_write", "path": str(root / "cache.sqlite")}
    figures: dict[str, float] = {}
    with stub_process(args.delay) as (url, stub):
        model = {
            "_target_": "pos_bench.models.openai.OpenAIModel",
            "model": "stub-model",
            "base_url": f"{url}/v1",
            "api_key_env": "BENCH_STUB_KEY",
            "max_concurrency": args.max_concurrency,
        }
        wall, rows = timed(config(args, model, args.jobs, cache), root / "parallel")
        longest = max(r["usage"]["agent"]["calls"] for r in rows)
        critical = longest * args.delay
        figures.update(
            episodes=len(rows),
            calls=sum(r["usage"]["agent"]["calls"] for r in rows),
            longest_episode_calls=longest,
            critical_path_s=round(critical, 3),
            parallel_jobs=args.jobs,
            parallel_wall_s=round(wall, 3),
            parallel_over_critical=round(wall / critical, 3),
        )
        if not args.skip_serial:
            serial, _ = timed(config(args, model, 1, {"mode": "off"}), root / "serial")
            figures.update(serial_wall_s=round(serial, 3), serial_over_critical=round(serial / critical, 3))
    figures["server_max_in_flight"] = stub["max_in_flight"]
    replay = {"_target_": "pos_bench.models.cache.Replayed", "run": str(root / "parallel")}
    replay_wall, _ = timed(config(args, replay, 1, cache), root / "replay")
    figures.update(
        replay_wall_s=round(replay_wall, 3),
        replay_over_parallel=round(replay_wall / wall, 4),
        replay_per_episode_ms=round(1000 * replay_wall / len(rows), 2),
    )
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
