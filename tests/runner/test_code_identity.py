"""The episode code is recorded in run.json; a resume on other code is refused unless overridden."""

import json
import shutil

import pytest

import pos_bench.runner as runner_pkg
from pos_bench.runner import run
from pos_bench.runner.code import CodeChanged, CodeRecord, code_record, combined
from tests.runner.test_resume_old_folder import COMMAND, FIXTURE
from tests.runner.test_run import config

LABELS = {"bench": "toy", "method": "expert", "model": "scripted"}
EDITED = "pos_bench/benchmarks/toy.py"


def edited_code(monkeypatch):
    """Make the runner see the toy benchmark's source as edited."""
    real = code_record()
    files = {**real.files, EDITED: "0" * 64}
    monkeypatch.setattr(runner_pkg, "code_record", lambda: CodeRecord(files, None, combined(files)))


def test_the_record_covers_episode_code_and_leaves_out_runner_and_report_files():
    files = code_record().files
    assert EDITED in files and "pos_bench/loop.py" in files and "baselines/raw.py" in files
    assert any(p.startswith("pos_bench/pos/") for p in files)
    assert not any(
        p.startswith(("pos_bench/runner/", "pos_bench/report/", "pos_bench/analysis/")) for p in files
    )


def test_run_json_records_the_code(tmp_path):
    run(config(n_tasks=3, limit=2), tmp_path, LABELS)
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["code"]["files"] == dict(code_record().files)
    assert len(meta["code_history"][0]["tasks"]) == 2


def test_a_resume_on_edited_code_is_refused_naming_the_file(tmp_path, monkeypatch):
    run(config(n_tasks=3, limit=2), tmp_path, LABELS)
    rows = (tmp_path / "results.jsonl").read_text()
    edited_code(monkeypatch)
    with pytest.raises(CodeChanged) as refused:
        run(config(n_tasks=3), tmp_path, LABELS)
    message = str(refused.value)
    assert "\n" not in message and EDITED in message and "allow_code_change" in message
    assert (tmp_path / "results.jsonl").read_text() == rows  # nothing was played


def test_the_override_continues_and_records_which_episodes_ran_on_which_code(tmp_path, monkeypatch):
    run(config(n_tasks=3, limit=2), tmp_path, LABELS)
    first = json.loads((tmp_path / "run.json").read_text())["code_history"]
    edited_code(monkeypatch)
    summary = run(config(n_tasks=3, allow_code_change=True), tmp_path, LABELS)
    assert summary.episodes == 3
    history = json.loads((tmp_path / "run.json").read_text())["code_history"]
    assert len(history) == 2 and history[0] == first[0]
    assert history[1]["changed"] == [EDITED] and len(history[1]["tasks"]) == 1
    assert set(history[0]["tasks"]).isdisjoint(history[1]["tasks"])


def test_a_folder_without_a_code_record_resumes_with_a_note(tmp_path, capsys):
    folder = tmp_path / "run"
    shutil.copytree(FIXTURE, folder)
    assert "code" not in json.loads((folder / "run.json").read_text())
    summary = run(COMMAND, folder, {"bench": "toy", "method": "raw", "model": "scripted"})
    assert summary.episodes == 2
    assert "records no code" in capsys.readouterr().out
    assert json.loads((folder / "run.json").read_text())["code"]["files"]
