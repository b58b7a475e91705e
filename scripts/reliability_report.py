"""The reliability campaign of issue 11 on the toy benchmark, the scripted model and loopback stub servers: prints
one table of figures and exits 1 if anything was lost, duplicated, mixed or leaked (or a check failed).

    uv run python scripts/reliability_report.py            # the full campaign
    uv run python scripts/reliability_report.py --quick    # fewer kills and repeats (CI; a few minutes)

Every run goes through `python -m pos_bench` in a subprocess, as a user would run it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHARED = Path(os.environ.get("POS_BENCH_SHARED", REPO.parent / "shared"))
TOY = ["bench=toy", "method=raw", "model=scripted", "runner.progress=false"]


@dataclass
class Figure:
    check: str
    measured: str
    ok: bool


def cli(args: list[str], root: Path, *, env: dict[str, str] | None = None, timeout: float = 600):
    return subprocess.run(
        [sys.executable, "-m", "pos_bench", *args, f"results_root={root}"],
        cwd=REPO,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def start(args: list[str], root: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pos_bench", *args, f"results_root={root}"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
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


# --- kill -9 of the main process ------------------------------------------------------------------------


def kill_campaign(tmp: Path, points: int, episodes: int, rng: random.Random) -> list[Figure]:
    args = [*TOY, f"bench.n_tasks={episodes}", "bench.max_turns=3", "model.delay=0.03", "runner.n_jobs=2"]
    started = time.perf_counter()
    cli(args, tmp / "reference")
    duration = time.perf_counter() - started
    reference = {r["task_id"]: r for r in only_rows(tmp / "reference")}
    root = tmp / "killed"
    killed = 0
    for _ in range(points):
        proc = start(args, root)
        time.sleep(rng.uniform(0.2, duration))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            killed += 1
        proc.wait()
    final = cli(args, root)
    rows = only_rows(root)
    ids = [r["task_id"] for r in rows]
    lost = len(set(reference) - set(ids))
    duplicated = len(ids) - len(set(ids))
    different = sum(reference.get(r["task_id"]) != r for r in rows)
    ok = final.returncode == 0 and len(reference) == episodes and not (lost or duplicated or different)
    return [
        Figure(
            f"kill -9 of the main process at {points} random points ({episodes} episodes, n_jobs=2)",
            f"{killed} kills landed; after resume {len(set(ids))}/{episodes} episodes, lost {lost}, "
            f"duplicated {duplicated}, rows differing from an uninterrupted run {different}",
            ok,
        )
    ]


# --- SIGKILL of one worker ------------------------------------------------------------------------------


def loky_workers(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            for child in f.read().split():
                try:
                    cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"popen_loky_posix" in cmdline:
                    found.append(int(child))
    return found


def worker_kill_campaign(tmp: Path, runs: int) -> list[Figure]:
    args = [*TOY, "bench.n_tasks=6", "bench.max_turns=4", "model.delay=0.1", "runner.n_jobs=2"]
    good = 0
    notes = []
    for i in range(runs):
        root = tmp / f"worker{i}"
        proc = start(args, root)
        deadline = time.time() + 120
        workers: list[int] = []
        while time.time() < deadline and proc.poll() is None:
            workers = loky_workers(proc.pid)
            if workers and sum(len(raw_rows(f)) for f in run_folders(root)) >= 1:
                break
            time.sleep(0.05)
        if workers:
            os.kill(workers[0], signal.SIGKILL)
        proc.wait(timeout=300)
        rows = only_rows(root)
        errors = [r for r in rows if r["status"] == "error"]
        summary = bool(run_folders(root)) and (run_folders(root)[0] / "summary.json").is_file()
        if proc.returncode == 0 and len(rows) == 6 and len(errors) == 1 and summary:
            good += 1
        else:
            notes.append(f"run {i}: exit {proc.returncode}, {len(rows)} rows, {len(errors)} errors")
    example = errors[0]["error"] if errors else "-"
    return [
        Figure(
            f"SIGKILL of one worker in {runs} runs",
            f"{good}/{runs} runs finished with all rows, exactly one error row and a summary "
            f"(e.g. {example!r}) {'; '.join(notes)}",
            good == runs,
        )
    ]


# --- two copies at once ---------------------------------------------------------------------------------


def twins_campaign(tmp: Path, repeats: int) -> list[Figure]:
    args = [*TOY, "bench.n_tasks=8", "bench.max_turns=3", "model.delay=0.02", "runner.n_jobs=2"]
    duplicated = missing = refused = 0
    for i in range(repeats):
        root = tmp / f"twins{i}"
        pair = [start(args, root), start(args, root)]
        codes = [p.wait(timeout=300) for p in pair]
        refused += codes.count(2)
        rows = [r for folder in run_folders(root) for r in raw_rows(folder)]
        ids = [r["task_id"] for r in rows]
        duplicated += len(ids) - len(set(ids))
        missing += 8 - len(set(ids))
    return [
        Figure(
            f"two copies of one command started together, {repeats} times",
            f"duplicated rows {duplicated}, missing rows {missing}, second copy refused {refused}/{repeats} times",
            duplicated == 0 and missing == 0,
        )
    ]


# --- changed settings never mix ------------------------------------------------------------------------


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


def chat_reply(body: dict, headers: dict) -> tuple[int, dict]:
    text = json.dumps({"thought": "", "action": "look"})
    message = {"role": "assistant", "content": text}
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return 200, {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model"),
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": usage,
    }


def settings_campaign(tmp: Path) -> list[Figure]:
    server = Server(chat_reply)
    remote = [
        "bench=toy",
        "method=raw",
        "model=openai",
        f"model.base_url={server.url}",
        "model.api_key_env=null",
    ]
    clindiag_data = SHARED / "benchmarks" / "clindiag"
    copy = tmp / "clindiag_copy"
    if clindiag_data.is_dir():
        copy.mkdir(parents=True, exist_ok=True)
        for item in clindiag_data.iterdir():
            if not (copy / item.name).exists():
                (copy / item.name).symlink_to(item)
    changes: list[tuple[str, list[str], str, str]] = [
        ("model.model", remote, "model.model=model-a", "model.model=model-b"),
        ("bench.max_turns", TOY, "bench.max_turns=3", "bench.max_turns=4"),
        ("bench.text_version", TOY, "bench.text_version=2.1.2", "bench.text_version=2.1.1"),
        ("method.max_json_retries", TOY, "method.max_json_retries=2", "method.max_json_retries=1"),
    ]
    if clindiag_data.is_dir():
        clindiag = ["bench=clindiag", "method=raw", "model=scripted", "runner.progress=false"]
        changes.append(
            ("bench.data_dir", clindiag, f"bench.data_dir={clindiag_data}", f"bench.data_dir={copy}")
        )
    figures = []
    try:
        for key, base, first, second in changes:
            root = tmp / f"settings_{key}"
            common = [*base, "bench.limit=2", "runner.progress=false"]
            a = cli([*common, first], root)
            before = {f: raw_rows(f) for f in run_folders(root)}
            b = cli([*common, second], root)
            after = {f: raw_rows(f) for f in run_folders(root)}
            mixed = sum(len(rows) - len(before.get(f, [])) for f, rows in after.items() if f in before)
            new = [f for f in after if f not in before]
            refused = b.returncode == 2
            ok = a.returncode == 0 and mixed == 0 and (refused or (len(new) == 1 and len(after[new[0]]) == 2))
            how = "refused" if refused else f"new folder {new[0].name if new else '(none)'}"
            figures.append(Figure(f"change {key} and rerun", f"mixed rows {mixed}; {how}", ok))
    finally:
        server.stop()
    if not clindiag_data.is_dir():
        figures.append(
            Figure("change bench.data_dir and rerun", f"skipped: no data at {clindiag_data}", True)
        )
    return figures


# --- fuzzed replies -------------------------------------------------------------------------------------


def fuzz(
    parse: Callable[[str], Any], examples: int, given: Any, settings: Any, checks: Any
) -> dict[str, Any]:
    """Feed `examples` hypothesis replies to `parse`; count them, its crashes, and its slowest parse."""
    from tests.replies import parse_seconds, replies

    seen = {"n": 0, "crashes": 0, "slowest": 0.0}

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(checks))
    @given(replies())
    def attempt(text: str) -> None:
        seen["n"] += 1
        try:
            seconds = parse_seconds(parse, text)
        except Exception:  # noqa: BLE001 - counting crashes is the point
            seen["crashes"] += 1
            return
        seen["slowest"] = max(seen["slowest"], seconds)

    attempt()
    return seen


def fuzz_campaign(examples: int) -> list[Figure]:
    from hypothesis import HealthCheck, given, settings

    from baselines.lh_harness.records import AuditReport as HarnessAudit
    from baselines.lh_harness.records import ManagerPlan
    from baselines.pace.method import ChunkSummary
    from baselines.passport.records import AuditReport as PassportAudit
    from baselines.passport.records import Passport
    from pos_bench.parse import parse_decision
    from pos_bench.pos.belief import BeliefDelta, BeliefInit
    from pos_bench.pos.sentinel import AuditReply, ProgressReply
    from pos_bench.pos.updater import BeliefText
    from pos_bench.structured import read_structured
    from pos_bench.types import Observation

    commands = Observation("obs", actions=("look", "go north"))
    tools = Observation("obs", tools=({"type": "function", "function": {"name": "ask"}},))
    parsers: dict[str, Callable[[str], Any]] = {
        "policy decision (commands)": lambda text: parse_decision(text, commands),
        "policy decision (tools)": lambda text: parse_decision(text, tools, ("glimpse",)),
    }
    for role, output in [
        ("belief init", BeliefInit),
        ("belief delta", BeliefDelta),
        ("belief text", BeliefText),
        ("sentinel audit", AuditReply),
        ("sentinel progress", ProgressReply),
        ("summariser (PACE)", ChunkSummary),
        ("manager (LH harness)", ManagerPlan),
        ("auditor (LH harness)", HarnessAudit),
        ("passport auditor", PassportAudit),
        ("passport", Passport),
    ]:
        parsers[role] = lambda text, output=output: read_structured(text, output)
    figures = []
    for name, parse in parsers.items():
        seen = fuzz(parse, examples, given, settings, HealthCheck)
        ok = seen["n"] >= examples and seen["crashes"] == 0 and seen["slowest"] < 0.05
        figures.append(
            Figure(
                f"fuzzed replies: {name}",
                f"{seen['n']} replies, {seen['crashes']} crashes, slowest {1000 * seen['slowest']:.1f} ms",
                ok,
            )
        )
    return figures


# --- a server that echoes the key -----------------------------------------------------------------------


def echo_campaign(tmp: Path) -> list[Figure]:
    key = "sk-reliability-" + secrets.token_hex(16)

    def refuse(body: dict, headers: dict) -> tuple[int, dict]:
        auth = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
        return 401, {
            "error": {"message": f"Incorrect API key provided: {auth}", "type": "invalid_request_error"}
        }

    server = Server(refuse)
    root = tmp / "echo"
    try:
        out = cli(
            [
                *TOY[:1],
                "method=raw",
                "model=openai",
                f"model.base_url={server.url}",
                "model.api_key_env=RELIABILITY_ECHO_KEY",
                "bench.limit=2",
                "retry.max_attempts=1",
                "runner.progress=false",
            ],
            root,
            env={"RELIABILITY_ECHO_KEY": key},
        )
    finally:
        server.stop()
    files = [p for p in root.rglob("*") if p.is_file()]
    leaks = [p for p in files if key.encode() in p.read_bytes()]
    marked = sum(b"[redacted $RELIABILITY_ECHO_KEY]" in p.read_bytes() for p in files)
    printed = key in out.stdout or key in out.stderr
    ok = not leaks and not printed and out.returncode == 1 and marked > 0
    return [
        Figure(
            "a loopback server echoing the key in its 401 body",
            f"key in {len(leaks)} of {len(files)} written files (echo redacted in {marked}), printed: {printed}, "
            f"exit {out.returncode}",
            ok,
        )
    ]


# --- bad files ------------------------------------------------------------------------------------------


def bad_files_campaign(tmp: Path) -> list[Figure]:
    args = [*TOY, "bench.n_tasks=4", "bench.max_turns=2"]
    figures = []

    root = tmp / "corrupt"
    cli([*args, "bench.limit=2"], root)
    before = only_rows(root)
    cache = root / "cache" / "responses.sqlite"
    cache.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{cache}{suffix}").unlink(missing_ok=True)
    out = cli(args, root)
    ok = out.returncode == 2 and str(cache) in out.stderr and "cache.mode=off" in out.stderr
    figures.append(
        Figure(
            "corrupt cache",
            f"exit {out.returncode}; message: {out.stderr.strip().splitlines()[-1][:110]!r}; rows lost "
            f"{len(before) - len(only_rows(root))}",
            ok and only_rows(root) == before,
        )
    )

    root = tmp / "locked"
    cli([*args, "bench.limit=2"], root)
    before = only_rows(root)
    holder = sqlite3.connect(root / "cache" / "responses.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        out = cli(args, root)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    ok = out.returncode == 2 and "locked" in out.stderr and only_rows(root) == before
    figures.append(
        Figure(
            "locked cache",
            f"exit {out.returncode}; message: {out.stderr.strip().splitlines()[-1][:110]!r}; rows lost "
            f"{len(before) - len(only_rows(root))}",
            ok,
        )
    )

    root = tmp / "torn"
    cli(args, root)
    (folder,) = run_folders(root)
    path = folder / "results.jsonl"
    whole = path.read_text().splitlines()
    path.write_text("\n".join(whole[:-1]) + "\n" + whole[-1][: len(whole[-1]) // 2])
    out = cli(args, root)
    after = raw_rows(folder)
    kept = all(row in after for row in map(json.loads, whole[:-1]))
    ok = out.returncode == 0 and "cut off" in out.stderr and len(after) == 4 and kept
    figures.append(
        Figure(
            "torn results.jsonl",
            f"exit {out.returncode}, warned: {'cut off' in out.stderr}, rows after resume {len(after)}/4, "
            f"whole rows kept: {kept}",
            ok,
        )
    )
    staged = SHARED / "benchmarks" / "clindiag"
    tarballs = sorted(staged.glob("*.tar.gz")) if staged.is_dir() else []
    if tarballs:
        data = tmp / "truncated_clindiag"
        data.mkdir()
        whole = tarballs[0].read_bytes()
        (data / tarballs[0].name).write_bytes(whole[: len(whole) // 2])
        for manifest in staged.glob("*.txt"):
            (data / manifest.name).symlink_to(manifest)
        out = cli(
            ["bench=clindiag", "method=raw", "model=scripted", f"bench.data_dir={data}"], tmp / "tarball"
        )
        ok = out.returncode == 2 and "damaged or truncated" in out.stderr and tarballs[0].name in out.stderr
        last = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ""
        figures.append(
            Figure("truncated data tarball", f"exit {out.returncode}; message: {last[:110]!r}", ok)
        )
    else:
        figures.append(Figure("truncated data tarball", f"skipped: no staged tarball in {staged}", True))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer kills and repeats (CI)")
    parser.add_argument("--seed", type=int, default=11)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    points, episodes, workers, twins = (5, 12, 3, 3) if options.quick else (20, 32, 10, 10)
    started = time.perf_counter()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="pos_bench_reliability_") as folder:
        tmp = Path(folder)
        for name, campaign in [
            ("fuzz", lambda: fuzz_campaign(1000)),
            ("kill -9", lambda: kill_campaign(tmp, points, episodes, rng)),
            ("worker kill", lambda: worker_kill_campaign(tmp, workers)),
            ("twins", lambda: twins_campaign(tmp, twins)),
            ("settings", lambda: settings_campaign(tmp)),
            ("echoed key", lambda: echo_campaign(tmp)),
            ("bad files", lambda: bad_files_campaign(tmp)),
        ]:
            print(f"[{time.perf_counter() - started:6.1f}s] {name}…", file=sys.stderr, flush=True)
            figures.extend(campaign())
    width = max(len(f.check) for f in figures)
    print(f"\n{'check'.ljust(width)}  ok   measured")
    for f in figures:
        print(f"{f.check.ljust(width)}  {'yes' if f.ok else 'NO '}  {f.measured}")
    failed = [f for f in figures if not f.ok]
    print(
        f"\n{len(figures) - len(failed)}/{len(figures)} checks passed in {time.perf_counter() - started:.0f} s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
