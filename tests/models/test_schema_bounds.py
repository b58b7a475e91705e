"""Schema bounds: free strings, arrays and free-form objects get a size cap; everything else passes through."""

import re
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from pos_bench.models.schema_bounds import KEY_PATTERN, NUMBER_LIMIT, NUMBER_STEP, bounded_schema


class Place(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    kind: Literal["room", "furniture", "appliance"]


class Inventory(BaseModel):
    """Exercises `$defs`/`$ref`, `enum`, `anyOf` (optional) and `additionalProperties: false`."""

    model_config = ConfigDict(extra="forbid")
    places: list[Place]
    note: str | None = None


def test_free_strings_and_arrays_are_capped_and_enums_and_refs_pass_through():
    schema = bounded_schema(Inventory.model_json_schema(), max_chars=50, max_items=3)
    place = schema["$defs"]["Place"]["properties"]
    assert place["name"]["maxLength"] == 50 and "maxLength" not in place["kind"]
    assert schema["properties"]["places"]["maxItems"] == 3
    assert schema["properties"]["places"]["items"] == {"$ref": "#/$defs/Place"}
    assert schema["additionalProperties"] is False and "patternProperties" not in schema
    assert schema["x-guidance"]["whitespace_flexible"] is False


def test_a_tighter_cap_already_in_the_schema_is_kept_and_the_input_is_not_changed():
    schema = {"type": "object", "properties": {"tag": {"type": "string", "maxLength": 8}}}
    bounded = bounded_schema(schema, max_chars=50, max_items=3)
    assert bounded["properties"]["tag"]["maxLength"] == 8
    assert bounded_schema(schema, max_chars=5, max_items=3)["properties"]["tag"]["maxLength"] == 5
    assert schema == {"type": "object", "properties": {"tag": {"type": "string", "maxLength": 8}}}


def test_caps_below_one_are_refused():
    for chars, items in ((0, 3), (3, 0)):
        with pytest.raises(ValueError, match="must be ≥ 1"):
            bounded_schema({}, max_chars=chars, max_items=items)


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
        assert pattern == KEY_PATTERN and pattern.endswith("{1,32}$")
    assert bounded["attributes"]["patternProperties"][KEY_PATTERN]["anyOf"][0]["maxLength"] == 50
    assert bounded["arguments"]["patternProperties"][KEY_PATTERN]["maxLength"] == 50


def test_numbers_get_a_bounded_count_of_digits():
    schema = {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "probability": {"type": "number", "minimum": 0, "maximum": 1},
            "level": {"type": "integer", "enum": [1, 2]},
            "attributes": {"type": "object"},
        },
    }
    bounded = bounded_schema(schema, max_chars=50, max_items=3)["properties"]
    assert bounded["count"] == {"type": "integer", "minimum": -NUMBER_LIMIT, "maximum": NUMBER_LIMIT}
    assert bounded["probability"] == {"type": "number", "minimum": 0, "maximum": 1, "multipleOf": NUMBER_STEP}
    assert bounded["level"] == {"type": "integer", "enum": [1, 2]}
    value = bounded["attributes"]["patternProperties"][KEY_PATTERN]
    assert (
        value["maximum"] == NUMBER_LIMIT and value["multipleOf"] == NUMBER_STEP and value["maxLength"] == 50
    )


def test_identifier_fields_are_short_and_hold_no_json_punctuation():
    schema = {
        "type": "object",
        "properties": {
            "entity_id": {"type": "string"},
            "remove_state_ids": {"type": "array", "items": {"type": "string"}},
            "gap_type": {"type": "string", "enum": ["epistemic", "achievement"]},
            "name": {"type": "string"},
        },
    }
    bounded = bounded_schema(schema, max_chars=50, max_items=3)["properties"]
    for node in (bounded["entity_id"], bounded["remove_state_ids"]["items"]):
        pattern = re.compile(node["pattern"])
        assert "maxLength" not in node
        assert pattern.match("e1") and pattern.match("desk 1") and pattern.match("x" * 50)
        for bad in ("1234567890},{", 'a"b', "a,b", "[e1]", "", "x" * 51):
            assert not pattern.match(bad), bad
    assert bounded["gap_type"] == {"type": "string", "enum": ["epistemic", "achievement"]}
    assert bounded["name"] == {"type": "string", "maxLength": 50}


def test_a_named_list_gets_its_own_cap():
    schema = {
        "type": "object",
        "properties": {
            "entities": {"type": "array", "items": {"type": "string"}},
            "epistemic_gaps": {"type": "array", "items": {"type": "string"}},
            "pair": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        },
    }
    lists = {"epistemic_gaps": 2, "pair": 5}
    bounded = bounded_schema(schema, max_chars=20, max_items=1, lists=lists)["properties"]
    assert bounded["entities"]["maxItems"] == 1 and bounded["epistemic_gaps"]["maxItems"] == 2
    assert bounded["pair"]["maxItems"] == 2  # a named cap never loosens the schema's own
    with pytest.raises(ValueError, match="≥ 1"):
        bounded_schema(schema, max_chars=20, max_items=1, lists={"epistemic_gaps": 0})
