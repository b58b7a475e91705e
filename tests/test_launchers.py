"""Sweeps through Hydra's submitit launcher: each job runs in its own process, and the sweep table is
still printed by the process that launched them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytest.importorskip(
    "hydra_plugins.hydra_submitit_launcher",
    reason="the submitit launcher needs the `submitit` extra: uv sync --inexact --extra submitit",
)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pos_bench", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )


def test_a_submitit_local_sweep_runs_both_jobs_and_prints_one_table(tmp_path):
    out = cli(
        "-m",
        "hydra/launcher=submitit_local",
        "method=raw,expert",
        "bench=toy",
        "bench.limit=2",
        "model=scripted",
        f"results_root={tmp_path}",
        "runner.progress=false",
    )
    rows = out.stdout.split("== sweep ==")[1].strip().splitlines()
    assert any("raw" in row for row in rows) and any("expert" in row for row in rows)
    for method in ("raw", "expert"):
        [found] = (tmp_path / f"toy/{method}/scripted").rglob("summary.json")
        summary = json.loads(found.read_text())
        assert summary["episodes"] == 2 and summary["labels"]["method"] == method
    assert list(tmp_path.glob(".sweep-*")) == []  # the jobs' list is removed once printed
    assert list((tmp_path / ".submitit").iterdir())  # the jobs really went through submitit


def test_the_slurm_launcher_config_composes():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["hydra/launcher=slurm"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher") and launcher.cpus_per_task == 4
