"""The fault checks of issue 30 for `scripts/reliability_report.py`: a server that drip-feeds its replies
(call and episode deadlines), a disk that fills mid-run, credentials in a model URL, SIGTERM. Each is a real
end-to-end trial (`python -m pos_bench` in a subprocess, a loopback server, a tmpfs, a signal) returning
`Figure`s that count rows lost, duplicated, mixed and secrets leaked."""

from __future__ import annotations

import errno
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from reliability_harness import (
    TOY,
    Figure,
    cli,
    last_line,
    lost_and_duplicated,
    raw_rows,
    remote,
    resume,
    row_count,
    run_folders,
    start,
    the_folder,
)

# --- 1. deadlines ---------------------------------------------------------------------------------------


def doomed_goal(index: int, n_tasks: int) -> str:
    """The goal sentence of toy task `index`, which no other of the first `n_tasks` tasks shares."""
    from pos_bench.benchmarks.toy import ToyBenchmark

    bench = ToyBenchmark(n_tasks=n_tasks)
    env = bench.make_env(None)
    goals = [env.reset(task).goal for task in bench.tasks()]
    assert goals.count(goals[index]) == 1, goals
    return goals[index]


DRIP_TOKENS, DRIP_SPEED = 4096, 4096.0
"""An upper bound on the drip runs' reply budgets (a method's prompt may set its own, below the model's) and the
slowest decode waited for: a call's overall deadline is at most model.timeout + 1 s."""


def drip_check(tmp: Path, timeouts: list[float]) -> list[Figure]:
    """A server that sends one byte a second: each call ends at its overall deadline, `model.timeout` plus the time
    its reply budget takes at `model.min_tokens_per_s` (+1 s at most), and an episode
    whose calls all drip ends at `runner.episode_timeout` as an error row while the others finish."""
    figures = []
    worst = float("-inf")
    durations: list[str] = []
    good = lost = 0
    notes = []
    for i, timeout in enumerate(timeouts):
        arrived: list[float] = []
        fault = "drip_headers" if i % 2 else "drip"  # the body byte by byte, or the status line too
        with StubOpenAIRule(lambda body, fault=fault: fault, arrived) as stub:
            out = cli(
                [
                    *remote(stub.url),
                    "bench.n_tasks=1",
                    "bench.max_turns=1",
                    f"model.timeout={timeout}",
                    f"model.max_tokens={DRIP_TOKENS}",
                    f"model.min_tokens_per_s={DRIP_SPEED}",
                    "retry.max_attempts=1",
                    "cache.mode=off",
                ],
                tmp / f"drip{i}",
            )
        run = the_folder(tmp / f"drip{i}")
        rows = raw_rows(run)
        lost += lost_and_duplicated(rows, ["toy/000"])[0]
        ended = [
            event["time"]
            for path in run.glob("episodes/*/events.jsonl")
            for event in map(json.loads, path.read_text(encoding="utf-8").splitlines())
            if event.get("kind") == "call_error"
        ]
        took = (ended[0] - arrived[0]) if ended and arrived else float("inf")
        deadline = timeout + DRIP_TOKENS / DRIP_SPEED
        worst = max(worst, took - deadline)
        durations.append(f"{took:.2f} s of {deadline:g} s")
        ok = out.returncode == 1 and len(arrived) == 1 and took <= deadline + 1.0
        good += ok
        if not ok:
            notes.append(
                f"timeout {timeout}: exit {out.returncode}, {len(arrived)} requests, call {took:.1f} s"
            )
    figures.append(
        Figure(
            "a one-byte-per-second server: the call deadline (timeout + max_tokens / min_tokens_per_s)",
            f"{good}/{len(timeouts)} calls cut within their deadline + 1 s (request to call_error event: "
            f"{', '.join(durations)}; the latest {worst:+.2f} s past its deadline); the episode an error row, "
            f"the run exit 1 {'; '.join(notes)}",
            good == len(timeouts),
            trials=len(timeouts),
            lost=lost,
        )
    )
    figures.append(episode_deadline(tmp))
    return figures


def episode_deadline(tmp: Path, limit: float = 20.0) -> Figure:
    # not less: the clock of an episode starts when it is handed to its slot, and a fresh worker process
    # (spawn, imports) took over 6 s under load, so a 6 s limit timed out episodes that never dripped
    n = 3
    goal = doomed_goal(1, n)
    arrived: list[float] = []
    root = tmp / "episode_deadline"
    with StubOpenAIRule(lambda body: "drip" if goal in json.dumps(body) else None, arrived) as stub:
        started = time.time()
        out = cli(
            [
                *remote(stub.url),
                f"bench.n_tasks={n}",
                "bench.max_turns=3",
                "model.timeout=600",  # the call deadline never fires: only the episode's can end it
                "retry.max_attempts=1",
                "cache.mode=off",
                "runner.n_jobs=2",
                f"runner.episode_timeout={limit}",
            ],
            root,
        )
        ended = time.time()
    rows = {r["task_id"]: r for folder in run_folders(root) for r in raw_rows(folder)}
    lost, duplicated = lost_and_duplicated(list(rows.values()), [f"toy/{i:03d}" for i in range(n)])
    doomed = rows.get("toy/001", {})
    others = [r["status"] for t, r in rows.items() if t != "toy/001"]
    timed_out = doomed.get("status") == "error" and str(doomed.get("error")).startswith("EpisodeTimeout:")
    after = ended - arrived[0] if arrived else float("inf")
    ok = out.returncode == 0 and timed_out and others == ["done"] * (n - 1) and after < limit + 15
    return Figure(
        "a one-byte-per-second server: the episode deadline (runner.episode_timeout)",
        f"episode_timeout {limit:g} s: the dripping episode {doomed.get('status')} "
        f"({str(doomed.get('error'))[:40]!r}…), the others {others}; the run ended {after:.1f} s after that "
        f"episode's first request ({ended - started:.1f} s in all), exit {out.returncode}",
        ok,
        lost=lost,
        duplicated=duplicated,
    )


class StubOpenAIRule:
    """The tests' OpenAI stub with a fault `rule`, noting when each request arrived."""

    def __init__(self, rule, arrived: list[float]):
        from tests.models.stub_openai_server import StubOpenAI

        self.stub = StubOpenAI()

        def noted(body):
            chosen = rule(body)
            if chosen:
                arrived.append(time.time())
            return chosen

        self.stub.faults.rule = noted

    def __enter__(self):
        return self.stub.start()

    def __exit__(self, *exc: object) -> None:
        self.stub.stop()


# --- 2. a full disk -------------------------------------------------------------------------------------


def fill(folder: Path) -> Path:
    """Write one file in `folder` until its file system has no byte left (ENOSPC)."""
    path = folder / "filler"
    with path.open("wb", buffering=0) as f:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\0" * size
            try:
                while True:
                    f.write(block)
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
    return path


def disk_full_check(tmp: Path, trials: int, rng: random.Random) -> list[Figure]:
    name = "a 20 MB tmpfs filled mid-run, then freed"
    mount = tmp / "tmpfs"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(mount)],
        check=False,
        capture_output=True,
        text=True,
    )
    if mounted.returncode:
        reason = last_line(mounted.stderr) or f"exit {mounted.returncode}"
        print(f"skipping the full-disk check: mount refused ({reason})", file=sys.stderr, flush=True)
        return [Figure(name, f"skipped: mount -t tmpfs refused ({reason})", True, trials=0)]
    n = 24
    args = [*TOY, f"bench.n_tasks={n}", "bench.max_turns=4", "model.delay=0.1", "runner.n_jobs=2"]
    expected = [f"toy/{i:03d}" for i in range(n)]
    lost = duplicated = orphaned = good = 0
    notes = []
    try:
        for i in range(trials):
            root = mount / f"run{i}"
            proc = start(args, root)
            wait_for_rows(proc, root, rng.randint(2, n // 2))
            filler = fill(mount)
            _, err = proc.communicate(timeout=300)
            errors = [line for line in err.splitlines() if line.strip()]
            message = errors[0] if errors else ""
            stopped = (
                proc.returncode == 3
                and len(errors) == 1
                and message.startswith("error: no space left writing ")
                and "MB free" in message
                and "resume" in message
            )
            filler.unlink()
            resumed = resume(args, root, expected)
            lost, duplicated = lost + resumed.lost, duplicated + resumed.duplicated
            orphaned += resumed.without_files
            ok = stopped and resumed.code == 0 and len(resumed.rows) == n and not resumed.without_files
            good += ok
            if not ok:
                notes.append(
                    f"trial {i}: exit {proc.returncode}, {len(errors)} stderr lines "
                    f"({' | '.join(e[:100] for e in errors[-3:])}); resume exit {resumed.code}, "
                    f"{len(resumed.rows)} rows, {resumed.without_files} without result.json"
                )
            shutil.rmtree(root, ignore_errors=True)
    finally:
        subprocess.run(["umount", str(mount)], check=False)
    return [
        Figure(
            name,
            f"{good}/{trials} runs stopped with the one message and exit 3, then resumed to {n}/{n} rows, "
            f"{orphaned} without result.json {'; '.join(notes)}",
            good == trials,
            trials=trials,
            lost=lost,
            duplicated=duplicated,
        )
    ]


def wait_for_rows(proc: subprocess.Popen, root: Path, rows: int, limit: float = 300) -> None:
    deadline = time.time() + limit
    while time.time() < deadline and proc.poll() is None and row_count(root) < rows:
        time.sleep(0.05)


# --- 3. credentials -------------------------------------------------------------------------------------


def credentials_check(tmp: Path) -> list[Figure]:
    """`user:SECRET@` and `?api-key=SECRET` in model.base_url (with and without the endpoint check), and a key
    pasted into model.api_key_env: the secret in no file under the results root and no line of output."""
    from tests.models.stub_openai_server import StubOpenAI

    secret = "pw" + secrets.token_hex(12)
    leaked = good = 0
    notes = []
    base = [
        "bench=toy",
        "bench.n_tasks=1",
        "bench.max_turns=2",
        "method=raw",
        "model=openai",
        "model.model=stub-model",
        "runner.progress=false",
        "runner.backend=threading",  # episodes in the main process: httpx's request log goes to Hydra's log
    ]
    with StubOpenAI() as stub:
        host = stub.url.removeprefix("http://")
        url = f'model.base_url="http://user:{secret}@{host}/v1?api-key={secret}"'
        trials = [
            # the check goes through the chat calls' transport, which sends the URL's user info as Basic auth; the
            # stub has no models route (404), which the check lets pass, so the run goes on and is refused too
            ("endpoint check on", [url, "model.api_key_env=null", "runner.check_endpoints=true"], 1),
            # the OpenAI SDK appends its route after the query (`/v1/?api-key=…chat/completions`): the stub
            # refuses that path, every episode is refused, and the run exits 1 having reached the server
            ("endpoint check off", [url, "model.api_key_env=null", "runner.check_endpoints=false"], 1),
            (
                "key pasted into api_key_env",
                [f"model.base_url={stub.url}/v1", f"model.api_key_env=sk-{secret}"],
                2,
            ),
        ]
        for i, (label, overrides, code) in enumerate(trials):
            root = tmp / f"credentials{i}"
            asked = len(stub.requests)
            out = cli([*base, *overrides], root)
            files = [p for p in root.rglob("*") if p.is_file()]
            in_files = [p.name for p in files if secret.encode() in p.read_bytes()]
            in_lines = [line for line in (out.stdout + out.stderr).splitlines() if secret in line]
            leaked += len(in_files) + len(in_lines)
            logs = [p.read_text(encoding="utf-8") for p in files if p.name == "__main__.log"]
            scrubbed = code == 2 or any("HTTP Request: POST http://[redacted]@" in log for log in logs)
            reached = code == 2 or len(stub.requests) > asked
            ok = out.returncode == code and scrubbed and reached
            good += ok
            notes.append(
                f"{label}: exit {out.returncode}, {len(in_files)} files and {len(in_lines)} lines with it"
                + ("" if ok else f" (request log scrubbed {scrubbed}, server reached {reached})")
            )
    return [
        Figure(
            "credentials in model.base_url (user:secret@, ?api-key=secret) and in api_key_env",
            "; ".join(notes),
            good == len(trials),
            trials=len(trials),
            leaked=leaked,
        )
    ]


# --- 4. SIGTERM -----------------------------------------------------------------------------------------


def sigterm_check(tmp: Path, trials: int, rng: random.Random) -> list[Figure]:
    n = 8
    args = [*TOY, f"bench.n_tasks={n}", "bench.max_turns=3", "model.delay=0.2", "runner.n_jobs=2"]
    expected = [f"toy/{i:03d}" for i in range(n)]
    lost = duplicated = orphaned = good = 0
    notes = []
    for i in range(trials):
        root = tmp / f"sigterm{i}"
        scratch = tmp / f"sigterm_tmp{i}"
        scratch.mkdir()
        proc = start([*args, "runner.backend=loky"], root, env={"TMPDIR": str(scratch)})
        wait_for_rows(proc, root, 1)
        time.sleep(rng.uniform(0.0, 1.5))
        proc.send_signal(signal.SIGTERM)  # to the main process only, as `kill PID` does
        _, err = proc.communicate(timeout=120)
        time.sleep(0.5)
        left = [p.name for p in scratch.iterdir()]
        alive = group_alive(proc.pid)
        clean = (
            proc.returncode == 143
            and "run the same command again to resume" in err
            and "Traceback" not in err
            and "leaked" not in err
            and not left
            and not alive
        )
        resumed = resume(args, root, expected)
        lost, duplicated = lost + resumed.lost, duplicated + resumed.duplicated
        orphaned += resumed.without_files
        ok = clean and resumed.code == 0 and not resumed.without_files
        good += ok
        if not ok:
            notes.append(
                f"trial {i}: exit {proc.returncode}, left in TMPDIR {left}, workers alive {alive}, stderr "
                f"{last_line(err)!r}; resume exit {resumed.code}"
            )
    return [
        Figure(
            "SIGTERM to the main process mid-run, then the same command",
            f"{good}/{trials} runs: exit 143 with the resume line, no traceback, no leaked-semaphore "
            f"warning, nothing left in TMPDIR, no worker alive; resumed to {n}/{n} rows, {orphaned} without "
            f"result.json {'; '.join(notes)}",
            good == trials,
            trials=trials,
            lost=lost,
            duplicated=duplicated,
        )
    ]


def group_alive(pgid: int) -> list[int]:
    """The processes of the run's process group still running (then killed); an exited worker that its new
    parent has not reaped yet (a zombie) is gone already."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return alive
