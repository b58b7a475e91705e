"""The input checks of issue 30 for `scripts/reliability_report.py`: hostile and colliding task ids, a prompt
edited between two runs, typed-wrong hand edits of results.jsonl, a 10 MB reply, the report of a 90 MB
transcript, and a recorded run replayed. Each is a real end-to-end trial (`python -m pos_bench` in a
subprocess, loopback servers, a copy of the repository) returning `Figure`s that count rows lost,
duplicated, mixed and secrets leaked."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from reliability_harness import (
    REPO,
    TOY,
    Figure,
    cli,
    last_line,
    lost_and_duplicated,
    raw_rows,
    remote,
    rows_without_files,
    run_folders,
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
            f"{good}/{trials} runs with one folder per episode holding its own id, {len(ODD_IDS)} ids "
            f"({shown}); the resume rewrote nothing {'; '.join(notes)}",
            good == trials,
            trials=trials,
            lost=lost,
            duplicated=duplicated,
            mixed=mixed,
        )
    ]


# --- 2. code in the run identity ------------------------------------------------------------------------

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
            f"without the override: exit {refused.returncode}, {len(errors)} line "
            f"({last_line(refused.stderr)!r}),"
            f" rows untouched {untouched}, no episode started {no_episode}; with it: exit "
            f"{override.returncode}, "
            f"{len(rows)}/{n} rows, code_history "
            f"{[(h.get('changed'), len(h.get('tasks', []))) for h in history]}",
            first.returncode == 0 and stopped and override.returncode == 0 and recorded,
            trials=2,
            lost=lost,
            duplicated=duplicated,
            mixed=mixed,
        )
    ]


# --- 3. typed-wrong rows --------------------------------------------------------------------------------

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


# --- 4. bounded sizes -----------------------------------------------------------------------------------


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
    """The HTML report of a run whose one transcript is `megabytes` MB, built by `python -m pos_bench.report`
    in a child process whose peak RSS is measured."""
    from measure_report import grow_transcript

    root = tmp / "big_transcript"
    played = cli([*TOY, "bench.n_tasks=1", "bench.max_turns=2"], root)
    folder = the_folder(root)
    grown = grow_transcript(folder, "toy/000", megabytes)
    out = tmp / "big_transcript.html"
    log = tmp / "big_transcript.log"
    # Measured by a small wrapper process: on Linux a child's peak RSS starts from its parent's size at the fork,
    # so a child forked by this (large, long-running) campaign would report the campaign's own memory.
    wrapper = (
        "import json, resource, subprocess, sys; code = subprocess.call(sys.argv[2:]); "
        "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "open(sys.argv[1], 'w').write(json.dumps([code, u.ru_maxrss, u.ru_utime + u.ru_stime]))"
    )
    measured = tmp / "big_transcript.usage.json"
    with log.open("w") as f:
        subprocess.run(
            [
                sys.executable,
                "-c",
                wrapper,
                str(measured),
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
            check=False,
        )
    code, peak_kb, cpu = json.loads(measured.read_text()) if measured.exists() else (-1, 0, 0.0)
    peak = peak_kb * 1024  # kB on Linux
    size = out.stat().st_size if out.exists() else 0
    ok = played.returncode == 0 and code == 0 and 0 < size < 10e6 and peak < 0.3e9
    return [
        Figure(
            f"the HTML report of a {megabytes:g} MB transcript",
            f"transcript {grown / 1e6:.0f} MB → page {size / 1e6:.2f} MB, built in "
            f"{cpu:.1f} CPU-s with a peak RSS of {peak / 1e9:.3f} GB (child), "
            f"exit {code}" + ("" if code == 0 else f": {last_line(log.read_text())}"),
            ok,
        )
    ]


# --- 5. replay ----------------------------------------------------------------------------------------


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
            f"{name}: rows {len(rows)} → {len(again)}, identical {rows == again}, {len(calls)} calls "
            f"replayed, {live} made to a model; exits {recorded.returncode}/{replayed.returncode}"
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
