"""The total deadline of a remote call, over HTTP against loopback stubs that drip-feed their replies: the
call ends within `model.timeout` + 1 s, and retries within `retry.max_seconds` in total."""

from __future__ import annotations

import json
import time

import pytest

from pos_bench.models.anthropic import AnthropicModel
from pos_bench.models.deadline import bounded, deadline, remaining
from pos_bench.models.openai import OpenAIModel
from pos_bench.models.retry import RetryBudgetExhausted, Retrying, RetryPolicy, TransientError
from pos_bench.types import Message, Prompt
from tests.models.stub_anthropic_server import StubAnthropic
from tests.models.stub_openai_server import StubOpenAI

TIMEOUT = 1.5
FAST = 1e9
"""A `min_tokens_per_s` that leaves a call's deadline at its `timeout`."""
PROMPT = Prompt((Message("user", "Choose.\n- look\n- open fridge 1"),), max_tokens=64)


def openai_model(stub, timeout: float, speed: float = FAST) -> OpenAIModel:
    return OpenAIModel(
        "stub-model", base_url=f"{stub.url}/v1", api_key_env=None, timeout=timeout, min_tokens_per_s=speed
    )


def anthropic_model(stub, timeout: float, speed: float = FAST) -> AnthropicModel:
    return AnthropicModel(
        "claude-stub", base_url=stub.url, api_key_env=None, timeout=timeout, min_tokens_per_s=speed
    )


PROVIDERS = [(StubOpenAI, openai_model), (StubAnthropic, anthropic_model)]


@pytest.mark.parametrize("fault", ["drip", "drip_headers"])
@pytest.mark.parametrize(("server", "build"), PROVIDERS, ids=["openai", "anthropic"])
def test_a_drip_fed_reply_ends_the_call_at_its_timeout_plus_its_tokens_at_the_slowest_speed(
    server, build, fault
):
    with server() as stub:
        model = build(stub, TIMEOUT, speed=128)  # 64 tokens: 0.5 s more
        assert json.loads(model.generate(PROMPT).text)  # the SDK imported, the client and connection made
        stub.faults.push(fault)
        started = time.monotonic()
        with pytest.raises(TransientError, match="timed out|deadline"):
            model.generate(PROMPT)
        took = time.monotonic() - started
        assert TIMEOUT + 0.5 - 0.1 <= took < TIMEOUT + 0.5 + 1.0
        assert json.loads(model.generate(PROMPT).text)  # the next call is served normally


@pytest.mark.parametrize(("server", "build"), PROVIDERS, ids=["openai", "anthropic"])
def test_retries_stop_at_max_seconds_with_the_attempt_in_flight_cut(server, build):
    with server() as stub:
        model = build(stub, 10.0)
        model.generate(PROMPT)
        stub.faults.push(*["drip"] * 10)
        retrying = Retrying(model, RetryPolicy(max_seconds=2.5, initial_wait=0.2, jitter=0.0))
        started = time.monotonic()
        with pytest.raises(RetryBudgetExhausted):
            retrying.generate(PROMPT)
        assert time.monotonic() - started < 2.5 + 1.0
        assert len(stub.requests) >= 2


def test_a_slow_but_timely_reply_is_not_cut():
    with StubOpenAI(delay=0.3) as stub:
        stub.faults.drip_interval = 0.001
        stub.faults.push("drip")
        assert json.loads(openai_model(stub, 5.0).generate(PROMPT).text)["thought"] == "stub step"


def test_deadlines_nest_and_the_earliest_wins():
    assert remaining() == float("inf") and bounded(3.0, TimeoutError) == 3.0
    with deadline(10.0):
        with deadline(0.5):
            assert 0 < bounded(3.0, TimeoutError) <= 0.5
        assert 0.5 < remaining() <= 10.0
        with deadline(0.0), pytest.raises(TimeoutError, match="deadline"):
            bounded(3.0, TimeoutError)
    assert remaining() == float("inf")
