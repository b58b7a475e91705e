"""Endpoints checked before the first episode, against real loopback servers: a closed port, a server serving
another model id, and the override that turns the check off."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO
from tests.models.stub_anthropic_server import StubAnthropic
from tests.models.stub_openai_server import StubOpenAI


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket closes


def cli(tmp_path, *args):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pos_bench", "bench=toy", "bench.limit=1", "method=raw", "model.api_key_env=null",
         "cache.mode=off", "runner.progress=false", f"results_root={tmp_path}", *args],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    return done, time.monotonic() - started


def test_a_closed_port_stops_the_run_with_exit_2_naming_the_url(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done, seconds = cli(tmp_path, "model=vllm", f"model.base_url={url}")
    assert done.returncode == 2, done.stderr
    assert f"role agent: {url} (model Qwen/Qwen3-8B): unreachable" in done.stderr
    assert seconds < 15, seconds  # the wall clock of the whole command, Python start-up included
    assert not list(tmp_path.rglob("results.jsonl"))


@pytest.mark.parametrize(("stub", "model"), [(StubOpenAI, "openai"), (StubAnthropic, "anthropic")])
def test_a_server_serving_another_model_stops_the_run_naming_both_ids(tmp_path, stub, model):
    with stub(model_id="served-model") as server:
        done, _ = cli(
            tmp_path, f"model={model}", f"model.base_url={server.url}/v1", "model.model=wanted-model"
        )
        assert done.returncode == 2, done.stderr
        assert "does not serve wanted-model; it serves served-model" in done.stderr
        assert server.requests == []  # no completion was asked for


def test_the_check_can_be_turned_off(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done, _ = cli(tmp_path, "model=vllm", f"model.base_url={url}", "runner.check_endpoints=false",
                  "retry.max_attempts=1")  # fmt: skip
    assert done.returncode == 1 and "every episode errored" in done.stderr  # it ran, and its episodes failed


def test_user_and_password_in_the_url_are_not_shown(tmp_path):
    url = f"http://user:secret@127.0.0.1:{closed_port()}/v1?token=secret"
    done, _ = cli(tmp_path, "model=vllm", f"model.base_url='{url}'")
    assert done.returncode == 2 and "secret" not in done.stderr and "127.0.0.1" in done.stderr
