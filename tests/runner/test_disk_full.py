"""A write that fails for lack of space stops the run with one message (the file, the free space, the resume)."""

import errno
import json

import pytest

from pos_bench.runner import DiskFull, run
from pos_bench.runner.results import ResultsFile
from tests.runner.test_run import config

LABELS = {"bench": "toy", "method": "expert", "model": "scripted"}


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_a_full_disk_stops_the_run_with_one_message_and_the_resume_completes(tmp_path, monkeypatch, code):
    real = ResultsFile.append
    appended = []

    def fills_after_one(self, result):
        if appended:
            raise OSError(code, "simulated", str(self.path))
        appended.append(result.task_id)
        real(self, result)

    monkeypatch.setattr(ResultsFile, "append", fills_after_one)
    with pytest.raises(DiskFull) as stopped:
        run(config(n_tasks=3), tmp_path, LABELS)
    message = str(stopped.value)
    assert "\n" not in message
    assert str(tmp_path / "results.jsonl") in message and "MB free" in message and "resume" in message
    monkeypatch.undo()
    # the real append wraps the failure the same way
    monkeypatch.setattr("os.fsync", lambda fd: (_ for _ in ()).throw(OSError(code, "full")))
    with pytest.raises(DiskFull):
        run(config(n_tasks=3), tmp_path, LABELS)
    monkeypatch.undo()
    summary = run(config(n_tasks=3), tmp_path, LABELS)  # space is back
    rows = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert summary.episodes == 3 and len({r["task_id"] for r in rows}) == len(rows) == 3


def test_other_os_errors_are_not_reported_as_a_full_disk(tmp_path, monkeypatch):
    def broken(self, result):
        raise OSError(errno.EIO, "io")

    monkeypatch.setattr(ResultsFile, "append", broken)
    with pytest.raises(OSError) as raised:
        run(config(n_tasks=1), tmp_path, LABELS)
    assert not isinstance(raised.value, DiskFull)
