"""Export round trip: the parquet files load back with `datasets.load_dataset("parquet", …)` unchanged."""

from __future__ import annotations

import json

import pytest

datasets = pytest.importorskip("datasets", reason="the `export` extra (datasets) is not installed")

from pos_bench.analysis.runs import read_jsonl
from pos_bench.export.parquet import export
from tests.analysis.fixture_runs import fixture_runs  # noqa: F401  (session fixture)


def test_a_run_round_trips_through_parquet(fixture_runs, tmp_path, monkeypatch):  # noqa: F811
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
    events = read_jsonl(folder / "episodes" / "toy__000" / "events.jsonl")
    step0 = next(e for e in events if e["kind"] == "step")
    assert (
        first["observation"] == step0["observation"]["text"]
        and json.loads(first["action"]) == step0["action"]
    )
    assert json.loads(first["memory"])["status"] == "validated" and json.loads(first["tokens"])["agent"] > 0


def test_an_interrupted_run_exports_its_running_episodes_too(fixture_runs, tmp_path):  # noqa: F811
    paths = export(fixture_runs["toy_partial"], tmp_path / "out")
    episodes = datasets.Dataset.from_parquet(str(paths["episodes"]))
    assert sorted(set(episodes["status"])) == ["done", "running"] and "in progress" in episodes[0]["flags"]
    assert episodes.features["error"].dtype == "string"
