import importlib.metadata
import json
import re
import urllib.error
import urllib.request
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.models.local import LocalModel, LocalModelError, bounded_schema
from pos_bench.models.serve_local import SERVED_NAME, serve_embedded
from pos_bench.parse import parse_decision
from pos_bench.prompting import policy_prompt, render_observation
from pos_bench.structured import StructuredFailure, ask
from pos_bench.types import Decision, Message, Prompt

embedded = pytest.mark.embedded


@pytest.fixture(scope="module")
def model():
    local = LocalModel()
    yield local
    local.close()


class Place(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    kind: Literal["room", "furniture", "appliance"]


class Inventory(BaseModel):
    """Exercises `$defs`/`$ref`, `enum`, `anyOf` (optional) and `additionalProperties: false`."""

    model_config = ConfigDict(extra="forbid")
    places: list[Place]
    note: str | None = None


def test_describe_identifies_runtime_and_weights_without_loading():
    local = LocalModel()
    info = local.describe()
    assert not local.loaded
    assert info["provider"] == "embedded" and info["smoke"] is True
    assert info["runtime_version"] == importlib.metadata.version("xllamacpp")
    assert re.fullmatch(r"[0-9a-f]{64}", info["weights_sha256"])
    assert info["weights"].endswith(".gguf") and info["n_threads"] == 1 and info["temperature"] == 0.0


def test_bounded_schema_caps_free_strings_and_arrays_only():
    schema = bounded_schema(Inventory.model_json_schema(), max_chars=50, max_items=3)
    place = schema["$defs"]["Place"]["properties"]
    assert place["name"]["maxLength"] == 50 and "maxLength" not in place["kind"]
    assert schema["properties"]["places"]["maxItems"] == 3
    assert schema["properties"]["places"]["items"] == {"$ref": "#/$defs/Place"}
    with pytest.raises(ValueError):
        bounded_schema({}, max_chars=0, max_items=3)


@embedded
def test_schema_constrained_decision_is_admissible(model):
    bench = ToyBenchmark(n_tasks=1)
    env = bench.make_env(model)
    obs = env.reset(bench.tasks()[0])
    prompt = policy_prompt(bench.brief, obs, [f"Task: {obs.goal}", render_observation(obs)], max_tokens=200)
    reply = model.generate(prompt)
    decision = parse_decision(reply.text, obs)
    assert isinstance(decision, Decision) and decision.action in obs.actions
    assert model.loaded
    assert reply.usage.input_tokens > 100 and 0 < reply.usage.output_tokens <= 200 and reply.usage.calls == 1


@embedded
def test_structured_ask_returns_a_valid_object(model):
    prompt = Prompt(messages=(Message("user", "Name two places in a kitchen as JSON."),), max_tokens=200)
    result = ask(model, prompt, Inventory, role="belief", max_repairs=0)
    assert not isinstance(result, StructuredFailure), result
    assert len(result.places) <= 16


@embedded
def test_same_prompt_gives_same_free_text(model):
    prompt = Prompt(messages=(Message("user", "Describe a kitchen in one sentence."),), max_tokens=24)
    first, second = model.generate(prompt), model.generate(prompt)
    assert first.text == second.text and first.text.strip()


@embedded
def test_context_overflow_raises_a_clear_error():
    local = LocalModel(n_ctx=256)
    with pytest.raises(LocalModelError, match="context"):
        local.generate(Prompt(messages=(Message("user", "kitchen " * 400),), max_tokens=8))


@embedded
def test_serve_embedded_speaks_openai_chat_over_loopback():
    with serve_embedded(n_ctx=1024) as base_url:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        body = {
            "model": SERVED_NAME,
            "messages": [{"role": "user", "content": "Say hello."}],
            "max_tokens": 8,
        }
        request = urllib.request.Request(
            f"{base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            data = json.load(response)
        assert data["choices"][0]["message"]["content"]
        assert data["usage"]["completion_tokens"] > 0
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{base_url}/models", timeout=5)


def test_free_form_objects_get_short_keys_and_scalar_values():
    schema = {
        "type": "object",
        "properties": {
            "attributes": {
                "type": "object",
                "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "arguments": {"type": "object", "additionalProperties": True},
        },
    }
    bounded = bounded_schema(schema, max_chars=50, max_items=3)["properties"]
    for name in ("attributes", "arguments"):
        node = bounded[name]
        assert node["additionalProperties"] is False and node["maxProperties"] == 3
        ((pattern, _value),) = node["patternProperties"].items()
        assert pattern.endswith("{1,32}$")
    assert bounded["attributes"]["patternProperties"]["^[A-Za-z0-9_]{1,32}$"]["anyOf"][0]["maxLength"] == 50
    assert bounded["arguments"]["patternProperties"]["^[A-Za-z0-9_]{1,32}$"]["maxLength"] == 50
