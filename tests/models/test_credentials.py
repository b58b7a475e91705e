"""Credentials in a model URL, end to end through the command line: a run against the loopback stub with
`user:secret@` and `?api-key=secret` in `model.base_url` writes the secret to no file and no output line,
the HTTP client's request log included; a key pasted into `model.api_key_env` is refused unrepeated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.models.stub_openai_server import StubOpenAI

SECRET = "secret"


def cli(root: Path, *overrides: str) -> subprocess.CompletedProcess:
    common = ["bench=toy", "bench.n_tasks=1", "bench.max_turns=2", "method=raw", "model=openai"]
    options = [
        "model.api_key_env=null",
        f"results_root={root}",
        "runner.progress=false",
        "runner.backend=threading",
    ]
    return subprocess.run(
        [sys.executable, "-m", "pos_bench", *common, *options, *overrides],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("check_endpoints", ["true", "false"])
def test_a_credential_in_the_url_reaches_no_file_and_no_output(tmp_path, check_endpoints):
    """With the endpoint check on or off, the run reaches the server (the stub has no models route, which the
    check lets pass); its requests are logged with the credentials cut out. The first chat request is refused
    (429): the HTTP client's line for an answered request is left out of the logs, a refused one's is kept."""
    refused: list[str] = []

    def refuse_once(body):
        if body.get("messages") and not refused:
            refused.append("429")
            return "429"
        return None

    with StubOpenAI() as stub:
        stub.faults.rule = refuse_once
        host = stub.url.removeprefix("http://")
        url = f'model.base_url="http://user:{SECRET}@{host}/v1?api-key={SECRET}"'
        done = cli(tmp_path, url, f"runner.check_endpoints={check_endpoints}")
        assert stub.requests or check_endpoints == "true"  # the run reached the server
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    leaks = [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    assert leaks == []
    lines = [line for line in (done.stdout + done.stderr).splitlines() if SECRET in line]
    assert lines == []
    (log,) = tmp_path.rglob("__main__.log")
    assert "HTTP Request: POST http://[redacted]@" in log.read_text()  # the refused request's line, scrubbed
    if check_endpoints == "true":  # the check went through the same transport, its request logged scrubbed
        assert "HTTP Request: GET http://[redacted]@" in log.read_text()
    assert any(p.name == "run.json" for p in files) and any(p.name == "index.json" for p in files)


def test_a_key_pasted_into_api_key_env_is_refused_without_repeating_it(tmp_path):
    pasted = "sk-proj-Pasted0123456789abcdef"
    done = cli(tmp_path, f"model.api_key_env={pasted}")
    assert done.returncode == 2 and "model.api_key_env: must name an environment variable" in done.stderr
    assert pasted not in done.stdout + done.stderr
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and pasted.encode() in p.read_bytes()]
