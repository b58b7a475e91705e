"""The checks of issue 30 for `scripts/reliability_report.py`, one per guarantee, each a real end-to-end trial:
`python -m pos_bench` in a subprocess, loopback servers, a real tmpfs, a real signal, a copy of the repository
with an edited prompt. Each returns `Figure`s counting rows lost, duplicated, mixed and secrets leaked."""

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
    REPO,
    TOY,
    Figure,
    cli,
    last_line,
    lost_and_duplicated,
    raw_rows,
    row_count,
    rows_without_files,
    run_folders,
    start,
    the_folder,
)

# --- 1. episode folders ---------------------------------------------------------------------------------

ODD = [
    "bench=toy",
    "bench._target_=tests.runner.odd_ids.OddIds",  # the toy tasks renamed `..`, `.`, `a/b`, `café` …
    "~bench.n_tasks",
    "bench.max_turns=2",
    "method=raw",
    "model=scripted",
    "runner.progress=false",
]


def ids_check(tmp: Path, trials: int) -> list[Figure]:
    from pos_bench.transcript import ID_FILE
    from tests.runner.odd_ids import ODD_IDS

    lost = duplicated = mixed = good = 0
    notes = []
    for i in range(trials):
        root = tmp / f"ids{i}"
        args = [*ODD, f"runner.n_jobs={1 + i % 2}"]
        first = cli(args, root)
        folders = run_folders(root)
        before = (folders[0] / "results.jsonl").read_bytes() if len(folders) == 1 else b""
        again = cli(args, root)  # the resume: nothing is deleted, nothing played again
        if len(folders) != 1:
            lost += len(ODD_IDS)
            notes.append(
                f"trial {i}: exit {first.returncode}, {len(folders)} run folders: {last_line(first.stderr)}"
            )
            continue
        run = folders[0]
        rows = raw_rows(run)
        missing, twice = lost_and_duplicated(rows, ODD_IDS)
        lost, duplicated = lost + missing, duplicated + twice
        mixed += rows_without_files(run, rows)  # a row whose folder holds another id's result
        episodes = [p for p in (run / "episodes").iterdir() if p.is_dir()]
        named = sorted((p / ID_FILE).read_text(encoding="utf-8") for p in episodes if (p / ID_FILE).is_file())
        escaped = [str(p) for p in tmp.rglob("escape")]
        kept = all((run / name).is_file() for name in ("run.json", "summary.json"))
        ok = (
            first.returncode == again.returncode == 0
            and (run / "results.jsonl").read_bytes() == before
            and named == sorted(ODD_IDS)
            and len(episodes) == len(ODD_IDS)
            and kept
            and not escaped
        )
        good += ok
        if not ok:
            notes.append(
                f"trial {i}: exits {first.returncode}/{again.returncode}, {len(episodes)} folders, "
                f"run files kept {kept}, escaped {escaped}"
            )
    shown = ", ".join(repr(i) for i in ODD_IDS)
    return [
        Figure(
            "task ids ., .., a/b, café (NFC, NFD), cafè, case x, case__x, Case X, ../../escape in one run",
            f"{good}/{trials} runs with one folder per episode holding its own id, {len(ODD_IDS)} ids ({shown}); "
            f"resume rewrote nothing; {'; '.join(notes)}",
            good == trials,
            trials=trials,
            lost=lost,
            duplicated=duplicated,
            mixed=mixed,
        )
    ]


# --- 2. deadlines ---------------------------------------------------------------------------------------


def remote(url: str) -> list[str]:
    return [
        "bench=toy",
        "method=raw",
        "model=openai",
        f"model.base_url={url}/v1",
        "model.api_key_env=null",
        "runner.progress=false",
    ]


def doomed_goal(index: int, n_tasks: int) -> str:
    """The goal sentence of toy task `index`, which no other of the first `n_tasks` tasks shares."""
    from pos_bench.benchmarks.toy import ToyBenchmark

    bench = ToyBenchmark(n_tasks=n_tasks)
    env = bench.make_env(None)
    goals = [env.reset(task).goal for task in bench.tasks()]
    assert goals.count(goals[index]) == 1, goals
    return goals[index]


def drip_check(tmp: Path, timeouts: list[float]) -> list[Figure]:
    """A server that sends one byte a second: each call ends at `model.timeout` (+1 s at most), and an episode
    whose calls all drip ends at `runner.episode_timeout` as an error row while the others finish."""
    figures = []
    worst = 0.0
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
        worst = max(worst, took - timeout)
        ok = out.returncode == 1 and len(arrived) == 1 and took <= timeout + 1.0
        good += ok
        if not ok:
            notes.append(
                f"timeout {timeout}: exit {out.returncode}, {len(arrived)} requests, call {took:.1f} s"
            )
    figures.append(
        Figure(
            "a one-byte-per-second server: the call deadline (model.timeout)",
            f"{good}/{len(timeouts)} calls cut within model.timeout + 1 s (timeouts {timeouts} s; the worst "
            f"{worst:+.2f} s past it); the episode an error row, the run exit 1 {'; '.join(notes)}",
            good == len(timeouts),
            trials=len(timeouts),
            lost=lost,
        )
    )
    figures.append(episode_deadline(tmp))
    return figures


def episode_deadline(tmp: Path, limit: float = 6.0) -> Figure:
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


# --- 3. a full disk -------------------------------------------------------------------------------------


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
    lost = duplicated = mixed = good = 0
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
            resumed = cli(args, root)
            folder = the_folder(root)
            rows = raw_rows(folder)
            missing, twice = lost_and_duplicated(rows, expected)
            orphans = rows_without_files(folder, rows)
            lost, duplicated, mixed = lost + missing, duplicated + twice, mixed + orphans
            ok = stopped and resumed.returncode == 0 and len(rows) == n and not orphans
            good += ok
            if not ok:
                notes.append(
                    f"trial {i}: exit {proc.returncode}, {len(errors)} stderr lines "
                    f"({' | '.join(e[:100] for e in errors[-3:])}); resume exit {resumed.returncode}, "
                    f"{len(rows)} rows, {orphans} without result.json"
                )
            shutil.rmtree(root, ignore_errors=True)
    finally:
        subprocess.run(["umount", str(mount)], check=False)
    return [
        Figure(
            name,
            f"{good}/{trials} runs stopped with the one message and exit 3, then resumed to {n}/{n} rows, each "
            f"with its result.json {'; '.join(notes)}",
            good == trials,
            trials=trials,
            lost=lost,
            duplicated=duplicated,
            mixed=mixed,
        )
    ]


def wait_for_rows(proc: subprocess.Popen, root: Path, rows: int, limit: float = 300) -> None:
    deadline = time.time() + limit
    while time.time() < deadline and proc.poll() is None and row_count(root) < rows:
        time.sleep(0.05)


# --- 4. code in the run identity ------------------------------------------------------------------------

PROMPT_FILE = "pos_bench/benchmarks/toy.py"


def copy_repo(dest: Path) -> Path:
    ignore = shutil.ignore_patterns(".git", ".venv", "results", "__pycache__", ".*_cache", "*.pyc")
    shutil.copytree(REPO, dest, ignore=ignore)
    return dest


def code_change_check(tmp: Path) -> list[Figure]:
    """Edit the toy benchmark's prompt in a copy of the repository, then rerun the same command there."""
    copy = copy_repo(tmp / "repo_copy")
    root = tmp / "code_change"
    n = 4
    args = [*TOY, f"bench.n_tasks={n}", "bench.max_turns=2"]
    first = cli([*args, "bench.limit=2"], root, cwd=copy)
    source = copy / PROMPT_FILE
    text = source.read_text(encoding="utf-8")
    edited = text.replace('"You are an agent in a household.', '"You are a careful agent in a household.', 1)
    assert edited != text, f"the toy prompt moved; update {__file__}"
    source.write_text(edited, encoding="utf-8")
    folder = the_folder(root)
    before = (folder / "results.jsonl").read_bytes()
    folders_before = sorted((folder / "episodes").iterdir())
    refused = cli(args, root, cwd=copy)
    errors = [line for line in refused.stderr.splitlines() if line.strip()]
    untouched = (folder / "results.jsonl").read_bytes() == before
    no_episode = sorted((folder / "episodes").iterdir()) == folders_before
    stopped = (
        refused.returncode == 2
        and len(errors) == 1
        and PROMPT_FILE in errors[0]
        and "allow_code_change" in errors[0]
        and untouched
        and no_episode
    )
    override = cli([*args, "runner.allow_code_change=true"], root, cwd=copy)
    rows = raw_rows(folder)
    lost, duplicated = lost_and_duplicated(rows, [f"toy/{i:03d}" for i in range(n)])
    history = json.loads((folder / "run.json").read_text(encoding="utf-8")).get("code_history", [])
    placed = [sum(r["task_id"] in h.get("tasks", ()) for h in history) for r in rows]
    mixed = sum(count != 1 for count in placed)  # a row on no recorded code, or on two
    recorded = len(history) == 2 and history[1].get("changed") == [PROMPT_FILE]
    return [
        Figure(
            "a benchmark prompt edited between two runs of one command",
            f"without the override: exit {refused.returncode}, {len(errors)} line ({last_line(refused.stderr)!r}),"
            f" rows untouched {untouched}, no episode started {no_episode}; with it: exit {override.returncode}, "
            f"{len(rows)}/{n} rows, code_history {[(h.get('changed'), len(h.get('tasks', []))) for h in history]}",
            first.returncode == 0 and stopped and override.returncode == 0 and recorded,
            trials=2,
            lost=lost,
            duplicated=duplicated,
            mixed=mixed,
        )
    ]


# --- 5. credentials -------------------------------------------------------------------------------------


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
        "runner.progress=false",
    ]
    with StubOpenAI() as stub:
        host = stub.url.removeprefix("http://")
        url = f'model.base_url="http://user:{secret}@{host}/v1?api-key={secret}"'
        trials = [
            ("endpoint check on", [url, "model.api_key_env=null", "runner.check_endpoints=true"], 2),
            ("endpoint check off", [url, "model.api_key_env=null", "runner.check_endpoints=false"], 0),
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
            scrubbed = code != 0 or any("HTTP Request: POST http://[redacted]@" in log for log in logs)
            reached = code != 0 or len(stub.requests) > asked
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


# --- 6. typed-wrong rows --------------------------------------------------------------------------------

WRONG = [("success", "false"), ("score", True), ("steps", "3"), ("status", "ok")]
"""Hand edits of one row of results.jsonl: a field of the wrong type or value."""


def typed_wrong_check(tmp: Path, trials: int) -> list[Figure]:
    n = 3
    args = [*TOY, f"bench.n_tasks={n}", "bench.max_turns=2"]
    lost = good = 0
    notes = []
    for i, (key, value) in enumerate(WRONG[:trials]):
        root = tmp / f"typed{i}"
        cli(args, root)
        folder = the_folder(root)
        path = folder / "results.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
        lines[1] = json.dumps({**json.loads(lines[1]), key: value})
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        edited = path.read_bytes()
        out = cli(args, root)
        errors = [line for line in out.stderr.splitlines() if line.strip()]
        lost += n - len(raw_rows(folder))
        ok = (
            out.returncode == 2
            and len(errors) == 1
            and "line 2" in errors[0]
            and str(path) in errors[0]
            and "Traceback" not in out.stderr
            and path.read_bytes() == edited
        )
        good += ok
        notes.append(
            f"{key}={value!r}: exit {out.returncode}, {len(errors)} line" + ("" if ok else f" {errors}")
        )
    return [
        Figure(
            "typed-wrong hand edits of results.jsonl, then the same command",
            f"{good}/{trials} refused in one line naming the file and line (e.g. {last_line(out.stderr)!r}); "
            + "; ".join(notes),
            good == trials,
            trials=trials,
            lost=lost,
        )
    ]


# --- 7. SIGTERM -----------------------------------------------------------------------------------------


def sigterm_check(tmp: Path, trials: int, rng: random.Random) -> list[Figure]:
    n = 8
    args = [*TOY, f"bench.n_tasks={n}", "bench.max_turns=3", "model.delay=0.2", "runner.n_jobs=2"]
    expected = [f"toy/{i:03d}" for i in range(n)]
    lost = duplicated = mixed = good = 0
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
        resumed = cli(args, root)
        folder = the_folder(root)
        rows = raw_rows(folder)
        missing, twice = lost_and_duplicated(rows, expected)
        orphans = rows_without_files(folder, rows)
        lost, duplicated, mixed = lost + missing, duplicated + twice, mixed + orphans
        ok = clean and resumed.returncode == 0 and not orphans
        good += ok
        if not ok:
            notes.append(
                f"trial {i}: exit {proc.returncode}, left in TMPDIR {left}, workers alive {alive}, stderr "
                f"{last_line(err)!r}; resume exit {resumed.returncode}"
            )
    return [
        Figure(
            "SIGTERM to the main process mid-run, then the same command",
            f"{good}/{trials} runs: exit 143 with the resume line, no traceback, no leaked-semaphore warning, "
            f"nothing left in TMPDIR, no worker alive; resumed to {n}/{n} rows {'; '.join(notes)}",
            good == trials,
            trials=trials,
            lost=lost,
            duplicated=duplicated,
            mixed=mixed,
        )
    ]


def group_alive(pgid: int) -> bool:
    """Whether any process of the run's session is still alive (then it is killed)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    os.killpg(pgid, signal.SIGKILL)
    return True


# --- 8. bounded sizes -----------------------------------------------------------------------------------


def big_reply_check(tmp: Path, megabytes: int = 10) -> list[Figure]:
    """Every reply is `megabytes` MB of broken JSON: the repair requests and the transcript stay small."""
    from tests.models.stub_openai_server import StubOpenAI

    reply = '{"thought": "' + "x" * (megabytes * 1_000_000)
    root = tmp / "big_reply"
    with StubOpenAI(answer=lambda body: reply) as stub:
        out = cli([*remote(stub.url), "bench.n_tasks=1", "bench.max_turns=1"], root)
        sizes = [len(json.dumps(body)) for body in stub.requests]
    folder = the_folder(root)
    rows = raw_rows(folder)
    transcript = sum(p.stat().st_size for p in folder.glob("episodes/*/events.jsonl"))
    cache = sum(p.stat().st_size for p in root.rglob("responses.sqlite*"))
    lost = lost_and_duplicated(rows, ["toy/000"])[0]
    ok = (
        bool(sizes)
        and max(sizes) < 1_000_000
        and 0 < transcript < 2_000_000
        and not rows_without_files(folder, rows)
    )
    return [
        Figure(
            f"a {megabytes} MB reply (broken JSON, repaired twice)",
            f"{len(sizes)} requests, the largest {max(sizes or [0]) / 1e3:.0f} kB; transcript "
            f"{transcript / 1e6:.2f} MB; row {rows[0]['status'] if rows else 'none'}, exit {out.returncode}; "
            f"the response cache holds the replies whole ({cache / 1e6:.0f} MB)",
            ok,
            lost=lost,
        )
    ]


def big_transcript_check(tmp: Path, megabytes: float = 90) -> list[Figure]:
    """The HTML report of a run whose one transcript is `megabytes` MB, built by `python -m pos_bench.report` in a
    child whose peak RSS is measured."""
    from measure_report import grow_transcript

    root = tmp / "big_transcript"
    played = cli([*TOY, "bench.n_tasks=1", "bench.max_turns=2"], root)
    folder = the_folder(root)
    grown = grow_transcript(folder, "toy/000", megabytes)
    out = tmp / "big_transcript.html"
    log = tmp / "big_transcript.log"
    with log.open("w") as f:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pos_bench.report",
                str(folder),
                "-o",
                str(out),
                "--spec",
                str(tmp / "none"),
            ],
            cwd=REPO,
            stdout=f,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(child.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    peak = usage.ru_maxrss * 1024  # kB on Linux
    size = out.stat().st_size if out.exists() else 0
    ok = played.returncode == 0 and code == 0 and 0 < size < 10e6 and peak < 0.3e9
    return [
        Figure(
            f"the HTML report of a {megabytes:g} MB transcript",
            f"transcript {grown / 1e6:.0f} MB → page {size / 1e6:.2f} MB, built in {usage.ru_utime + usage.ru_stime:.1f}"
            f" CPU-s with a peak RSS of {peak / 1e9:.3f} GB (child), exit {code}"
            + ("" if code == 0 else f": {last_line(log.read_text())}"),
            ok,
        )
    ]


# --- 10. replay ----------------------------------------------------------------------------------------


def replay_check(tmp: Path) -> list[Figure]:
    """Record a run (OpenAI-compatible stub; the embedded SmolLM2 when installed), then replay it with
    `model=replay model.run=<its model folder>`: the same rows, every call answered from the cache."""
    import importlib.util

    from tests.models.stub_openai_server import StubOpenAI

    toy = ["bench=toy", "method=raw", "bench.n_tasks=2", "bench.max_turns=3", "runner.progress=false"]
    notes = []
    good = trials = lost = 0
    stub = StubOpenAI().start()
    recordings = {
        "openai": [*remote(stub.url)[2:], "runner.check_endpoints=false"],
        "smollm2": ["model=smollm2", "model.max_tokens=64"],
    }
    for name, model in recordings.items():
        if name == "smollm2" and importlib.util.find_spec("xllamacpp") is None:
            notes.append("embedded: skipped (xllamacpp not installed)")
            continue
        trials += 1
        root = tmp / f"replay_{name}"
        recorded = cli([*toy, *model], root)
        if name == "openai":
            stub.stop()  # a replay that reached the server would now fail
        model_folder = root / "toy" / "raw" / name
        replayed = cli([*toy, "model=replay", f"model.run={model_folder}"], root)
        before, after = the_folder(model_folder), the_folder(root / "toy" / "raw" / "replay")
        rows = {r["task_id"]: {k: v for k, v in r.items() if k != "seconds"} for r in raw_rows(before)}
        again = {r["task_id"]: {k: v for k, v in r.items() if k != "seconds"} for r in raw_rows(after)}
        calls = [
            event
            for path in after.glob("episodes/*/events.jsonl")
            for event in map(json.loads, path.read_text(encoding="utf-8").splitlines())
            if event.get("kind") in ("call", "call_error")
        ]
        live = sum(not event.get("cached") for event in calls)
        lost += len(set(rows) - set(again))
        ok = recorded.returncode == replayed.returncode == 0 and len(rows) == 2 and rows == again and calls
        ok = ok and not live
        good += bool(ok)
        notes.append(
            f"{name}: rows {len(rows)} → {len(again)}, identical {rows == again}, {len(calls)} calls replayed, "
            f"{live} made to a model; exits {recorded.returncode}/{replayed.returncode}"
            + ("" if ok else f" ({last_line(replayed.stderr or recorded.stderr)})")
        )
    stub.stop()
    return [
        Figure(
            "record, then replay with model=replay",
            "; ".join(notes),
            good == trials > 0,
            trials=trials,
            lost=lost,
        )
    ]
