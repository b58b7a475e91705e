"""A run folder written before the `runner` package existed (commit ef74750) resumes into the same folder."""

import json
import shutil

from pos_bench.models.roles import build_model
from pos_bench.runner import run
from pos_bench.runner.identity import run_identity
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "run_before_22"
COMMAND = {
    "bench": {
        "_target_": "pos_bench.benchmarks.toy.ToyBenchmark",
        "n_tasks": 2,
        "limit": None,
        "max_turns": 2,
    },
    "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
    "model": {
        "_target_": "pos_bench.models.scripted.ScriptedModel",
        "default": {"_target_": "pos_bench.models.scripted.schema_reply", "_partial_": True},
    },
    "runner": {"n_jobs": 1, "backend": "threading", "progress": False},
    "roles": {},
}
"""The command that wrote the fixture (its `run.json` keeps the same config)."""


def test_the_recorded_fingerprint_is_computed_again():
    recorded = json.loads((FIXTURE / "run.json").read_text())
    assert recorded["config"] == COMMAND
    identity = run_identity(COMMAND, build_model(COMMAND).describe())
    assert identity.fingerprint == recorded["identity"]["fingerprint"]


def test_the_old_folder_resumes_without_replaying_an_episode(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(FIXTURE, folder)
    stamps = {p: p.stat().st_mtime_ns for p in folder.glob("episodes/*/*")}
    rows_before = (folder / "results.jsonl").read_text()
    summary = run(COMMAND, folder, {"bench": "toy", "method": "raw", "model": "scripted"})
    assert summary.episodes == 2
    assert (folder / "results.jsonl").read_text() == rows_before
    assert {p: p.stat().st_mtime_ns for p in folder.glob("episodes/*/*")} == stamps
