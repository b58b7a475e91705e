"""How long resuming a finished 604-episode ClinDiag run takes before its first new episode starts.

The first call plays the whole run once with the scripted model (a few minutes; kept in `--root` for the next
calls). Then one row is removed, so the resume has exactly one episode to play, and the script measures the time
from calling `runner.run` until that episode's transcript appears: pre-flight checks, the run-folder lock,
reading `results.jsonl`, choosing the pending task. The same is timed for the whole command line
(`python -m pos_bench …`, interpreter and Hydra start-up included).

    uv run python scripts/bench_resume.py [--root results/bench_resume]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pos_bench.runner import preflight, run
from pos_bench.runner.identity import RunIndex, run_identity
from pos_bench.transcript import find_episode

CHOICES = ["bench=clindiag", "method=raw", "model=scripted"]


def command(root: Path) -> list[str]:
    return [sys.executable, "-m", "pos_bench", *CHOICES, f"results_root={root}", "runner.progress=false"]


def drop_last_row(run_dir: Path) -> str:
    path = run_dir / "results.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]), encoding="utf-8")
    return lines[-1].split('"task_id": "', 1)[1].split('"', 1)[0]


def wait_for(path: Path, started: float, timeout: float = 300) -> float:
    while not path.exists():
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.005)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=REPO / "results" / "bench_resume")
    parser.add_argument("--n-jobs", type=int, default=2)
    options = parser.parse_args()
    root = options.root.resolve()
    with initialize_config_dir(str(REPO / "conf"), version_base="1.3"):
        cfg = OmegaConf.to_container(
            compose("config", overrides=[*CHOICES, f"results_root={root}", "runner.progress=false"]),
            resolve=True,
        )
    prepared = preflight(cfg)
    identity = run_identity(cfg, prepared.description)
    run_dir = RunIndex(root / "clindiag" / "raw" / "scripted").folder_for(identity)
    rows = run_dir / "results.jsonl"
    if not rows.exists() or len(rows.read_text().splitlines()) < len(prepared.tasks):
        print(f"playing the {len(prepared.tasks)} episodes once into {run_dir} …", flush=True)
        started = time.perf_counter()
        subprocess.run([*command(root), f"runner.n_jobs={options.n_jobs}"], cwd=REPO, check=True)
        print(f"  done in {time.perf_counter() - started:.0f} s")
    size = rows.stat().st_size
    print(f"finished run: {len(rows.read_text().splitlines())} rows, results.jsonl {size / 1e3:.0f} kB")

    task = drop_last_row(run_dir)
    events = find_episode(run_dir, task) / "events.jsonl"
    events.unlink(missing_ok=True)
    started = time.perf_counter()
    thread = threading.Thread(target=run, args=(cfg, run_dir, {}))
    thread.start()
    in_process = wait_for(events, started)
    thread.join()

    task = drop_last_row(run_dir)
    events = find_episode(run_dir, task) / "events.jsonl"
    events.unlink(missing_ok=True)
    started = time.perf_counter()
    proc = subprocess.Popen(command(root), cwd=REPO, stdout=subprocess.DEVNULL)
    whole = wait_for(events, started)
    proc.wait()
    print(
        f"resume → first new episode: {in_process:.2f} s in runner.run (pre-flight included), {whole:.2f} s for the whole command"
    )
    return 0 if in_process < 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
