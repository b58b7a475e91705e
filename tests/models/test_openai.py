"""The OpenAI-compatible provider through the real `openai` SDK, over HTTP, against the loopback stub."""

from __future__ import annotations

import json
import ssl
import threading

import pytest
from pydantic import BaseModel

from pos_bench.models.endpoint import shared_tls, tls_for
from pos_bench.models.openai import OpenAIModel, completion_reply
from pos_bench.models.retry import RetryBudgetExhausted, Retrying, RetryPolicy, TransientError
from pos_bench.structured import ask
from pos_bench.types import Message, Prompt
from tests.models.stub_openai_server import IMPATIENT, PATIENT, StubOpenAI

KEY = "sk-test-planted-0123456789"
FAST = RetryPolicy(initial_wait=0.01, max_wait=0.05, jitter=0.0)


@pytest.fixture
def stub():
    with StubOpenAI() as server:
        yield server


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("STUB_OPENAI_KEY", KEY)


def model(stub: StubOpenAI, **kwargs) -> OpenAIModel:
    options = {"base_url": f"{stub.url}/v1", "api_key_env": "STUB_OPENAI_KEY", "timeout": PATIENT, **kwargs}
    return OpenAIModel("stub-model", **options)


def policy_prompt(schema=None) -> Prompt:
    return Prompt(
        (Message("system", "You act in a house."), Message("user", "Choose.\n- look\n- open fridge 1")),
        schema=schema,
        max_tokens=64,
    )


class Pick(BaseModel):
    thought: str
    action: str


def test_reply_text_and_usage_come_from_the_server(stub):
    reply = model(stub).generate(policy_prompt())
    assert json.loads(reply.text)["action"] in ("look", "open fridge 1")
    sent = stub.requests[0]
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0 and reply.usage.calls == 1
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert sent["max_tokens"] == 64 and sent["temperature"] == 0.0
    assert stub.headers[0]["authorization"] == f"Bearer {KEY}"


def test_schema_goes_natively_as_response_format(stub):
    schema = Pick.model_json_schema()
    model(stub).generate(policy_prompt(schema))
    model(stub, response_mode="json_object").generate(policy_prompt(schema))
    model(stub, response_mode="none").generate(policy_prompt(schema))
    model(stub).generate(policy_prompt())
    formats = [r.get("response_format") for r in stub.requests]
    assert formats[0] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": schema, "strict": False},
    }
    assert formats[1] == {"type": "json_object"}
    assert formats[2] is None and formats[3] is None


def test_reply_limits_bound_the_schema_and_budget_sent_for_their_role_or_reply_type(stub):
    schema = Pick.model_json_schema()  # title "Pick"
    limits = {
        "default": {"max_tokens": 48, "items": 2, "chars": 30},
        "Pick": {"max_tokens": 40, "items": 1, "chars": 12},
    }
    bounded = model(stub, reply_limits=limits)
    bounded.generate(policy_prompt(schema), role="agent")  # the reply type's caps win
    bounded.generate(policy_prompt({**schema, "title": "Other"}), role="belief")  # the default's
    bounded.generate(policy_prompt(), role="agent")  # no schema: only the budget is capped
    tokens_only = model(stub, reply_limits={"compactor": {"max_tokens": 24}})
    tokens_only.generate(
        policy_prompt(schema), role="compactor"
    )  # a budget, and no bound to put in the schema
    model(stub).generate(policy_prompt(schema))  # no limits: the schema as it is
    sent = [
        (r["max_tokens"], (r.get("response_format") or {}).get("json_schema", {}).get("schema"))
        for r in stub.requests
    ]
    assert sent[0][0] == 40 and sent[0][1]["properties"]["action"]["maxLength"] == 12
    assert sent[1][0] == 48 and sent[1][1]["properties"]["thought"]["maxLength"] == 30
    assert sent[2] == (48, None) and sent[3] == (24, schema) and sent[4] == (64, schema)
    assert (
        bounded.describe()["reply_limits"]["Pick"]["chars"] == 12
        and "reply_limits" not in model(stub).describe()
    )


def test_preset_fields_reach_the_server(stub):
    chosen = model(
        stub,
        temperature=None,
        extra_body={"enable_thinking": False},
        token_limit_field="max_completion_tokens",
    )
    chosen.generate(policy_prompt())
    sent = stub.requests[0]
    assert "temperature" not in sent and sent["enable_thinking"] is False
    assert sent["max_completion_tokens"] == 64 and "max_tokens" not in sent


def test_structured_ask_returns_a_typed_object(stub):
    result = ask(model(stub), policy_prompt(), Pick, role="belief")
    assert isinstance(result, Pick) and result.action in ("look", "open fridge 1")
    assert stub.requests[0]["response_format"]["json_schema"]["schema"] == Pick.model_json_schema()


def test_missing_key_fails_at_the_first_call_with_the_variable_name(stub, monkeypatch):
    monkeypatch.delenv("STUB_OPENAI_KEY")
    built = model(stub)  # building never needs the key
    assert built.describe()["api_key_env"] == "STUB_OPENAI_KEY"
    with pytest.raises(RuntimeError, match="STUB_OPENAI_KEY"):
        built.generate(policy_prompt())
    assert stub.requests == []


def test_local_servers_need_no_key(stub, monkeypatch):
    monkeypatch.delenv("STUB_OPENAI_KEY")
    model(stub, api_key_env=None).generate(policy_prompt())
    assert stub.headers[0]["authorization"] == "Bearer not-needed"


def test_describe_names_the_variable_never_the_key(stub):
    built = OpenAIModel(
        "m", base_url=f"http://user:secret@{stub.url[7:]}/v1?token=abc", api_key_env="STUB_OPENAI_KEY"
    )
    text = json.dumps(built.describe())
    assert KEY not in text and "secret" not in text and "token=abc" not in text
    assert built.describe()["base_url"] == f"{stub.url}/v1"


@pytest.mark.parametrize("fault", ["429", "500", "hang", "malformed"])
def test_each_fault_is_transient_and_retried_to_success(stub, fault):
    stub.faults.push(fault, fault)
    raw = model(stub, timeout=IMPATIENT if fault == "hang" else PATIENT, min_tokens_per_s=1e9)
    with pytest.raises(TransientError):
        raw.generate(policy_prompt())
    reply = Retrying(raw, FAST).generate(policy_prompt())
    assert json.loads(reply.text)["thought"] == "stub step"
    assert len(stub.requests) == 3


def test_retry_after_is_honoured(stub):
    stub.faults.retry_after = "7"
    stub.faults.push("429")
    slept: list[float] = []
    Retrying(model(stub), FAST, sleep=slept.append).generate(policy_prompt())
    assert slept == [7.0]


def test_a_spent_budget_fails_the_call_with_the_last_error(stub):
    stub.faults.push(*["500"] * 5)
    with pytest.raises(RetryBudgetExhausted, match="3 times.*HTTP 500"):
        Retrying(model(stub), RetryPolicy(max_attempts=3, initial_wait=0.0, jitter=0.0)).generate(
            policy_prompt()
        )
    assert len(stub.requests) == 3


def test_client_errors_are_not_retried(stub):
    wrong_path = OpenAIModel(
        "m", base_url=f"{stub.url}/nowhere", api_key_env="STUB_OPENAI_KEY", timeout=PATIENT
    )
    with pytest.raises(RuntimeError, match="HTTP 404"):
        Retrying(wrong_path, FAST).generate(policy_prompt())
    assert len(stub.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"choices": []},
        {"choices": [{"message": {"content": None}, "finish_reason": "length"}]},
        {"choices": [{"message": {}}]},
        {"choices": "none"},
        [],
    ],
)
def test_a_completion_without_text_is_a_malformed_response(body):
    with pytest.raises(ValueError, match="completion has no"):
        completion_reply(body)


def test_a_completion_without_usage_counts_no_tokens():
    reply = completion_reply({"choices": [{"message": {"content": "hi"}}], "usage": None})
    assert reply.text == "hi" and (
        reply.usage.input_tokens,
        reply.usage.output_tokens,
        reply.usage.calls,
    ) == (0, 0, 1)


def test_each_thread_keeps_its_own_client_and_connection(stub):
    shared = model(stub)
    seen: dict[str, list] = {}

    def calls(name: str) -> None:
        for _ in range(3):
            shared.generate(policy_prompt())
            seen.setdefault(name, []).append(shared.client[1])

    workers = [threading.Thread(target=calls, args=(f"t{i}",)) for i in range(4)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    clients = [set(map(id, got)) for got in seen.values()]
    assert all(len(c) == 1 for c in clients)  # one client per thread, reused for each of its calls
    assert len(set().union(*clients)) == 4
    assert len(stub.connections) == 4  # one kept-alive connection per thread, not one per call
    assert shared_tls() is shared_tls()


def test_plain_http_endpoints_skip_the_ca_bundle_but_never_skip_verification():
    local = tls_for("http://127.0.0.1:8000/v1")
    assert local.cert_store_stats()["x509_ca"] == 0  # nothing loaded: a redirect to https cannot verify
    assert local.verify_mode == ssl.CERT_REQUIRED and local.check_hostname
    assert tls_for("https://api.example.com/v1") is shared_tls()
    assert tls_for(None) is shared_tls()  # the SDK's default endpoint is https
