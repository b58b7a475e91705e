"""Slow servers finish (issue 44): against the stand-in writing at 15 tokens/s per request, a streamed call
outlasts `model.timeout` and finishes, because `timeout` bounds only the silences; the same call read whole is
cut, and a request that timed out is sent again once, never twice."""

from __future__ import annotations

import json
import time

import pytest

from pos_bench.models.openai import OpenAIModel, assembled
from pos_bench.models.retry import RetryBudgetExhausted, Retrying, RetryPolicy, TransientError
from pos_bench.prompting import policy_prompt
from pos_bench.standin.server import Settings, StandinServer
from pos_bench.standin.service import ServiceModel
from pos_bench.types import Brief, Observation, Prompt, Reply

SPEED = 15.0
REPLY_TOKENS = 45
"""Three seconds of writing at 15 tokens/s."""
TIMEOUT = 1.0


@pytest.fixture(scope="module")
def slow():
    service = ServiceModel(tokens_per_s=SPEED, batch_tokens_per_s=SPEED * 8, first_token_s=0.0)
    with StandinServer(Settings(service=service, reply_tokens=REPLY_TOKENS, chunk_seconds=0.1)) as server:
        yield server


def policy() -> Prompt:
    obs = Observation(text="You are in a room.", actions=("open door", "look"))
    return policy_prompt(Brief(system="You play a text game."), obs, ["Task: leave the room."])


def model(server: StandinServer, **options) -> OpenAIModel:
    return OpenAIModel("standin", base_url=server.url, api_key_env=None, timeout=TIMEOUT, **options)


def test_a_streamed_reply_longer_than_the_timeout_finishes(slow):
    started = time.monotonic()
    reply = model(slow, stream=True).generate(policy())
    took = time.monotonic() - started
    assert json.loads(reply.text) == {"thought": "x", "action": "open door"}
    assert reply.usage.output_tokens == REPLY_TOKENS and reply.usage.input_tokens > 0
    assert took >= REPLY_TOKENS / SPEED * 0.9 > 2 * TIMEOUT  # it really outlasted the timeout


def test_the_same_reply_read_whole_within_a_fixed_timeout_is_cut(slow):
    fixed = model(slow, min_tokens_per_s=1e9)  # the deadline is `timeout` alone, as before issue 44
    with pytest.raises(TransientError, match="timed out") as caught:
        fixed.generate(policy())
    assert caught.value.timed_out


def test_the_overall_deadline_grows_with_max_tokens_and_cuts_a_stream_slower_than_the_floor(slow):
    prompt = policy()
    short = Prompt(prompt.messages, schema=prompt.schema, max_tokens=60)
    floor = model(slow, stream=True, min_tokens_per_s=60.0)  # 1 s + 60 / 60 s: less than the 3 s of writing
    assert floor.call_seconds(60) == pytest.approx(2.0) and floor.call_seconds(600) == pytest.approx(11.0)
    started = time.monotonic()
    with pytest.raises(TransientError, match="timed out|deadline"):
        floor.generate(short)
    assert 1.9 <= time.monotonic() - started < 3.0


class Silent:
    """A provider whose every call times out; counts the calls."""

    name = "silent"

    def __init__(self) -> None:
        self.calls: list[Prompt] = []

    def describe(self):
        return {"provider": "silent"}

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        self.calls.append(prompt)
        raise TransientError("timed out", timed_out=True)


class Flaky(Silent):
    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        self.calls.append(prompt)
        raise TransientError("HTTP 503")


def test_a_timed_out_request_is_sent_again_once_and_never_twice():
    inner = Silent()
    with pytest.raises(RetryBudgetExhausted, match="timed out twice"):
        Retrying(
            inner, RetryPolicy(max_attempts=6, initial_wait=0.0, jitter=0.0), sleep=lambda _: None
        ).generate(policy())
    assert len(inner.calls) == 2 and inner.calls[0] == inner.calls[1]


def test_other_transient_failures_still_get_every_attempt():
    inner = Flaky()
    with pytest.raises(RetryBudgetExhausted, match="rerun the same command"):
        Retrying(
            inner, RetryPolicy(max_attempts=5, initial_wait=0.0, jitter=0.0), sleep=lambda _: None
        ).generate(policy())
    assert len(inner.calls) == 5


def test_the_retry_total_leaves_room_for_two_long_replies(slow):
    prompt = Prompt(policy().messages, max_tokens=100)
    policy_ = RetryPolicy(max_seconds=30.0)
    assert Retrying(model(slow, min_tokens_per_s=10.0), policy_).call_seconds(prompt) == pytest.approx(
        30 + 20
    )
    assert Retrying(Silent(), policy_).call_seconds(prompt) == 30.0


def test_streamed_chunks_add_up_to_the_whole_completion():
    chunks = [
        {"model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"model": "m", "choices": [{"index": 0, "delta": {"content": '{"a": '}}]},
        {"model": "m", "choices": [{"index": 0, "delta": {"content": "1}"}, "finish_reason": "stop"}]},
        {
            "model": "m",
            "system_fingerprint": "fp",
            "choices": [],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3},
        },
    ]
    whole = assembled(chunks)
    assert whole["choices"][0]["message"]["content"] == '{"a": 1}'
    assert whole["choices"][0]["finish_reason"] == "stop" and whole["usage"]["completion_tokens"] == 3
    assert whole["system_fingerprint"] == "fp"
    assert assembled([{"choices": []}])["choices"][0]["message"]["content"] is None  # no text: malformed


def test_server_sent_events_are_read_to_done_and_a_mid_stream_error_is_a_malformed_reply():
    from pos_bench.models.openai import server_events

    lines = [
        ": ping",
        'data: {"choices": []}',
        "",
        "event: x",
        'data: {"a": 1}',
        "data: [DONE]",
        'data: {"b": 2}',
    ]
    assert list(server_events(lines)) == [{"choices": []}, {"a": 1}]
    with pytest.raises(ValueError, match="mid-stream"):
        list(server_events(['data: {"error": {"message": "out of memory"}}']))
    with pytest.raises(ValueError):
        list(server_events(["data: [1, 2]"]))


def test_an_event_ends_at_any_of_the_three_line_ends_and_nowhere_else():
    from pos_bench.models.openai import event_lines, server_events

    body = 'data: {"a": "x\u2028y\u0085z"}\r\ndata: {"b": 1}\rdata: {"c": 2}\n\ndata: [DONE]\n\n'.encode()
    assert list(server_events(event_lines(body))) == [{"a": "x\u2028y\u0085z"}, {"b": 1}, {"c": 2}]


def test_a_streamed_reply_comes_over_the_wire_without_the_http_clients_objects(slow, monkeypatch):
    """Like a reply read whole, a streamed one is written and read on the kept connection itself
    (`direct.post_whole`): the SDK's HTTP client builds no request or response for it."""
    import httpx2

    def refused(*args, **kwargs):
        raise AssertionError("the streamed call went through httpx2.Client.send")

    monkeypatch.setattr(httpx2.Client, "send", refused)
    before = slow.stats()
    reply = model(slow, stream=True).generate(policy())
    assert json.loads(reply.text)["action"] == "open door" and reply.usage.output_tokens == REPLY_TOKENS
    assert counted(slow, before.answered + 1).streamed - before.streamed == 1


def test_a_reply_streamed_one_token_at_a_time_costs_the_client_little_cpu():
    service = ServiceModel(tokens_per_s=1000, batch_tokens_per_s=50000, first_token_s=0.0)
    with StandinServer(Settings(service=service, reply_tokens=300, chunk_seconds=0.001)) as server:
        streamed = model(server, stream=True)
        streamed.generate(policy())
        started = time.thread_time()
        reply = streamed.generate(policy())
        spent = time.thread_time() - started
    assert reply.usage.output_tokens == 300
    assert spent < 0.04  # ~300 events; the SDK's typed chunks took ~60 ms here


def test_events_that_arrive_one_at_a_time_are_read_together(monkeypatch):
    """A serving stack sends each token as an event of its own; the client reads the socket at most once per
    `STREAM_PACE` once it has caught up, so it wakes a few times per second instead of once per token."""
    from pos_bench.models import transport

    reads = []
    recv_into = transport._BoundedSocket.recv_into

    def counted(self, *args, **kwargs):
        reads.append(self.pace)
        return recv_into(self, *args, **kwargs)

    monkeypatch.setattr(transport._BoundedSocket, "recv_into", counted)
    service = ServiceModel(tokens_per_s=1000, batch_tokens_per_s=50000, first_token_s=0.0)
    with StandinServer(Settings(service=service, reply_tokens=300, chunk_seconds=0.001)) as server:
        reply = model(server, stream=True).generate(policy())
        whole = model(server).generate(policy())
    assert reply.usage.output_tokens == 300 and json.loads(reply.text)["action"] == "open door"
    paced = [pace for pace in reads if pace]
    assert 0 < len(paced) < 60, f"{len(paced)} reads of ~300 events over ~0.3 s"
    assert whole.text == reply.text and reads[-1] == 0.0  # a reply read whole is not paced


def test_events_that_arrive_further_apart_than_the_pace_wake_the_client_once_each(slow, monkeypatch):
    """A server that sends the tokens decoded every 0.1 s as one event (the stand-in, `chunk_seconds`) is read
    as its events come: no sleep before a read that would gather nothing, so one wakeup per event, not two."""
    import threading

    from pos_bench.models import transport

    caller, sleeps, reads = threading.get_ident(), [], []
    sleep, recv_into = time.sleep, transport._BoundedSocket.recv_into

    def counted_sleep(seconds):
        if threading.get_ident() == caller:
            sleeps.append(seconds)
        sleep(seconds)

    def counted_read(self, *args, **kwargs):
        reads.append(self.pace)
        return recv_into(self, *args, **kwargs)

    monkeypatch.setattr(transport.time, "sleep", counted_sleep)
    monkeypatch.setattr(transport._BoundedSocket, "recv_into", counted_read)
    streamed = model(slow, stream=True)
    for _ in range(2):
        reply = streamed.generate(policy())
    assert reply.usage.output_tokens == REPLY_TOKENS and json.loads(reply.text)["action"] == "open door"
    events = 2 * (REPLY_TOKENS / SPEED / 0.1)  # ~60 events over the two calls, 0.1 s apart
    assert len([pace for pace in reads if pace]) >= events * 0.8  # each read found about one event
    assert len(sleeps) <= 10, f"{len(sleeps)} sleeps, ~{events:.0f} events"  # ~60 when one came before each


def test_a_refused_streamed_request_is_a_rate_limit_to_retry():
    from pos_bench.standin.server import Faults

    with (
        StandinServer(Settings(faults=Faults(rate_429=1.0, retry_after_s=3))) as server,
        pytest.raises(TransientError) as caught,
    ):
        model(server, stream=True).generate(policy())
    assert caught.value.rate_limited and caught.value.retry_after == 3 and not caught.value.timed_out


@pytest.mark.parametrize("stream", [True, False])
def test_calls_of_one_thread_share_one_connection_streamed_or_whole(monkeypatch, stream):
    """A streamed reply is read to its end (past `[DONE]`, the chunked terminator), so the connection goes back
    to the pool: before, every streamed call opened a new one, a TCP (and on a remote endpoint a TLS) handshake
    per call."""
    import socket

    opened = []
    connect = socket.create_connection

    def counted(*args, **kwargs):
        opened.append(args[0])
        return connect(*args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", counted)
    service = ServiceModel(tokens_per_s=1000.0, batch_tokens_per_s=4000.0, first_token_s=0.0)
    with StandinServer(Settings(service=service, reply_tokens=40, chunk_seconds=0.01)) as server:
        client = model(server, stream=stream)
        replies = [client.generate(policy()) for _ in range(4)]
    assert {json.loads(r.text)["action"] for r in replies} == {"open door"}
    assert all(r.usage.output_tokens >= 40 for r in replies)
    assert len(opened) == 1, f"{len(opened)} connections for 4 calls"


def test_auto_streams_only_a_reply_that_may_outlast_the_timeout(slow):
    """`stream: auto`: a reply that at `min_tokens_per_s` may take longer than `timeout` is streamed, and finishes
    though it takes longer than `timeout`; a shorter one is read whole."""
    prompt = policy()
    before = slow.stats()
    reply = model(slow, stream="auto").generate(Prompt(prompt.messages, schema=prompt.schema, max_tokens=60))
    after = counted(slow, before.answered + 1)
    assert json.loads(reply.text)["action"] == "open door"  # 60 tokens at 5/s: 12 s, more than 1 s
    assert after.streamed - before.streamed == 1
    fast = ServiceModel(tokens_per_s=1000.0, batch_tokens_per_s=4000.0, first_token_s=0.0)
    with StandinServer(Settings(service=fast, reply_tokens=40, chunk_seconds=0.01)) as server:
        short = model(server, stream="auto", min_tokens_per_s=100.0)  # 60 tokens at 100/s: 0.6 s, within 1 s
        whole = short.generate(Prompt(prompt.messages, schema=prompt.schema, max_tokens=60))
        assert counted(server, 1).streamed == 0
    assert reply.served == whole.served == "standin pos_bench-standin"  # a run mixing both sees one revision


def counted(server: StandinServer, answered: int):
    """The server's stats once it has counted `answered` replies: it counts one after its last byte is sent, so
    the client can have the reply a moment before."""
    for _ in range(500):
        stats = server.stats()
        if stats.answered >= answered:
            return stats
        time.sleep(0.01)
    raise AssertionError(f"the server counted {stats.answered} answered replies, not {answered}")


def test_stream_is_true_false_or_auto():
    with pytest.raises(ValueError, match="model.stream must be true, false or auto"):
        OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key_env=None, stream="sometimes")


def test_a_reply_read_whole_after_a_streamed_one_waits_for_its_own_deadline_on_the_same_connection(slow):
    prompt = policy()
    short = Prompt(prompt.messages, schema=prompt.schema, max_tokens=60)
    streamed = model(slow, stream=True)
    whole = model(slow, stream=False, min_tokens_per_s=10.0)  # 1 s + 60 / 10 s: past the 3 s of writing
    assert streamed.client[1] is whole.client[1]  # one client, one kept connection, for both
    streamed.generate(short)  # each read bounded by `timeout`, 1 s
    reply = whole.generate(short)  # one read of 3 s: bounded by this call's deadline, not the last call's 1 s
    assert json.loads(reply.text) == {"thought": "x", "action": "open door"}
