"""The command line: compose, run, print; resume; sweeps; clear errors on bad choices."""

import json
import subprocess
import sys

from tests.conftest import REPO


def cli(*args, check=True):
    return subprocess.run(
        [sys.executable, "-m", "pos_bench", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=check,
        timeout=300,
    )


def test_run_prints_the_summary_table(tmp_path):
    out = cli(
        "bench=toy", "method=expert", "model=scripted", f"results_root={tmp_path}", "runner.progress=false"
    )
    assert "100.0%" in out.stdout and "expert" in out.stdout
    summary = json.loads((tmp_path / "toy/expert/scripted/summary.json").read_text())
    assert summary["labels"] == {"bench": "toy", "method": "expert", "model": "scripted", "label": "full"}
    assert summary["episodes"] == 8


def test_overrides_compose(tmp_path):
    cli(
        "bench=toy",
        "bench.limit=2",
        "bench.start=3",
        "method=expert",
        "model=scripted",
        "runner.n_jobs=2",
        f"results_root={tmp_path}",
        "runner.progress=false",
    )
    ids = [
        json.loads(x)["task_id"]
        for x in (tmp_path / "toy/expert/scripted/results.jsonl").read_text().splitlines()
    ]
    assert sorted(ids) == ["toy/003", "toy/004"]


def test_a_bad_choice_names_the_valid_ones(tmp_path):
    out = cli("bench=toy", "method=no_such_method", f"results_root={tmp_path}", check=False)
    assert out.returncode != 0
    assert "no_such_method" in out.stderr and "raw" in out.stderr and "expert" in out.stderr


def test_a_bad_value_fails_with_its_reason(tmp_path):
    out = cli(
        "bench=toy",
        "method=expert",
        "model=scripted",
        "runner.n_jobs=0",
        f"results_root={tmp_path}",
        check=False,
    )
    assert out.returncode != 0 and "runner.n_jobs" in out.stderr


def test_multirun_prints_one_row_per_method(tmp_path):
    out = cli(
        "-m",
        "bench=toy",
        "bench.limit=2",
        "method=raw,expert",
        "model=scripted",
        f"results_root={tmp_path}",
        "runner.progress=false",
    )
    sweep = out.stdout.split("== sweep ==")[1]
    assert "raw" in sweep and "expert" in sweep
    assert (tmp_path / "toy/raw/scripted/summary.json").exists()
    assert (tmp_path / "toy/expert/scripted/summary.json").exists()
