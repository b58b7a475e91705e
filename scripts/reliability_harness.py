"""What every check of `scripts/reliability_report.py` shares: the `Figure` a check reports, `python -m
pos_bench` run in a subprocess as a user runs it, the rows a run folder holds, and a loopback OpenAI-
compatible server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("POS_BENCH_SHARED", REPO.parent / "shared"))
TOY = ["bench=toy", "method=raw", "model=scripted", "runner.progress=false"]


def remote(url: str) -> list[str]:
    """The toy benchmark played by `model=openai` against an OpenAI-compatible server at `url`."""
    return [
        "bench=toy",
        "method=raw",
        "model=openai",
        "model.model=stub-model",  # the one model the tests' stub serves
        f"model.base_url={url}/v1",
        "model.api_key_env=null",
        "runner.progress=false",
    ]


@dataclass
class Figure:
    """One line of the campaign's table: what was tried, how often, what it cost, and whether it held."""

    check: str
    measured: str
    ok: bool
    """The guarantee held (exit codes, messages, bounds); the counts below must be 0 besides."""
    trials: int = 1
    lost: int = 0
    """Episodes with no row after the last (resumed) run."""
    duplicated: int = 0
    """Rows of an episode beyond its first."""
    mixed: int = 0
    """Rows recorded under settings, code or a folder not their own, unrecorded as such."""
    leaked: int = 0
    """Files and output lines holding a secret."""

    @property
    def passed(self) -> bool:
        return self.ok and not (self.lost or self.duplicated or self.mixed or self.leaked)


def cli(
    args: list[str],
    root: Path,
    *,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    cwd: Path = REPO,
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pos_bench", *args, f"results_root={root}"],
        cwd=cwd,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def start(
    args: list[str], root: Path, *, env: dict[str, str] | None = None, stdout: int = subprocess.DEVNULL
) -> subprocess.Popen:
    """The run in its own session (so a kill can reach its workers), stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "pos_bench", *args, f"results_root={root}"],
        cwd=REPO,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )


def run_folders(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("results.jsonl"))


def raw_rows(folder: Path) -> list[dict[str, Any]]:
    path = folder / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.endswith("}")]


def only_rows(root: Path) -> list[dict[str, Any]]:
    folders = run_folders(root)
    return raw_rows(folders[0]) if len(folders) == 1 else []


def the_folder(root: Path) -> Path:
    """The one run folder under `root`; `root` itself when there is none or several (so no row is found)."""
    folders = run_folders(root)
    return folders[0] if len(folders) == 1 else root


def row_count(root: Path) -> int:
    return sum(len(raw_rows(f)) for f in run_folders(root))


def lost_and_duplicated(rows: list[dict[str, Any]], expected: Iterable[str]) -> tuple[int, int]:
    """Expected task ids with no row, and rows beyond the first of their (task, trial)."""
    keys = [(r.get("task_id"), r.get("trial") or 0) for r in rows]
    return len(set(expected) - {task for task, _ in keys}), len(keys) - len(set(keys))


@dataclass(frozen=True)
class Resumed:
    """The same command run again after a fault, and what its results file then holds."""

    code: int
    rows: list[dict[str, Any]]
    lost: int
    duplicated: int
    without_files: int


def resume(args: list[str], root: Path, expected: Iterable[str]) -> Resumed:
    """Run `args` again under `root` and count the rows lost, duplicated and without their files."""
    done = cli(args, root)
    folder = the_folder(root)
    rows = raw_rows(folder)
    lost, duplicated = lost_and_duplicated(rows, expected)
    return Resumed(done.returncode, rows, lost, duplicated, rows_without_files(folder, rows))


def rows_without_files(folder: Path, rows: list[dict[str, Any]]) -> int:
    """Rows whose episode folder has no `result.json` of that task."""
    from pos_bench.transcript import find_episode

    missing = 0
    for row in rows:
        path = find_episode(folder, row["task_id"], row.get("trial") or 0) / "result.json"
        try:
            missing += json.loads(path.read_text(encoding="utf-8")).get("task_id") != row["task_id"]
        except (OSError, ValueError):
            missing += 1
    return missing


def last_line(text: str) -> str:
    """The last line of a command's output; a Python warning's last line is its source (`warnings.warn(`),
    so the warning's message line before it is given too."""
    lines = text.strip().splitlines()
    if len(lines) > 1 and lines[-1].strip().startswith("warnings.warn("):
        return f"{lines[-2].strip()[:200]} / {lines[-1].strip()}"
    return lines[-1][:140] if lines else ""


class Server:
    """A loopback OpenAI-compatible server answering every chat call with `answer(body, headers)`."""

    def __init__(self, answer: Callable[[dict, dict], tuple[int, dict]]):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                status, payload = answer(body, dict(self.headers))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
