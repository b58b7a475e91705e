"""A JSON POST on the SDK client's own HTTP client, or on its connection with the reply read whole: the request the
SDK would send, the errors it would raise, the log line its client would write."""

from __future__ import annotations

import json
import logging

import httpx2
import openai
import pytest

from pos_bench.models.direct import post_json, post_whole
from pos_bench.models.openai import OpenAIModel
from tests.models.stub_openai_server import PATIENT, StubOpenAI
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
