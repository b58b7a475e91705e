"""`runner.backend=ray` on a local cluster on loopback (2 CPUs): a worker killed mid-run costs one episode,
resume plays each episode exactly once, record/replay matches the loky run bit for bit, and the endpoint
budget holds across worker processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

os.environ.setdefault(
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0"
)  # as pos_bench.runner.pool.ray does, before Ray loads
ray = pytest.importorskip(
    "ray", reason="the Ray backend needs the `ray` extra: uv sync --inexact --extra ray"
)

from pos_bench.runner import run
from pos_bench.types import Reply, Usage
from tests.conftest import REPO
from tests.models.stub_openai_server import PATIENT, StubOpenAI

KEY = "sk-ray-test-key-7a1c"
VICTIM = "victim.pid"


class VictimModel:
    """The first call of the whole run (across processes) writes its pid and hangs until killed; every
    other call looks around. Not cacheable: the test kills, it does not replay."""

    def __init__(self, folder: str):
        self.folder = Path(folder)
        self.name = "victim"

    def describe(self):
        return {"provider": "test", "model": "victim", "cacheable": False}

    def generate(self, prompt, *, role="agent"):
        try:
            fd = os.open(self.folder / VICTIM, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return Reply('{"thought": "", "action": "look"}', Usage(10, 5, 1))
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        time.sleep(300)
        raise AssertionError("the victim should have been killed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    """`ray start --head` on this machine with 2 CPUs, in the foreground of a child session we stop by its
    process group. Token authentication is off: the cluster lives for this test module only."""
    port = free_port()
    ray_cli = Path(sys.executable).parent / "ray"
    saved = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"  # read by the driver's ray.init in the runner too
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    head = subprocess.Popen(
        [
            str(ray_cli), "start", "--head", "--block", "--num-cpus=2", "--node-ip-address=127.0.0.1",
            f"--port={port}", "--include-dashboard=false", "--disable-usage-stats",
        ],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.5)
    else:
        head.kill()
        pytest.fail("the local Ray head did not start within 120 s")
    yield address
    os.killpg(head.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        head.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):  # every process of the group may be gone already
        os.killpg(head.pid, signal.SIGKILL)  # `ray start` leaves its GCS and monitor behind otherwise
    current = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    if current.is_file() and current.read_text().strip().endswith(f":{port}"):
        current.unlink()  # a later bare `ray.init()` on this machine would try our dead head
    if saved is None:
        os.environ.pop("RAY_AUTH_MODE", None)
    else:
        os.environ["RAY_AUTH_MODE"] = saved


def config(model: dict, runner: dict, cache: dict, n_tasks: int = 16) -> dict:
    return {
        "bench": {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": n_tasks, "max_turns": 3},
        "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
        "model": model,
        "roles": {},
        "runner": {"progress": False, **runner},
        "cache": cache,
        "retry": {"max_attempts": 3, "initial_wait": 0.01, "max_wait": 0.02, "jitter": 0.0},
    }


def play(cfg: dict, run_dir: Path) -> list[dict]:
    run(cfg, run_dir, {"bench": "toy", "method": "raw", "model": "test", "label": "full"})
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def kill_when_ready(folder: Path, killed: list[int]) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        text = (folder / VICTIM).read_text() if (folder / VICTIM).exists() else ""
        if text:
            os.kill(int(text), signal.SIGKILL)
            killed.append(int(text))
            return
        time.sleep(0.1)


def test_a_killed_worker_costs_one_episode_and_resume_plays_each_once(cluster, tmp_path):
    model = {"_target_": "tests.runner.pool.test_ray.VictimModel", "folder": str(tmp_path)}
    runner = {"backend": "ray", "n_jobs": 4, "ray_address": cluster}
    killed: list[int] = []
    killer = threading.Thread(target=kill_when_ready, args=(tmp_path, killed), daemon=True)
    killer.start()
    rows = play(config(model, runner, {"mode": "off"}), tmp_path / "run")
    killer.join(timeout=5)
    assert killed and killed[0] != os.getpid()
    errors = [r for r in rows if r["status"] == "error"]
    assert len(rows) == 16 and len({r["task_id"] for r in rows}) == 16
    assert len(errors) == 1 and "died" in errors[0]["error"]
    again = play(config(model, {**runner, "retry_errors": True}, {"mode": "off"}), tmp_path / "run")
    assert sorted(r["task_id"] for r in again) == sorted(r["task_id"] for r in rows)
    assert all(r["status"] == "done" for r in again)


def stub_model(stub: StubOpenAI, max_concurrency: int) -> dict:
    return {
        "_target_": "pos_bench.models.openai.OpenAIModel",
        "model": "stub-model",
        "base_url": f"{stub.url}/v1",
        "api_key_env": "RAY_STUB_KEY",
        "timeout": PATIENT,
        "max_concurrency": max_concurrency,
    }


def comparable(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k != "seconds"} for r in rows), key=lambda r: r["task_id"])


def cache_rows(path: Path) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(path) as db:
        return db.execute(
            "SELECT key, request, text, input_tokens, output_tokens FROM responses ORDER BY key"
        ).fetchall()


def test_record_and_replay_on_ray_match_loky_bit_for_bit(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_STUB_KEY", KEY)
    ray_runner = {"backend": "ray", "n_jobs": 4, "ray_address": cluster}
    with StubOpenAI() as stub:
        model = stub_model(stub, 4)
        loky_cache = {"mode": "record", "path": str(tmp_path / "loky.sqlite")}
        loky = play(config(model, {"backend": "loky", "n_jobs": 2}, loky_cache), tmp_path / "loky")
        ray_cache = {"mode": "record", "path": str(tmp_path / "ray.sqlite")}
        on_ray = play(config(model, ray_runner, ray_cache), tmp_path / "ray")
    assert all(r["status"] == "done" for r in loky)
    assert comparable(on_ray) == comparable(loky)
    assert cache_rows(tmp_path / "ray.sqlite") == cache_rows(tmp_path / "loky.sqlite") != []
    replay = {"_target_": "pos_bench.models.replay.Replayed", "run": str(tmp_path / "loky")}
    replay_cache = {"mode": "replay", "path": str(tmp_path / "loky.sqlite")}
    replayed = play(config(replay, ray_runner, replay_cache), tmp_path / "replay")
    assert comparable(replayed) == comparable(loky)


def test_four_workers_keep_one_endpoint_under_its_cap(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_STUB_KEY", KEY)
    runner = {"backend": "ray", "n_jobs": 32, "workers": 4, "ray_address": cluster}
    with StubOpenAI(delay=0.1) as stub:
        rows = play(config(stub_model(stub, 8), runner, {"mode": "off"}, n_tasks=32), tmp_path / "run")
    assert all(r["status"] == "done" for r in rows) and len(rows) == 32
    assert stub.max_in_flight == 8
