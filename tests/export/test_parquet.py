"""Export round trip: the parquet files load back with `datasets.load_dataset("parquet", …)` unchanged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets", reason="the `export` extra (datasets) is not installed")

from pos_bench.analysis.runs import read_jsonl
from pos_bench.export.parquet import export
from pos_bench.transcript import episode_dir
from tests.conftest import REPO


def test_a_run_round_trips_through_parquet(fixture_runs, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    folder = fixture_runs["toy_pos"]
    paths = export(folder, tmp_path / "out")
    loaded = {
        name: datasets.load_dataset(
            "parquet", data_files=str(path), split="train", cache_dir=str(tmp_path / "c")
        )
        for name, path in paths.items()
    }
    rows = read_jsonl(folder / "results.jsonl")
    episodes = loaded["episodes"]
    assert sorted(episodes["task_id"]) == sorted(r["task_id"] for r in rows)
    by_task = {r["task_id"]: r for r in rows}
    for e in episodes:
        row = by_task[e["task_id"]]
        assert (e["success"], e["steps"], e["status"]) == (row["success"], row["steps"], row["status"])
        assert json.loads(e["usage"]) == row["usage"] and "stand-in" in e["flags"]
    assert json.loads(episodes[0]["report"])["belief_health_history"]
    steps = loaded["steps"]
    assert len(steps) == sum(r["steps"] for r in rows)
    first = steps.filter(lambda s: s["task_id"] == "toy/000" and s["turn"] == 0)[0]
    events = read_jsonl(episode_dir(folder, "toy/000") / "events.jsonl")
    step0 = next(e for e in events if e["kind"] == "step")
    assert (
        first["observation"] == step0["observation"]["text"]
        and json.loads(first["action"]) == step0["action"]
    )
    assert json.loads(first["memory"])["status"] == "validated" and json.loads(first["tokens"])["agent"] > 0


def test_an_interrupted_run_exports_its_running_episodes_too(fixture_runs, tmp_path):
    paths = export(fixture_runs["toy_partial"], tmp_path / "out")
    episodes = datasets.Dataset.from_parquet(str(paths["episodes"]))
    assert (
        sorted(set(episodes["status"])) == ["done", "interrupted"] and "interrupted" in episodes[0]["flags"]
    )  # no live writer: the run was stopped
    assert episodes.features["error"].dtype == "string"


def export_command(*args: object) -> list[Path]:
    done = subprocess.run(
        [sys.executable, "-m", "pos_bench.export", *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**os.environ, "HF_DATASETS_OFFLINE": "1"},
    )
    return [Path(line) for line in done.stdout.splitlines()]


def test_a_model_folder_exports_each_run_folder_below_it(fixture_runs, tmp_path):
    model_folder = tmp_path / "results" / "toy" / "pos" / "scripted"
    shutil.copytree(fixture_runs["toy_pos"], model_folder / "n_tasks=12-3fa29c1d")
    shutil.copytree(fixture_runs["toy_ablation"], model_folder / "trapping=off-0a1b2c3d")
    written = export_command(model_folder, tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in written) == [
        "toy__pos__scripted__n_tasks=12-3fa29c1d/episodes.parquet",
        "toy__pos__scripted__n_tasks=12-3fa29c1d/steps.parquet",
        "toy__pos_no_trapping__scripted__trapping=off-0a1b2c3d/episodes.parquet",
        "toy__pos_no_trapping__scripted__trapping=off-0a1b2c3d/steps.parquet",
    ]
    episodes = datasets.Dataset.from_parquet(str(written[0]))
    assert len(episodes) == len(read_jsonl(fixture_runs["toy_pos"] / "results.jsonl"))


def test_a_results_root_with_three_runs_exports_three_inspect_logs_in_one_command(fixture_runs, tmp_path):
    pytest.importorskip("inspect_ai", reason="the `inspect` extra (inspect-ai) is not installed")
    from inspect_ai.log import read_eval_log

    root = tmp_path / "results"
    for name in ("toy_pos", "toy_raw", "toy_partial"):
        shutil.copytree(
            fixture_runs[name], root / fixture_runs[name].relative_to(fixture_runs[name].parents[2])
        )
    written = export_command(root, tmp_path / "logs", "--format", "inspect")
    assert sorted(p.name for p in written) == [
        "toy__pos__scripted.eval",
        "toy__pos__scripted_killed.eval",
        "toy__raw__scripted.eval",
    ]
    for path in written:
        log = read_eval_log(str(path))
        folder = root / "toy" / log.eval.solver / log.eval.metadata["labels"]["model"]
        assert len(log.samples) == len(list((folder / "episodes").iterdir()))
    again = export_command(root / "toy" / "raw" / "scripted", tmp_path / "one", "--format", "inspect")
    assert [p.name for p in again] == ["toy__raw__scripted.eval"], "a run keeps its name whatever is exported"


def test_a_folder_without_runs_is_one_clear_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pos_bench.export", str(tmp_path), str(tmp_path / "out")],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode != 0 and "no run folder" in done.stderr and "Traceback" not in done.stderr


def test_without_the_inspect_extra_the_export_says_which_extra_to_install(fixture_runs, tmp_path):
    hide = (
        "import sys, runpy; sys.modules['inspect_ai'] = None; "
        "runpy.run_module('pos_bench.export', run_name='__main__')"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            hide,
            str(fixture_runs["toy_pos"]),
            str(tmp_path / "out"),
            "--format",
            "inspect",
        ],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "needs the `inspect` extra" in done.stderr and "uv sync --inexact --extra inspect" in done.stderr
    assert not (tmp_path / "out").exists()
