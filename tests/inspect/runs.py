"""Helpers of the inspect tests: run a pos_bench task through inspect, and the same config through `python -m
pos_bench` replaying the run folder the inspect eval wrote; read both back as comparable rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log

import pos_bench.inspect.tasks  # registers the pos_bench/<bench> tasks in this process

REPO = Path(__file__).resolve().parents[2]


def eval_task(
    bench: str,
    model: str,
    logs: Path,
    *,
    max_samples: int | None = None,
    max_connections: int | None = None,
    **args: Any,
) -> EvalLog:
    """`inspect eval pos_bench/<bench> --model <model> -T key=value…` in this process; the log as read back from
    its file."""
    [log] = inspect_eval(
        f"pos_bench/{bench}",
        model=model,
        task_args=args,
        log_dir=str(logs),
        display="none",
        max_samples=max_samples,
        max_connections=max_connections,
    )
    assert log.location, "inspect wrote no log"
    return read_eval_log(log.location)


def inspect_rows(log: EvalLog) -> dict[str, dict[str, Any]]:
    """Per sample: success, score and tokens per role (inspect's `role_usage`; input counts cached tokens)."""
    rows = {}
    for sample in log.samples or []:
        tokens = {
            role: (u.input_tokens + (u.input_tokens_cache_read or 0), u.output_tokens)
            for role, u in sample.role_usage.items()
        }
        rows[str(sample.id)] = {
            "success": bool(sample.scores["success"].value),
            "score": float(sample.scores["score"].value),
            "tokens": tokens,
        }
    return rows


def run_folder(log: EvalLog) -> Path:
    """The pos_bench run folder an inspect eval wrote (each sample names it)."""
    folders = {str(s.metadata["run_folder"]) for s in log.samples or []}
    assert len(folders) == 1, folders
    return Path(folders.pop())


def pos_bench(*overrides: str, results: Path) -> subprocess.CompletedProcess[str]:
    """`python -m pos_bench overrides… results_root=<results>` from the repository."""
    return subprocess.run(
        [sys.executable, "-m", "pos_bench", *overrides, f"results_root={results}"],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )


def pos_bench_rows(results: Path) -> dict[str, dict[str, Any]]:
    """Per episode of the one run under `results`: success, score and tokens per role."""
    [path] = [p for p in results.rglob("results.jsonl") if "cache" not in p.parts]
    rows = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        tokens = {role: (u["input_tokens"], u["output_tokens"]) for role, u in row["usage"].items()}
        rows[row["task_id"]] = {
            "success": bool(row["success"]),
            "score": float(row["score"]),
            "tokens": tokens,
        }
    return rows
