"""Reliability checks of what a stranger's run folder and a mistyped command can do (issue 48): crafted overrides
that would run code or read secrets, damaged run files read by every reader, and bad configuration values. Each
check generates its cases from kinds (not a fixed list), so a new case of a known kind is tried on every run."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from reliability_harness import REPO, SHARED, TOY, Figure, cli, last_line, run_folders

CLINDIAG = ["bench=clindiag", "method=raw", "model=scripted", "runner.progress=false", "cache.mode=off"]


def code_bearing_overrides(sentinel: Path, rng: random.Random) -> list[str]:
    """One override of each kind a run folder must never be allowed to carry, with random names and places."""
    copy = f"{{_target_:shutil.copyfile,src:{REPO / 'README.md'},dst:{sentinel}}}"
    role = rng.choice(["benchmark_judge", "belief", "agent", "x" + str(rng.randrange(1000))])
    special = rng.choice(["_target_", "_partial_", "_args_", "_recursive_", "_convert_"])
    variable = rng.choice(["HOME", "OPENAI_API_KEY", "PATH", "AWS_SECRET_ACCESS_KEY"])
    return [
        f"++roles.{role}={copy}",
        f"+roles.{role}={{inner:[{copy}]}}",
        f"++bench.{special}=shutil.copyfile",
        f"++method.{special}=os.system",
        f"model.base_url=${{oc.env:{variable}}}",
        f"bench.limit='${{oc.decode:{rng.randrange(9)}}}'",
        f"++roles.{role}.api_key_env=${{oc.env:{variable}}}",
        f"+hydra.callbacks.c={{_target_:shutil.copyfile,src:{REPO / 'README.md'},dst:{sentinel}}}",
        f"hydra.run.dir={sentinel.parent}",
        f"bench=../../{rng.choice(['tmp', 'etc', 'root'])}/evil",
        f"+model@roles.{role}=../../x",
        "method=raw,pos",
        f"model.timeout={rng.choice(['nan', 'inf', '-inf'])}",
    ]


def rescore(run_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pos_bench.runner.rescore", str(run_dir)],
        cwd=REPO,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CLINDIAG_DATA": str(SHARED / "benchmarks" / "clindiag")},
    )


def hostile_folder_check(tmp: Path, rng: random.Random) -> list[Figure]:
    """Every code-bearing override, stored in run.json and in index.json, is refused by re-scoring with one
    line naming the file and the override, exit 2; the file the override would write is never written."""
    sentinel = tmp / "hostile" / "written-by-the-folder"
    cases = code_bearing_overrides(sentinel, rng)
    held, notes = 0, []
    for where in ("run.json", "index.json"):
        for n, override in enumerate(cases):
            run_dir = tmp / "hostile" / where / str(n) / "clindiag" / "raw" / "scripted" / "r1"
            run_dir.mkdir(parents=True)
            row = {"task_id": "case", "status": "done", "success": False, "score": 0.0, "turns": 1}
            (run_dir / "results.jsonl").write_text(json.dumps(row) + "\n")
            stored = ["bench=clindiag", "model=scripted", override]
            meta = {"labels": {}, **({"overrides": stored} if where == "run.json" else {})}
            (run_dir / "run.json").write_text(json.dumps(meta))
            (run_dir.parent / "index.json").write_text(json.dumps([{"folder": "r1", "overrides": stored}]))
            out = rescore(run_dir)
            lines = out.stderr.strip().splitlines()
            ok = (
                out.returncode == 2
                and len(lines) == 1
                and where in lines[0]
                and override in lines[0]
                and not sentinel.exists()
                and not list(run_dir.glob("results.*.jsonl"))
            )
            held += ok
            if not ok:
                notes.append(f"{where}: {override!r} → exit {out.returncode}, {last_line(out.stderr)[:80]!r}")
    total = 2 * len(cases)
    return [
        Figure(
            "hostile run folder",
            f"{held}/{total} code-bearing overrides refused with one line, exit 2, nothing written"
            + (f"; failed: {notes[:3]}" if notes else ""),
            held == total and not sentinel.exists(),
            trials=total,
        )
    ]


def _damages(run_dir: Path, rng: random.Random) -> dict[str, tuple[Path, bytes]]:
    """File → damaged bytes, one per kind of damage a reader must name instead of tracing back."""
    (events_file, *_) = sorted(run_dir.glob("episodes/*/events.jsonl"))
    results = (run_dir / "results.jsonl").read_bytes()
    cut = rng.randrange(1, max(2, results.find(b"\n")))
    return {
        "results.jsonl not utf-8": (run_dir / "results.jsonl", results[:cut] + b"\xff\xfe" + results[cut:]),
        "events.jsonl not utf-8": (events_file, events_file.read_bytes() + b'{"kind": "\xc3("}\n'),
        "run.json a list": (run_dir / "run.json", b"[1, 2, 3]"),
        "run.json a string": (run_dir / "run.json", b'"run"'),
        "run.json not json": (run_dir / "run.json", b"{" + bytes(rng.randrange(33, 127) for _ in range(20))),
        "run.json nested too deep": (run_dir / "run.json", b"[" * 100_000 + b"]" * 100_000),
    }


def damaged_files_check(tmp: Path, rng: random.Random) -> list[Figure]:
    """The report, the tables and the export each meet every damage: one line naming the file, exit 2."""
    root = tmp / "damaged"
    cli([*TOY, "bench.n_tasks=2", "bench.max_turns=2"], root)
    (played,) = run_folders(root)
    readers = {
        "report": lambda d, out: [
            "-m",
            "pos_bench.report",
            str(d),
            "-o",
            str(out / "r.html"),
            "--no-figures",
        ],
        "tables": lambda d, out: ["scripts/tables.py", str(d)],
        "export": lambda d, out: ["-m", "pos_bench.export", str(d), str(out / "x"), "--format", "parquet"],
    }
    held, total, notes = 0, 0, []
    for damage in _damages(played, rng):
        for reader, argv in readers.items():
            if reader == "tables" and damage.startswith("events"):
                continue  # the tables read result rows, never transcripts
            copy = root / "copies" / f"{damage}-{reader}".replace(" ", "_")
            shutil.copytree(played, copy)
            path, data = _damages(copy, random.Random(total))[damage]
            path.write_bytes(data)
            out = subprocess.run(
                [sys.executable, *argv(copy, copy)],
                cwd=REPO,
                check=False,
                capture_output=True,
                text=True,
                timeout=300,
            )
            errors = [x for x in out.stderr.splitlines() if x.startswith("error:")]
            ok = (
                out.returncode == 2
                and "Traceback" not in out.stderr
                and len(errors) == 1
                and str(path) in errors[0]
            )
            total += 1
            held += ok
            if not ok:
                notes.append(f"{reader}/{damage}: exit {out.returncode}, {last_line(out.stderr)[:80]!r}")
    return [
        Figure(
            "damaged run files",
            f"{held}/{total} reader × damage cases gave one line naming the file, exit 2"
            + (f"; failed: {notes[:3]}" if notes else ""),
            held == total,
            trials=total,
        )
    ]


def rescore_damaged_check(tmp: Path, rng: random.Random) -> list[Figure]:
    """A finished ClinDiag run whose transcripts are damaged in each way is re-scored as error rows naming the
    file (exit 1), never as results, and its original rows are kept."""
    if not (SHARED / "benchmarks" / "clindiag").is_dir():
        return [
            Figure("rescore of damaged transcripts", f"skipped: no ClinDiag data in {SHARED}", True, trials=0)
        ]
    answer = json.dumps(
        {"thought": "x", "action": {"name": "submit_diagnosis", "arguments": {"final_diagnosis": "flu"}}}
    )
    root = tmp / "rescore"
    out = cli([*CLINDIAG, "bench.limit=2", f"model.default='{answer}'"], root)
    (played,) = run_folders(root)
    damages = {
        "emptied": lambda p: p.write_bytes(b""),
        "deleted": lambda p: p.unlink(),
        "cut short": lambda p: p.write_bytes(p.read_bytes()[: rng.randrange(1, 200)]),
        "not utf-8": lambda p: p.write_bytes(b"\xff" + p.read_bytes()),
        "garbage line": lambda p: p.write_bytes(p.read_bytes().replace(b"\n", b"\n}{\n", 1)),
    }
    held, notes = 0, []
    for name, damage in damages.items():
        copy = root / "copies" / name.replace(" ", "_") / played.name
        shutil.copytree(played, copy)
        rows_before = (copy / "results.jsonl").read_bytes()
        (target, *_) = sorted(copy.glob("episodes/*/events.jsonl"))
        damage(target)
        out = rescore(copy)
        new = [json.loads(x) for p in copy.glob("results.*.jsonl") for x in p.read_text().splitlines()]
        errors = [r for r in new if r.get("status") == "error" and str(target) in (r.get("error") or "")]
        ok = (
            out.returncode == 1
            and len(errors) == 1
            and (copy / "results.jsonl").read_bytes() == rows_before
            and "Traceback" not in out.stderr
        )
        held += ok
        if not ok:
            notes.append(f"{name}: exit {out.returncode}, {last_line(out.stderr)[:80]!r}")
    return [
        Figure(
            "rescore of damaged transcripts",
            f"{held}/{len(damages)} damages became one error row naming the file, exit 1, original rows kept"
            + (f"; failed: {notes[:3]}" if notes else ""),
            held == len(damages),
            trials=len(damages),
        )
    ]


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    return rng.choice([word[:i] + word[i + 1 :], word[:i] + "x" + word[i:], word + "s"])


def bad_config_check(tmp: Path, rng: random.Random) -> list[Figure]:
    """Misspelt top-level keys, non-finite numbers and empty paths: exit 2 before anything is written."""
    tops = ["runner", "cache", "retry", "loop", "prices", "roles"]
    cases = [f"{_typo(rng.choice(tops), rng)}.x=1" for _ in range(3)]
    numeric = ["model.delay", "runner.episode_timeout", "bench.max_turns", "retry.max_attempts"]
    cases += [f"{rng.choice(numeric)}={v}" for v in ("nan", "inf", "-inf")]
    cases += ["results_root=", "cache.path=''"]
    held, notes = 0, []
    for n, case in enumerate(cases):
        root = tmp / "config" / str(n)
        out = _without_root([*TOY, case]) if case.startswith("results_root") else cli([*TOY, case], root)
        ok = out.returncode == 2 and "Traceback" not in out.stderr and not list(root.rglob("*.jsonl"))
        held += ok
        if not ok:
            notes.append(f"{case}: exit {out.returncode}, {last_line(out.stderr)[:80]!r}")
    return [
        Figure(
            "bad configuration values",
            f"{held}/{len(cases)} refused with exit 2 before any row"
            + (f"; failed: {notes[:3]}" if notes else ""),
            held == len(cases),
            trials=len(cases),
        )
    ]


def _without_root(args: list[str]) -> subprocess.CompletedProcess:
    """`python -m pos_bench` with the arguments as given (the case sets results_root itself)."""
    return subprocess.run(
        [sys.executable, "-m", "pos_bench", *args],
        cwd=REPO,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
