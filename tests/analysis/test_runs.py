"""Run folders → runs index: labels, fingerprint, episodes done / left / running, errors and their cause."""

import json

import pandas as pd

from pos_bench.analysis.runs import find_runs, load_run, load_runs, runs_index


def test_index_lists_every_run_with_status_and_commonest_error(fixture_runs):
    root = fixture_runs["toy_pos"].parents[2]
    assert set(find_runs([root])) == set(fixture_runs.values())
    index = runs_index(load_runs([root])).set_index("run")
    raw = index.loc["toy/raw/scripted"]
    assert (raw["done"], raw["left"], raw["errors"]) == (12, 0, 1)
    assert raw["commonest error"] == "RuntimeError ×1" and "errors" in raw["flags"]
    killed = index.loc["toy/pos/scripted_killed"]
    assert (killed["done"], killed["running"], killed["interrupted"], killed["left"]) == (6, 0, 6, 6)
    assert (
        "interrupted" in killed["flags"] and "in progress" not in killed["flags"]
    )  # no process holds its lock
    assert index.loc["toy/pos/scripted", "method tokens"] > index.loc["toy/raw/scripted", "method tokens"]
    assert index.loc["toy/pos/scripted", "fingerprint"] == killed["fingerprint"]  # same config, copied
    assert index.loc["toy/pos/scripted", "fingerprint"] != index.loc["toy/raw/scripted", "fingerprint"]


def test_recorded_task_count_and_fingerprint_are_used_when_run_json_has_them(fixture_runs, tmp_path):
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(fixture_runs["toy_partial"], folder)
    meta = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**meta, "tasks": 20}))
    run = load_run(folder)
    row = runs_index([run]).iloc[0]
    assert (row["left"], row["fingerprint"]) == (14, meta["identity"]["fingerprint"][:8])
    assert "interrupted" in run.flags
    (folder / "run.json").write_text(json.dumps({"tasks": 20, "fingerprint": "abc123"}))  # an older runner's
    assert runs_index([load_run(folder)]).iloc[0]["fingerprint"] == "abc123"


def test_the_run_folders_own_fingerprint_is_shown_as_in_its_name(tmp_path):
    """A run played by the runner: the index shows the fingerprint its folder name ends with."""
    from tests.analysis.fixture_runs import toy_run

    folder = toy_run(tmp_path, "raw", 2, skill=0.5)
    fingerprint = json.loads((folder / "run.json").read_text())["identity"]["fingerprint"]
    assert len(fingerprint) == 64
    assert runs_index(load_runs([folder])).iloc[0]["fingerprint"] == fingerprint[:8]


def test_an_unfinished_run_is_in_progress_while_its_writer_holds_the_lock(fixture_runs, tmp_path):
    import shutil

    from pos_bench.runner.results import writer_lock

    folder = tmp_path / "run"
    shutil.copytree(fixture_runs["toy_partial"], folder)
    with writer_lock(folder):
        live = load_run(folder)
    assert "in progress" in live.flags and runs_index([live]).iloc[0]["running"] == 6
    assert set(live.episodes["status"]) == {"done", "running"}
    stopped = load_run(folder)
    assert "interrupted" in stopped.flags
    assert stopped.episodes["status"].value_counts().to_dict() == {"done": 6, "interrupted": 6}
    assert len(stopped.finished) == 6  # an interrupted episode is no result: neither success nor failure
    assert (runs_index([stopped]).iloc[0][["done", "running", "interrupted"]] == [6, 0, 6]).all()


def test_a_torn_last_line_and_an_empty_folder_do_not_break_loading(fixture_runs, tmp_path):
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(fixture_runs["toy_raw"], folder)
    with (folder / "results.jsonl").open("a") as f:
        f.write('{"task_id": "toy/0')
    assert len(load_run(folder).finished) == 12
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "run.json").write_text("{}")
    run = load_run(empty)
    assert run.episodes.empty and "interrupted" in run.flags


def test_a_clindiag_run_judged_by_another_model_than_the_papers_is_flagged_with_that_judge():

    from pos_bench.analysis.runs import run_flags

    def flags(judge):
        meta = {"labels": {"bench": "clindiag", "judge": judge}, "config": {"bench": {"judge": "llm"}}}
        return run_flags(meta, pd.DataFrame({"status": ["done"]}), 1, True)

    assert flags("gpt-4.1-mini") == ("judge=gpt-4.1-mini",)
    assert flags("qwen3.7-plus") == ()
    assert flags("rules") == ("rules",)


def test_the_writer_lock_is_read_through_a_read_only_handle_too(fixture_runs, tmp_path):
    # a copy on read-only media cannot open `.lock` for writing; the probe then asks through a read-only handle
    import os
    import shutil

    from pos_bench.analysis.runs import held_read_only
    from pos_bench.runner.results import writer_lock

    folder = tmp_path / "run"
    shutil.copytree(fixture_runs["toy_partial"], folder)
    (folder / ".lock").touch()
    os.chmod(folder / ".lock", 0o444)
    assert not held_read_only(folder / ".lock")
    os.chmod(folder / ".lock", 0o644)
    with writer_lock(folder):
        assert held_read_only(folder / ".lock")
    assert not held_read_only(folder / ".lock")
