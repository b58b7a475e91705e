"""A JSON POST on the SDK client's own HTTP client, or on its connection with the reply read whole: the request the
SDK would send, the errors it would raise, the log line its client would write. Through a real forward proxy on
loopback, a call keeps the client's path when the client has the proxy mounted; the environment's proxies are not
mounted on a client built on its own transport."""

from __future__ import annotations

import http.client
import json
import logging
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx2
import openai
import pytest

from pos_bench.models.direct import post_json, post_whole, route
from pos_bench.models.endpoint import tls_for
from pos_bench.models.openai import OpenAIModel
from pos_bench.models.transport import DeadlineTransport
from tests.models.stub_openai_server import PATIENT, Listener, StubOpenAI
from tests.models.test_wire import canned

KEY = "sk-direct-test-0123456789"
BODY = {
    "model": "stub-model",
    "messages": [{"role": "user", "content": "Pick one, café ☕ 𝄞:\n- look\n- open fridge 1"}],
    "max_tokens": 16,
    "temperature": 0.0,
}
PER_REQUEST = {"x-stainless-retry-count", "x-stainless-read-timeout", "x-stainless-raw-response"}
"""Headers the SDK's `post` adds for its own retry loop and raw-read mode, about the request rather than the
client."""


@pytest.fixture
def stub():
    with StubOpenAI() as server:
        yield server


def model_at(url: str, monkeypatch) -> OpenAIModel:
    monkeypatch.setenv("DIRECT_TEST_KEY", KEY)
    return OpenAIModel("stub-model", base_url=f"{url}/v1", api_key_env="DIRECT_TEST_KEY", timeout=PATIENT)


def client_of(stub: StubOpenAI, monkeypatch) -> openai.OpenAI:
    return model_at(stub.url, monkeypatch).client[1]


def answer(response: httpx2.Response) -> str:
    """The reply's text, its body read to the end (which keeps the connection)."""
    try:
        return json.loads(response.read())["choices"][0]["message"]["content"]
    finally:
        response.close()


def test_the_request_is_the_one_the_sdk_would_send(stub, monkeypatch):
    client = client_of(stub, monkeypatch)
    by_sdk = client.post(
        "/chat/completions",
        cast_to=httpx2.Response,
        body=BODY,
        options={"headers": {"X-Stainless-Raw-Response": "stream"}},
    )
    assert answer(by_sdk) == answer(post_json(openai, client, "chat/completions", BODY, PATIENT))
    whole = json.loads(post_whole(openai, client, "chat/completions", BODY, PATIENT))
    assert whole["choices"][0]["message"]["content"] == answer(by_sdk)
    by_sdk, direct, on_the_wire = stub.headers
    assert (
        stub.requests[0] == stub.requests[1] == stub.requests[2] == BODY
    )  # the non-ASCII text arrives as it was
    assert {k: v for k, v in by_sdk.items() if k not in PER_REQUEST} == direct == on_the_wire
    assert direct["authorization"] == f"Bearer {KEY}"
    assert direct["user-agent"].startswith("OpenAI/Python")
    assert direct["content-type"] == "application/json"
    assert len(stub.connections) == 1  # one kept connection for all three


@pytest.mark.parametrize(
    ("fault", "error"),
    [("429", openai.RateLimitError), ("500", openai.InternalServerError), ("400", openai.BadRequestError)],
)
@pytest.mark.parametrize("post", [post_json, post_whole])
def test_a_failed_status_raises_the_sdks_error_with_the_response(stub, monkeypatch, fault, error, post):
    client = client_of(stub, monkeypatch)
    stub.faults.retry_after = "3"
    stub.faults.push(fault)
    with pytest.raises(error) as raised:
        post(openai, client, "chat/completions", BODY, PATIENT)
    assert raised.value.status_code == int(fault)
    assert isinstance(raised.value.body, dict)  # the body was read, as the SDK reads it
    if fault == "429":
        assert raised.value.response.headers["retry-after"] == "3"
    assert answer(post_json(openai, client, "chat/completions", BODY, PATIENT))  # the connection serves on


@pytest.mark.parametrize("post", [post_json, post_whole])
def test_no_answer_in_time_is_the_sdks_timeout_and_no_server_its_connection_error(stub, monkeypatch, post):
    client = client_of(stub, monkeypatch)
    stub.faults.hang_seconds = 3.0
    stub.faults.push("hang")
    with pytest.raises(openai.APITimeoutError):
        post(openai, client, "chat/completions", BODY, 0.5)
    stub.stop()
    with pytest.raises(openai.APIConnectionError) as raised:
        post(openai, client, "chat/completions", BODY, 0.5)
    assert not isinstance(raised.value, openai.APITimeoutError)


@pytest.mark.parametrize("post", [post_json, post_whole])
def test_a_failed_status_is_logged_with_the_http_version_the_server_answered_in(monkeypatch, caplog, post):
    error = b'{"error": {"message": "overloaded", "type": "stub_error"}}'
    reply = (
        b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
    )
    caplog.set_level(logging.INFO, logger="httpx2")
    with canned(reply % (len(error), error)) as (port, seen):
        client = model_at(f"http://127.0.0.1:{port}", monkeypatch).client[1]
        with pytest.raises(openai.InternalServerError) as raised:
            post(openai, client, "chat/completions", BODY, PATIENT)
    assert len(seen) == 1 and raised.value.status_code == 503
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    assert f'HTTP Request: POST {url} "HTTP/1.0 503 Service Unavailable"' in caplog.messages
    assert not any("HTTP/1.1" in line for line in caplog.messages)


HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "transfer-encoding",
    "te",
}
"""Headers of one connection, which a proxy does not pass on."""


@contextmanager
def forward_proxy() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP forward proxy: it takes a request in absolute form (`POST http://host:port/path HTTP/1.1`),
    passes it to that origin and its reply back; yields its URL and the request lines it took."""
    lines: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            lines.append(self.requestline)
            target = urllib.parse.urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=PATIENT)
            try:
                upstream.request(
                    "POST", target.path + (f"?{target.query}" if target.query else ""), body, headers
                )
                reply = upstream.getresponse()
                data = reply.read()
            finally:
                upstream.close()
            self.send_response(reply.status, reply.reason)
            for name, value in reply.getheaders():
                if name.lower() not in HOP_BY_HOP | {"content-length"}:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return None

    with Listener(("127.0.0.1", 0), Handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}", lines
        finally:
            server.shutdown()


def test_a_call_through_a_proxy_mounted_on_the_client_takes_the_clients_path(stub, monkeypatch):
    model = model_at(stub.url, monkeypatch)
    with forward_proxy() as (proxy, lines):
        # as `endpoint.py` builds the client, with a proxy mounted for every URL (what httpx2 mounts for the
        # environment's proxies when it builds its own transport)
        transport = DeadlineTransport(tls_for(model.base_url), model.max_reply_bytes)
        with model.make_client(
            openai, KEY, openai.DefaultHttpxClient(transport=transport, proxy=proxy)
        ) as client:
            assert not route(client, "chat/completions").direct
            whole = json.loads(post_whole(openai, client, "chat/completions", BODY, PATIENT))
            stub.faults.retry_after = "3"
            stub.faults.push("429")
            with pytest.raises(openai.RateLimitError) as raised:
                post_whole(openai, client, "chat/completions", BODY, PATIENT)
    assert whole["choices"][0]["message"]["content"]
    assert raised.value.status_code == 429 and isinstance(raised.value.body, dict)
    assert raised.value.response.headers["retry-after"] == "3"
    assert lines == [f"POST {stub.url}/v1/chat/completions HTTP/1.1"] * 2  # the absolute form, to the proxy
    assert stub.requests == [BODY, BODY]
    assert all(headers["authorization"] == f"Bearer {KEY}" for headers in stub.headers)
    assert transport.connections == {}  # nothing went over the transport's own connection


def test_a_proxy_the_environment_names_is_not_read_by_a_client_built_on_its_own_transport(stub, monkeypatch):
    # httpx2 mounts the environment's proxies only on a client built without a transport; `endpoint.py` gives
    # the SDK's client `DeadlineTransport`, so every call goes to the endpoint itself, within its bounds
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    with forward_proxy() as (proxy, lines):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.setenv("ALL_PROXY", proxy)
        client = client_of(stub, monkeypatch)
        assert route(client, "chat/completions").direct
        assert json.loads(post_whole(openai, client, "chat/completions", BODY, PATIENT))["choices"]
        assert answer(post_json(openai, client, "chat/completions", BODY, PATIENT))
    assert lines == []
    assert stub.requests == [BODY, BODY]
