"""How well a run against a remote endpoint overlaps its episodes, for each backend side by side.

Plays N toy episodes (method raw) against a loopback OpenAI-compatible stub that answers after a fixed delay,
through the real `openai` SDK and the runner, `--repeat` times per backend (the median run's ratio is
reported, with every run's), and compares each wall time with the critical path (the longest episode's
calls × delay):
- `threading`: `--jobs` episodes in threads of this process;
- `loky`: `--workers` processes, one episode each at a time;
- `ray`: `--jobs` episodes over `--workers` Ray worker processes (threads inside each). The local Ray
  instance is started before the clock starts, as a cluster would be; starting the workers is timed.
Then the per-call client CPU (one episode at a time, this process) and a replay of the threading run from
the response cache with the server stopped.

The stub runs in its own process, as a real endpoint would: in-process, its request handling would compete
with the episodes for the interpreter lock and be counted as client overhead.

    .venv/bin/python scripts/bench_concurrency.py --episodes 64 --turns 5 --delay 0.2 --backend threading,loky,ray --workers 4
"""

from __future__ import annotations

import argparse
import contextlib
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


def config(args: argparse.Namespace, model: dict, runner: dict, cache: dict) -> dict:
    return {
        "bench": {
            "_target_": "pos_bench.benchmarks.toy.ToyBenchmark",
            "n_tasks": args.episodes,
            "max_turns": args.turns,
        },
        "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
        "model": model,
        "roles": {},
        "runner": {"progress": False, **runner},
        "cache": cache,
        "retry": {},
    }


def serve(delay: float, channel) -> None:
    """Child process: run the stub until told to stop, then report its highest number of requests in flight."""
    with StubOpenAI(delay=delay) as stub:
        ready = time.process_time()
        channel.send(stub.url)
        channel.recv()
        channel.send({"max_in_flight": stub.max_in_flight, "cpu_s": time.process_time() - ready})


@contextlib.contextmanager
def stub_process(delay: float) -> Iterator[tuple[str, dict]]:
    """The stub's URL and, after the block, `{"max_in_flight": n, "cpu_s": its CPU seconds while serving}`."""
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.get_context("spawn").Process(target=serve, args=(delay, theirs), daemon=True)
    child.start()
    report: dict = {}
    try:
        yield ours.recv(), report
    finally:
        ours.send("stop")
        report.update(ours.recv())
        child.join(timeout=10)


def timed(cfg: dict, run_dir: Path) -> tuple[float, list[dict]]:
    started = time.perf_counter()
    run(cfg, run_dir, {"bench": "toy", "method": "raw", "model": "stub", "label": "bench"})
    wall = time.perf_counter() - started
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert all(r["status"] == "done" for r in rows), [r["error"] for r in rows if r["status"] != "done"]
    return wall, rows


def placement(backend: str, args: argparse.Namespace) -> dict:
    if backend == "threading":
        return {"backend": "threading", "n_jobs": args.jobs}
    if backend == "loky":
        return {"backend": "loky", "n_jobs": args.workers}
    return {"backend": "ray", "n_jobs": args.jobs, "workers": args.workers}


def stub_model(url: str, args: argparse.Namespace) -> dict:
    return {
        "_target_": "pos_bench.models.openai.OpenAIModel",
        "model": "stub-model",
        "base_url": f"{url}/v1",
        "api_key_env": "BENCH_STUB_KEY",
        "max_concurrency": args.max_concurrency,
    }


def parallel_figures(backend: str, args: argparse.Namespace, root: Path) -> dict:
    """`args.repeat` runs of `backend`, each with a fresh stub, run folder and cache file (a cache shared
    between repeats would answer the later ones without the server). The ratio given is the median run's;
    every run's is listed, the first (which pays this process's one-time costs) included."""
    runs = []
    for repeat in range(args.repeat):
        cache = {"mode": "read_write", "path": str(root / f"{backend}-{repeat}.sqlite")}
        with stub_process(args.delay) as (url, stub):
            cfg = config(args, stub_model(url, args), placement(backend, args), cache)
            wall, rows = timed(cfg, root / f"{backend}-{repeat}")
        critical = max(r["usage"]["agent"]["calls"] for r in rows) * args.delay
        runs.append({"wall": wall, "critical": critical, "rows": rows, **stub})
    ratios = [r["wall"] / r["critical"] for r in runs]
    median = sorted(runs, key=lambda r: r["wall"] / r["critical"])[len(runs) // 2]
    return {
        **placement(backend, args),
        "episodes": len(median["rows"]),
        "calls": sum(r["usage"]["agent"]["calls"] for r in median["rows"]),
        "critical_path_s": round(median["critical"], 3),
        "wall_s": round(median["wall"], 3),
        "over_critical": round(median["wall"] / median["critical"], 3),
        "runs_over_critical": [round(x, 3) for x in ratios],
        "server_max_in_flight": max(r["max_in_flight"] for r in runs),
        "server_cpu_s": round(median["cpu_s"], 3),
    }


def client_cpu(args: argparse.Namespace, root: Path) -> dict:
    """CPU of this process per model call, one episode at a time (no cache, no waiting on the stub)."""
    with stub_process(0.0) as (url, _):
        cfg = config(args, stub_model(url, args), {"backend": "threading", "n_jobs": 1}, {"mode": "off"})
        started = time.process_time()
        _, rows = timed(cfg, root / "cpu")
        spent = time.process_time() - started
    calls = sum(r["usage"]["agent"]["calls"] for r in rows)
    return {"client_cpu_ms_per_call": round(1000 * spent / calls, 3), "calls": calls}


def warm_sdk() -> None:
    """Import the SDK and make one request, so the modules its transport loads at the first request (~0.2 s
    of CPU, once per process) are not counted against the first backend: a one-time cost, not overlap."""
    import openai

    with stub_process(0.0) as (url, _):
        client = openai.OpenAI(api_key="sk-warm-up", base_url=f"{url}/v1", max_retries=0)
        client.post("/chat/completions", body={"model": "warm-up", "messages": []}, cast_to=bytes)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--turns", type=int, default=5, help="toy max_turns; every episode uses them all")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the stub waits before answering")
    parser.add_argument("--jobs", type=int, default=64, help="episodes in flight (threading, ray)")
    parser.add_argument("--workers", type=int, default=4, help="processes (loky: also episodes in flight)")
    parser.add_argument(
        "--backend", default="threading,loky,ray", help="comma-separated: threading, loky, ray"
    )
    parser.add_argument("--max-concurrency", type=int, default=64, help="model.max_concurrency")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per backend; the median run's ratio is reported"
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat must be ≥ 1, got {args.repeat}")
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    os.environ.setdefault("BENCH_STUB_KEY", "sk-bench-not-a-real-key")
    warm_sdk()
    root = Path(tempfile.mkdtemp(prefix="bench_concurrency_"))
    figures: dict = {"delay_s": args.delay, "turns": args.turns, "backends": {}}
    for backend in backends:
        if backend == "ray":
            from pos_bench.runner.pool.ray import connect

            # The cluster exists before the run, as on a real one; started only now, since its idle
            # processes would take CPU from the backends measured before it.
            connect(None)
        figures["backends"][backend] = parallel_figures(backend, args, root)
    figures["best"] = min(figures["backends"], key=lambda b: figures["backends"][b]["over_critical"])
    figures.update(client_cpu(args, root))
    if "threading" in backends:
        replay = {"_target_": "pos_bench.models.replay.Replayed", "run": str(root / "threading-0")}
        cache = {"mode": "read_write", "path": str(root / "threading-0.sqlite")}
        replay_wall, rows = timed(
            config(args, replay, {"backend": "threading", "n_jobs": 1}, cache), root / "replay"
        )
        figures.update(
            replay_wall_s=round(replay_wall, 3),
            replay_per_episode_ms=round(1000 * replay_wall / len(rows), 2),
        )
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
