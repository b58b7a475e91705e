import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field, ValidationError

from pos_bench.prompting import (
    decision_model,
    decision_schema,
    policy_prompt,
    render_actions,
    render_observation,
)
from pos_bench.types import Brief, Observation

OBS = Observation(text="You see a desk 1.", actions=("look", "go to desk 1"), notes=("Last turn: act now.",))


def test_command_schema_only_admits_available_actions():
    model = decision_model(OBS)
    assert model.model_validate({"thought": "", "action": "look"})
    with pytest.raises(ValidationError):
        model.model_validate({"thought": "", "action": "fly away"})
    with pytest.raises(ValidationError):
        model.model_validate({"thought": "", "action": "look", "unexpected": 1})


def test_meta_actions_and_extra_fields_extend_the_schema():
    model = decision_model(OBS, extra_fields={"subgoal": (str, ...)}, meta_actions=("retrieve 1",))
    assert model.model_validate({"thought": "", "subgoal": "s", "action": "retrieve 1"})
    schema = model.model_json_schema()
    assert "subgoal" in schema["required"]


def test_tool_schema_only_admits_available_tool_names():
    obs = Observation(text="", tools=({"type": "function", "function": {"name": "t"}},))
    model = decision_model(obs, meta_actions=("glimpse",))
    assert model.model_validate({"thought": "", "action": {"name": "t", "arguments": {"q": 1}}})
    assert model.model_validate({"thought": "", "action": {"name": "glimpse", "arguments": {}}})
    with pytest.raises(ValidationError):
        model.model_validate({"thought": "", "action": {"name": "rm", "arguments": {}}})


def test_policy_prompt_layout():
    prompt = policy_prompt(Brief(system="SYS"), OBS, ["MEMORY", "", render_observation(OBS)], max_tokens=99)
    system, user = prompt.messages
    assert system.content == "SYS"
    assert (
        user.content.index("MEMORY")
        < user.content.index("Last turn: act now.")
        < user.content.index("- go to desk 1")
    )
    assert user.content.rstrip().endswith("available actions; a similar name is a different object.")
    assert prompt.max_tokens == 99 and json.dumps(prompt.schema)


def test_render_tools_lists_schemas():
    obs = Observation(text="", tools=({"type": "function", "function": {"name": "order_lab_test"}},))
    assert "order_lab_test" in render_actions(obs, ("glimpse",)) and "glimpse" in render_actions(
        obs, ("glimpse",)
    )


names = st.lists(st.text(min_size=1, max_size=30), min_size=0, max_size=12, unique=True)


EXTRA_FIELDS = {
    "none": None,
    "optional subgoal": {"subgoal": (str | None, None)},
    "required subgoal": {"subgoal": (str, ...)},
    "state": {"locations_visited": (list[str], ...), "thought": (str, ...)},
    "pydantic field default": {
        "notes": (list[str], Field(default_factory=list, json_schema_extra={"maxItems": 3}))
    },
    "list default": {"notes": (list[str], [])},
    "number defaults": {"retries": (int, 1), "ratio": (float, 1.0), "strict": (bool, True)},
}


@settings(max_examples=200, deadline=None)
@given(
    names=names,
    meta=st.lists(st.sampled_from(["glimpse", "retrieve 1", "look"]), unique=True),
    tools=st.booleans(),
    max_actions=st.sampled_from([1, 3]),
    extra=st.sampled_from(sorted(EXTRA_FIELDS)),
    thought_key=st.sampled_from(["thought", "goal"]),
)
def test_decision_schema_is_pydantics_own_for_every_action_list(
    names, meta, tools, max_actions, extra, thought_key
):
    if tools:
        obs = Observation(text="", tools=tuple({"type": "function", "function": {"name": n}} for n in names))
    else:
        obs = Observation(text="", actions=tuple(names))
    fields = EXTRA_FIELDS[extra]
    if fields and thought_key in fields:
        thought_key = "goal"
    options = {
        "meta_actions": meta,
        "max_actions": max_actions,
        "extra_fields": fields,
        "thought_key": thought_key,
    }
    built = decision_schema(obs, **options)
    expected = decision_model(obs, **options).model_json_schema()
    assert built == expected
    assert json.dumps(built) == json.dumps(expected)  # the same text too: key order is part of a request
