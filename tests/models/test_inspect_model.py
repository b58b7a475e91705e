"""`model=inspect` without a server: how a provider's failures read to the retry policy, the reply schema in the
subset inspect carries, and what the model says of itself (its cache identity)."""

from __future__ import annotations

import httpx
import pytest

from pos_bench.models.inspect_model import InspectModel, classified, inline_schema
from pos_bench.models.retry import RequestRefused, TransientError, failure_kind


class StatusError(Exception):
    def __init__(self, status: int):
        super().__init__(f"HTTP {status}")
        self.status_code = status


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (StatusError(429), TransientError),
        (StatusError(503), TransientError),
        (StatusError(400), RequestRefused),
        (httpx.ConnectError("refused"), TransientError),
        (TimeoutError(), TransientError),
        (StatusError(404), StatusError),
        (KeyError("x"), KeyError),
    ],
)
def test_failures_are_classified_for_the_retry_policy(error: Exception, kind: type):
    assert type(classified(error, "inspect m")) is kind


def test_a_refusal_found_down_the_cause_chain_is_a_refusal_in_the_ledger():
    try:
        raise RuntimeError("wrapped") from StatusError(422)
    except RuntimeError as error:
        refused = classified(error, "inspect m")
    assert isinstance(refused, RequestRefused) and failure_kind(refused) == "refused"


def test_the_reply_schema_is_inlined_for_inspect():
    schema = {
        "type": "object",
        "properties": {"item": {"$ref": "#/$defs/Item"}, "kind": {"const": "belief"}},
        "required": ["item"],
        "$defs": {"Item": {"type": "object", "properties": {"name": {"type": "string"}}}},
    }
    inlined = inline_schema(schema)
    assert "$defs" not in inlined
    assert inlined["properties"]["item"]["properties"]["name"] == {"type": "string"}
    assert inlined["properties"]["kind"] == {"enum": ["belief"]}
    looping = {
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "$defs": {"A": {"properties": {"b": {"$ref": "#/$defs/A"}}}},
    }
    with pytest.raises(ValueError, match="deeper"):
        inline_schema(looping)


def test_the_description_names_provider_model_and_settings(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-a-key")
    model = InspectModel("anthropic/claude-x", temperature=0.5, base_url="https://u:p@host/v1?k=1")
    described = model.describe()
    assert described["provider"] == "inspect" and described["model"] == "anthropic/claude-x"
    assert described["temperature_sent"] == 0.5 and described["base_url"] == "https://host/v1"
    assert InspectModel("anthropic/claude-x", temperature=0.0).describe() != described
    with pytest.raises(ValueError, match="response_mode"):
        InspectModel("a/b", response_mode="grammar")


def test_an_unknown_provider_or_a_missing_key_fails_when_the_model_is_built(monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(ValueError, match="nosuchprovider.* not recognized"):
        InspectModel("nosuchprovider/x")
    monkeypatch.delenv("NOKEY_API_KEY", raising=False)
    with pytest.raises(ValueError, match="No NOKEY_API_KEY defined"):
        InspectModel("openai-api/nokey/m")
