"""The Anthropic provider through the real `anthropic` SDK, over HTTP, against the loopback stub."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from pos_bench.models.anthropic import REPLY_TOOL, AnthropicModel
from pos_bench.models.retry import Retrying, RetryPolicy
from pos_bench.structured import ask
from pos_bench.types import Message, Prompt
from tests.models.stub_anthropic_server import StubAnthropic
from tests.models.stub_openai_server import IMPATIENT, PATIENT

KEY = "sk-ant-test-planted-0123456789"


class Pick(BaseModel):
    thought: str
    action: str


@pytest.fixture
def stub():
    with StubAnthropic() as server:
        yield server


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("STUB_ANTHROPIC_KEY", KEY)


def model(stub: StubAnthropic, **kwargs) -> AnthropicModel:
    return AnthropicModel(
        "claude-stub", base_url=stub.url, api_key_env="STUB_ANTHROPIC_KEY", **{"timeout": PATIENT, **kwargs}
    )


def prompt(schema=None) -> Prompt:
    return Prompt(
        (Message("system", "You act in a house."), Message("user", "Choose.\n- look\n- open fridge 1")),
        schema=schema,
        max_tokens=64,
    )


def test_system_goes_apart_and_text_comes_back(stub):
    reply = model(stub).generate(prompt())
    sent = stub.requests[0]
    assert sent["system"] == "You act in a house."
    assert [m["role"] for m in sent["messages"]] == ["user"] and sent["max_tokens"] == 64
    assert json.loads(reply.text)["action"] in ("look", "open fridge 1")
    assert "tools" not in sent


def test_usage_counts_prompt_cache_reads_as_input(stub):
    reply = model(stub).generate(prompt())
    plain = len("You act in a house.") + len("Choose.\n- look\n- open fridge 1")
    assert reply.usage.input_tokens == plain // 4 + 1 + StubAnthropic.cache_read_tokens
    assert reply.usage.calls == 1
    # kept apart, for the cached price
    assert reply.usage.cached_input_tokens == StubAnthropic.cache_read_tokens


def test_schema_becomes_one_forced_tool(stub):
    schema = Pick.model_json_schema()
    result = ask(model(stub), prompt(), Pick, role="belief")
    sent = stub.requests[0]
    assert isinstance(result, Pick)
    assert sent["tools"] == [
        {"name": REPLY_TOOL, "description": sent["tools"][0]["description"], "input_schema": schema}
    ]
    assert sent["tool_choice"] == {"type": "tool", "name": REPLY_TOOL}


def test_structured_false_relies_on_the_prompt(stub):
    model(stub, structured=False).generate(prompt(Pick.model_json_schema()))
    assert "tools" not in stub.requests[0]


def test_sdk_api_version_sends_no_temperature_and_says_so(stub):
    built = model(stub)
    built.generate(prompt())
    assert "temperature" not in stub.requests[0]
    assert stub.headers[0]["anthropic-version"] != "2023-06-01"
    assert built.describe()["temperature_sent"] is None and built.describe()["temperature_wanted"] == 0.0


def test_previous_api_version_sends_temperature_zero(stub):
    built = model(stub, api_version="2023-06-01")
    built.generate(prompt())
    assert stub.requests[0]["temperature"] == 0.0
    assert stub.headers[0]["anthropic-version"] == "2023-06-01"
    assert built.describe()["temperature_sent"] == 0.0


def test_key_is_sent_but_never_described(stub):
    built = model(stub)
    built.generate(prompt())
    assert KEY in stub.headers[0].get("authorization", "") + stub.headers[0].get("x-api-key", "")
    assert KEY not in json.dumps(built.describe())


def test_missing_key_fails_at_the_first_call(stub, monkeypatch):
    monkeypatch.delenv("STUB_ANTHROPIC_KEY")
    built = model(stub)
    with pytest.raises(RuntimeError, match="STUB_ANTHROPIC_KEY"):
        built.generate(prompt())


@pytest.mark.parametrize("fault", ["429", "500", "hang", "malformed"])
def test_faults_are_retried_like_openai(stub, fault):
    stub.faults.push(fault)
    slept: list[float] = []
    impatient = model(stub, timeout=IMPATIENT if fault == "hang" else PATIENT, min_tokens_per_s=1e9)
    Retrying(impatient, RetryPolicy(initial_wait=0.01, jitter=0.0), sleep=slept.append).generate(prompt())
    assert len(stub.requests) == 2 and len(slept) == 1
