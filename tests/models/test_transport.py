"""The bounds every remote call holds, against real loopback servers through the real SDKs and the pre-flight
check: no redirect to another origin (the second server never hears a request), a reply body capped in bytes
(memory stays flat against a reply that never ends), usage counts that are counts, text made safe to print."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc

import pytest

from pos_bench.models.endpoint import ReplyRefused
from pos_bench.models.openai import OpenAIModel
from pos_bench.models.retry import TransientError
from pos_bench.redact import ScrubbedStream, escaped
from pos_bench.runner.endpoints import Endpoint, problem
from pos_bench.types import Message, Prompt
from tests.conftest import REPO
from tests.models.stub_hostile_server import Server, servers

KEY = "sk-test-transport-0123456789"
CAP = 1 << 20
PROMPT = Prompt(messages=(Message("user", "hello"),))


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("TRANSPORT_TEST_KEY", KEY)


def model(server: Server, **options) -> OpenAIModel:
    return OpenAIModel(
        "m", base_url=f"{server.url}/v1", api_key_env="TRANSPORT_TEST_KEY", timeout=20, **options
    )


def endpoint(server: Server) -> Endpoint:
    return Endpoint("agent", f"{server.url}/v1", "m", "openai", "TRANSPORT_TEST_KEY", CAP)


def test_a_chat_call_redirected_to_another_origin_sends_it_nothing():
    with servers("redirect") as (first, other):
        with pytest.raises(ReplyRefused, match="redirected to another origin"):
            model(first).generate(PROMPT)
        assert first.seen and not other.seen  # neither the key nor the prompt reached the other server


def test_the_preflight_check_redirected_to_another_origin_sends_it_nothing():
    with servers("redirect") as (first, other):
        found = problem(endpoint(first))
        assert found and "redirected to another origin" in found and "nothing" in found
        assert not other.seen


def test_a_redirect_within_the_origin_is_followed_with_the_key():
    with servers("same-origin") as (first, other):
        assert model(first).generate(PROMPT).text == "hi"
        assert problem(endpoint(first)) is None
        assert [path for _, path, _ in first.seen if path.startswith("/moved")]
        assert all(h.get("authorization") == f"Bearer {KEY}" for _, _, h in first.seen)
        assert not other.seen


def test_a_chat_reply_that_never_ends_is_cut_at_the_byte_bound_with_flat_memory():
    with servers("endless") as (first, _):
        tracemalloc.start()
        try:
            with pytest.raises(ReplyRefused, match="passed 1,048,576 bytes"):
                model(first, max_reply_bytes=CAP).generate(PROMPT)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 8 * CAP


def test_a_kept_connection_is_reused_and_one_cut_short_is_not():
    server = Server(keep_alive=True)
    try:
        chat = model(server, max_reply_bytes=CAP)
        assert [chat.generate(PROMPT).text for _ in range(3)] == ["hi"] * 3
        server.mode = "large"
        with pytest.raises(ReplyRefused, match="max_reply_bytes"):
            chat.generate(PROMPT)
        server.mode = "ok"  # the rest of the large reply is not read as this one's
        assert chat.generate(PROMPT).text == "hi"
    finally:
        server.close()
    first, second, third, cut, after = server.peers
    assert first == second == third  # one connection for the three whole replies
    assert after != cut  # a new one after the reply cut short


def test_a_kept_connection_the_server_closed_while_idle_is_replaced_and_nothing_is_sent_twice():
    server = Server("drop", keep_alive=True)
    try:
        chat = model(server)
        for _ in range(3):
            assert chat.generate(PROMPT).text == "hi"
            time.sleep(0.2)  # the server's close reaches the client while the connection is idle
    finally:
        server.close()
    assert len(server.seen) == 3
    assert len(set(server.peers)) == 3


def test_a_models_listing_that_never_ends_is_one_line_within_the_bound():
    with servers("endless") as (first, _):
        tracemalloc.start()
        try:
            found = problem(endpoint(first))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert found and "max_reply_bytes" in found and "\n" not in found
    assert peak < 8 * CAP


@pytest.mark.parametrize("mode", ["deep", "shape"])
def test_a_models_listing_of_the_wrong_shape_is_one_clear_line(mode):
    with servers(mode) as (first, _):
        found = problem(endpoint(first))
    assert found and "models listing" in found and "\n" not in found


def test_served_text_is_escaped_before_it_is_printed():
    with servers("escape") as (first, _):
        found = problem(endpoint(first))
    assert found and "\x1b" not in found and "\\x1b[2J" in found
    assert escaped("a\x1b[2Jb\r\x07\u009b\tc\nd") == "a\\x1b[2Jb\\r\\x07\\x9b\tc\nd"


@pytest.mark.parametrize("value", ["-5", "Infinity", "NaN", "1e400", "1e300", "1.5", '"many"'])
def test_usage_that_is_not_a_token_count_is_a_malformed_response(value):
    with (
        servers(f"usage:{value}") as (first, _),
        pytest.raises(TransientError, match="malformed usage: usage.prompt_tokens"),
    ):
        model(first).generate(PROMPT)


def test_a_whole_float_token_count_is_read_as_a_count():
    with servers("usage:7.0") as (first, _):
        assert model(first).generate(PROMPT).usage.input_tokens == 7


def test_max_reply_bytes_is_validated():
    with pytest.raises(ValueError, match="max_reply_bytes"):
        OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key_env=None, max_reply_bytes=0)


def test_a_scrubbed_stream_keeps_url_credentials_out(capsys):
    stream = ScrubbedStream(sys.stdout)
    stream.write("Error executing job with overrides: ['model.base_url=http://u:sekret-password-1@h/v1']\n")
    assert "sekret-password-1" not in capsys.readouterr().out


def test_a_crashed_job_prints_no_password_of_its_overrides(tmp_path):
    password = "sekret-password-0123456789"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pos_bench",
            "bench=toy",
            "method=expert",
            "model=openai",
            f"model.base_url=http://user:{password}@127.0.0.1:9/v1",
            f"results_root={tmp_path}",
            "report=/proc/no/such/folder/r.html",  # the report cannot be written: an unexpected crash
            "bench.limit=1",
            "runner.check_endpoints=false",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OPENAI_API_KEY": KEY},
        check=False,
    )
    assert out.returncode != 0 and "Error executing job" in out.stderr
    assert password not in out.stderr + out.stdout
    assert all(password not in p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())


def test_a_key_the_server_echoes_as_its_model_name_is_in_no_file_and_no_line(tmp_path):
    with servers("echo") as (first, _):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "pos_bench",
                "bench=toy",
                "bench.n_tasks=1",
                "bench.max_turns=1",
                "method=raw",
                "model=openai",
                "model.model=m",
                f"model.base_url={first.url}/v1",
                "model.api_key_env=TRANSPORT_TEST_KEY",
                "runner.progress=false",
                "runner.check_endpoints=false",
                f"results_root={tmp_path}",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "TRANSPORT_TEST_KEY": KEY},
            check=False,
        )
        assert any(path.endswith("/chat/completions") for _, path, _ in first.seen), out.stderr
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "responses.sqlite" for p in files)
    assert [p for p in files if KEY.encode() in p.read_bytes()] == []
    assert KEY not in out.stdout + out.stderr
