"""A run with several trials per task exports every trial: one inspect sample per (task, trial), as inspect's
epochs, and a `trial` column in both parquet files."""

from pathlib import Path

import pytest

from pos_bench.export.inspect_log import write_inspect_log
from pos_bench.runner import run
from tests.analysis.fixture_runs import METHODS, RUNNER

TASKS, TRIALS = 4, 3


@pytest.fixture(scope="module")
def three_trials(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("runs") / "toy" / "raw" / "scripted"
    bench = {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": TASKS, "max_turns": 6}
    model = {"_target_": "tests.analysis.fixture_runs.household_model", "skill": 0.5, "salt": "raw"}
    cfg = {
        "bench": bench,
        "method": METHODS["raw"],
        "model": model,
        "runner": {**RUNNER, "trials": TRIALS},
        "roles": {},
        "cache": {"mode": "off"},
    }
    run(cfg, folder, {"bench": "toy", "method": "raw", "model": "scripted", "label": "test"})
    return folder


def test_every_trial_is_an_inspect_sample_of_its_own(three_trials, tmp_path):
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(write_inspect_log(three_trials, tmp_path / "run.eval")))
    keys = {(s.id, s.epoch) for s in log.samples}
    assert len(log.samples) == len(keys) == TASKS * TRIALS
    assert {epoch for _, epoch in keys} == set(range(1, TRIALS + 1))
    assert log.eval.config.epochs == TRIALS and log.eval.dataset.samples == TASKS
    assert len({s.uuid for s in log.samples}) == TASKS * TRIALS


def test_the_parquet_files_have_a_trial_column_with_every_trial(three_trials, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from pos_bench.export.parquet import export

    paths = export(three_trials, tmp_path / "pq")
    episodes = pq.read_table(paths["episodes"]).to_pandas()
    assert len(episodes) == TASKS * TRIALS
    assert sorted(episodes.groupby("task_id")["trial"].apply(sorted).tolist()) == [[0, 1, 2]] * TASKS
    steps = pq.read_table(paths["steps"]).to_pandas()
    assert set(steps["trial"]) == {0, 1, 2}
