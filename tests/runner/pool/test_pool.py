"""Backends on one host: the endpoint budget is the run's, shared by every worker (threads or loky
processes), and a backend name outside the known ones is refused with the list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pos_bench.runner import run
from pos_bench.runner.pool import Placement
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
