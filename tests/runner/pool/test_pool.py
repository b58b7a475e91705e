"""Backends on one host: the endpoint budget is the run's, shared by every worker (threads or loky
processes), kept in a folder that a killed run's successor removes, and a backend name outside the known ones is
refused with the list."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from pathlib import Path

import pytest

from pos_bench.runner import run
from pos_bench.runner.pool import BUDGET_PREFIX, OWNER, Placement, budget_folder
from tests.models.stub_openai_server import PATIENT, StubOpenAI

KEY = "sk-backends-test-key-41"


def config(url: str, backend: str, n_jobs: int) -> dict:
    return {
        "bench": {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": 8, "max_turns": 6},
        "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
        "model": {
            "_target_": "pos_bench.models.openai.OpenAIModel",
            "model": "stub-model",
            "base_url": f"{url}/v1",
            "api_key_env": "BACKENDS_STUB_KEY",
            "timeout": PATIENT,
            "max_concurrency": 2,
        },
        "roles": {},
        "runner": {"backend": backend, "n_jobs": n_jobs, "progress": False},
        "cache": {"mode": "off"},
        "retry": {},
    }


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_every_worker_of_a_run_shares_one_endpoint_cap(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("BACKENDS_STUB_KEY", KEY)
    with StubOpenAI(delay=0.5) as stub:  # episodes of 3 s: the workers, started one by one, overlap
        run(config(stub.url, backend, 4), tmp_path, {"bench": "toy", "method": "raw", "model": "stub"})
    rows = [json.loads(line) for line in Path(tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(r["status"] == "done" for r in rows)
    assert stub.max_in_flight == 2  # 4 workers, one cap of 2 between them


def test_an_unknown_backend_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="loky, threading, ray.*'dask'"):
        Placement(backend="dask")


def test_a_run_removes_the_budget_folders_of_killed_runs_and_no_other(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    hour_ago = os.stat(tmp_path).st_mtime - 3600

    def left_behind(name: str, *, locked_at: float | None = hour_ago) -> Path:
        folder = tmp_path / f"{BUDGET_PREFIX}{name}"
        (folder / "0123abcd").mkdir(parents=True)
        if locked_at is not None:
            (folder / OWNER).touch()
            os.utime(folder / OWNER, (locked_at, locked_at))
        return folder

    killed = left_behind("killed")
    young = left_behind("just_made", locked_at=None)
    (young / OWNER).touch()  # a run between making its folder and locking it
    unknown = left_behind("no_owner_lock", locked_at=None)
    playing = left_behind("still_playing")
    with open(playing / OWNER) as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as the run that made it holds it
        with budget_folder() as mine:
            assert mine.is_dir() and mine.name.startswith(BUDGET_PREFIX)
            assert not killed.exists()
            assert young.exists() and unknown.exists() and playing.exists()
            with open(mine / OWNER) as other, pytest.raises(OSError):  # the next run leaves this one alone
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert not mine.exists()
