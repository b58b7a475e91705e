"""The reliability campaign of issues 11 and 30 on the toy benchmark, the scripted model and loopback stub
servers: prints one table (check, trials, rows lost, duplicated, mixed, secrets leaked) and exits 1 if
anything was lost, duplicated, mixed or leaked, or a guarantee failed.

    uv run python scripts/reliability_report.py            # the full campaign
    uv run python scripts/reliability_report.py --quick    # fewer kills, repeats and trials (CI)

Every run goes through `python -m pos_bench` in a subprocess, as a user would run it. The checks of issue 30
are in `reliability_faults.py` (deadlines, a full disk, credentials, SIGTERM) and `reliability_inputs.py`
(task ids, code changes, typed-wrong rows, sizes, replay); what the checks share is in
`reliability_harness.py`. The full-disk check mounts a tmpfs (root only; skipped with the reason otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import signal
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import reliability_faults as faults
import reliability_folders as folders
import reliability_inputs as inputs
import reliability_network as network
from reliability_harness import (
    REPO,
    SHARED,
    TOY,
    Figure,
    Server,
    cli,
    last_line,
    lost_and_duplicated,
    only_rows,
    raw_rows,
    run_folders,
    start,
)

sys.path.insert(0, str(REPO))  # the checks reuse the tests' servers and benchmarks


# --- kill -9 of the main process ------------------------------------------------------------------------


def kill_campaign(tmp: Path, points: int, episodes: int, rng: random.Random) -> list[Figure]:
    args = [*TOY, f"bench.n_tasks={episodes}", "bench.max_turns=3", "model.delay=0.03", "runner.n_jobs=2"]
    started = time.perf_counter()
    cli(args, tmp / "reference")
    duration = time.perf_counter() - started
    reference = {r["task_id"]: r for r in only_rows(tmp / "reference")}
    root = tmp / "killed"
    scratch = tmp / "killed-tmp"  # the budget folder each killed driver leaves behind
    scratch.mkdir()
    killed = 0
    for _ in range(points):
        proc = start(args, root, env={"TMPDIR": str(scratch)})
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
    ok = final.returncode == 0 and len(reference) == episodes and not different
    return [
        Figure(
            f"kill -9 of the main process at {points} random points ({episodes} episodes, n_jobs=2)",
            f"{killed} kills landed; after resume {len(set(ids))}/{episodes} episodes, rows differing from "
            f"an uninterrupted run {different}",
            ok,
            trials=points,
            lost=lost,
            duplicated=duplicated,
        )
    ]


# --- SIGKILL of one worker ------------------------------------------------------------------------------


def playing(worker: int) -> Path | None:
    """The transcript a worker holds open, that is the episode it is playing, or None between episodes."""
    try:
        fds = os.listdir(f"/proc/{worker}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            target = Path(os.readlink(f"/proc/{worker}/fd/{fd}"))
        except OSError:
            continue
        if target.name == "events.jsonl":
            return target
    return None


def busy_worker(pid: int) -> int | None:
    """A worker in the middle of an episode, the one with the fewest events so far (the farthest from its
    end), so the kill lands inside the episode rather than between two. Any process of the run that holds a
    transcript open is a worker playing."""
    from pos_bench.fullsize.processes import descendants

    try:
        processes = descendants(pid)
    except (LookupError, OSError):  # the run ended meanwhile
        return None
    busy = {}
    for worker in processes:
        transcript = playing(worker)
        if transcript is not None:
            try:
                busy[worker] = transcript.read_bytes().count(b"\n")
            except OSError:
                continue
    return min(busy, key=busy.__getitem__) if busy else None


def worker_kill_campaign(tmp: Path, runs: int) -> list[Figure]:
    args = [*TOY, "bench.n_tasks=6", "bench.max_turns=4", "model.delay=0.1", "runner.n_jobs=2"]
    good = lost = duplicated = 0
    notes = []
    for i in range(runs):
        root = tmp / f"worker{i}"
        proc = start(args, root)
        deadline = time.time() + 120
        victim = None
        while time.time() < deadline and proc.poll() is None:
            if sum(len(raw_rows(f)) for f in run_folders(root)) >= 1:
                victim = busy_worker(proc.pid)
                if victim is not None:
                    break
            time.sleep(0.02)
        if victim is not None:
            os.kill(victim, signal.SIGKILL)
        proc.wait(timeout=300)
        rows = only_rows(root)
        missing, twice = lost_and_duplicated(rows, [f"toy/{k:03d}" for k in range(6)])
        lost, duplicated = lost + missing, duplicated + twice
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
            trials=runs,
            lost=lost,
            duplicated=duplicated,
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
            f"second copy refused {refused}/{repeats} times",
            True,
            trials=repeats,
            lost=missing,
            duplicated=duplicated,
        )
    ]


# --- changed settings never mix ------------------------------------------------------------------------


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
            ok = a.returncode == 0 and (refused or (len(new) == 1 and len(after[new[0]]) == 2))
            how = "refused" if refused else f"new folder {new[0].name if new else '(none)'}"
            figures.append(Figure(f"change {key} and rerun", how, ok, trials=1, mixed=mixed))
    finally:
        server.stop()
    if not clindiag_data.is_dir():
        figures.append(
            Figure("change bench.data_dir and rerun", f"skipped: no data at {clindiag_data}", True, trials=0)
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
                trials=seen["n"],
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
    # every episode refused by the server: nothing was played, which must not exit 0
    ok = out.returncode == 1 and marked > 0
    return [
        Figure(
            "a loopback server echoing the key in its 401 body",
            f"key in {len(leaks)} of {len(files)} written files (echo redacted in {marked}), printed: "
            f"{printed}, "
            f"exit {out.returncode} (every episode refused)",
            ok,
            leaked=len(leaks) + printed,
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
            f"exit {out.returncode}; message: {last_line(out.stderr)[:110]!r}",
            ok and only_rows(root) == before,
            lost=max(0, len(before) - len(only_rows(root))),
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
            f"exit {out.returncode}; message: {last_line(out.stderr)[:110]!r}",
            ok,
            lost=max(0, len(before) - len(only_rows(root))),
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
    ok = out.returncode == 0 and "cut off" in out.stderr and kept
    lost, duplicated = lost_and_duplicated(after, [f"toy/{i:03d}" for i in range(4)])
    figures.append(
        Figure(
            "torn results.jsonl",
            f"exit {out.returncode}, warned: {'cut off' in out.stderr}, rows after resume {len(after)}/4, "
            f"whole rows kept: {kept}",
            ok,
            lost=lost,
            duplicated=duplicated,
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
        figures.append(
            Figure("truncated data tarball", f"skipped: no staged tarball in {staged}", True, trials=0)
        )
    return figures


COLUMNS = ("trials", "rows lost", "duplicated", "mixed", "secrets leaked")


def table(figures: list[Figure]) -> str:
    """The campaign's table, one row per check, then what each check measured."""
    width = max(len(f.check) for f in figures)
    head = f"{'check'.ljust(width)}  " + "  ".join(COLUMNS) + "  ok"
    lines = [head, "-" * len(head)]
    for f in figures:
        counts = (f.trials, f.lost, f.duplicated, f.mixed, f.leaked)
        cells = "  ".join(str(v).rjust(len(c)) for v, c in zip(counts, COLUMNS, strict=True))
        lines.append(f"{f.check.ljust(width)}  {cells}  {'yes' if f.passed else 'NO'}")
    lines.append("\nmeasured:")
    lines += [f"- {f.check}: {f.measured}" for f in figures]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer kills, repeats and trials (CI)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", help="comma-separated campaign names to run (default: all)")
    options = parser.parse_args()
    from pos_bench.models.transport import reached_directly

    # every server of the campaigns listens on loopback, where a proxy the shell names could not reach it
    reached_directly("127.0.0.1")
    rng = random.Random(options.seed)
    quick = options.quick
    points, episodes, workers, twins = (5, 12, 3, 3) if quick else (20, 32, 10, 10)
    started = time.perf_counter()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="pos_bench_reliability_") as folder:
        tmp = Path(folder)
        campaigns: list[tuple[str, Callable[[], list[Figure]]]] = [
            ("fuzz", lambda: fuzz_campaign(1000)),
            ("kill-9", lambda: kill_campaign(tmp, points, episodes, rng)),
            ("worker-kill", lambda: worker_kill_campaign(tmp, workers)),
            ("twins", lambda: twins_campaign(tmp, twins)),
            ("settings", lambda: settings_campaign(tmp)),
            ("echoed-key", lambda: echo_campaign(tmp)),
            ("bad-files", lambda: bad_files_campaign(tmp)),
            ("ids", lambda: inputs.ids_check(tmp, 1 if quick else 2)),
            ("drip", lambda: faults.drip_check(tmp, [2.0] if quick else [2.0, 3.0, 5.0])),
            ("disk-full", lambda: faults.disk_full_check(tmp, 1 if quick else 3, rng)),
            ("code-change", lambda: inputs.code_change_check(tmp)),
            ("credentials", lambda: faults.credentials_check(tmp)),
            ("typed-rows", lambda: inputs.typed_wrong_check(tmp, 2 if quick else 4)),
            ("sigterm", lambda: faults.sigterm_check(tmp, 2 if quick else 5, rng)),
            ("big-reply", lambda: inputs.big_reply_check(tmp)),
            ("big-transcript", lambda: inputs.big_transcript_check(tmp)),
            ("replay", lambda: inputs.replay_check(tmp)),
            ("hostile-folder", lambda: folders.hostile_folder_check(tmp, rng)),
            ("damaged-files", lambda: folders.damaged_files_check(tmp, rng)),
            ("rescore-damaged", lambda: folders.rescore_damaged_check(tmp, rng)),
            ("bad-config", lambda: folders.bad_config_check(tmp, rng)),
            ("redirects", lambda: network.redirect_check(tmp, rng)),
            ("endless-reply", lambda: network.endless_reply_check(tmp, rng)),
            ("bad-usage", lambda: network.usage_check(tmp, rng)),
            ("echoed-name", lambda: network.echoed_name_check(tmp, rng)),
        ]
        chosen = set(options.only.split(",")) if options.only else {name for name, _ in campaigns}
        unknown = chosen - {name for name, _ in campaigns}
        if unknown:
            parser.error(
                f"no campaign {sorted(unknown)}; the campaigns: {', '.join(n for n, _ in campaigns)}"
            )
        for name, campaign in campaigns:
            if name in chosen:
                print(f"[{time.perf_counter() - started:6.1f}s] {name}…", file=sys.stderr, flush=True)
                figures.extend(campaign())
    print("\n" + table(figures))
    failed = [f for f in figures if not f.passed]
    print(
        f"\n{len(figures) - len(failed)}/{len(figures)} checks passed in {time.perf_counter() - started:.0f} "
        "s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
