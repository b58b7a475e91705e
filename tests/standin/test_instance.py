"""The smallest instance of a JSON schema: pydantic's own validation accepts it, for every feature pydantic emits."""

import re
from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from pos_bench.standin.instance import minimal_instance
from pos_bench.standin.pattern import shortest_match


class Colour(str, Enum):
    RED = "red"
    BLUE = "blue"


class Leaf(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=3, max_length=5)]
    code: Annotated[str, Field(pattern=r"^[A-Z]{2}-\d{3}$")]
    colour: Colour
    weight: Annotated[float, Field(gt=1.5, le=2.0)]
    count: Annotated[int, Field(ge=-7, lt=-2)]
    step: Annotated[int, Field(ge=1, multiple_of=5)]


class Tree(BaseModel):
    kind: Literal["tree"]
    leaves: Annotated[list[Leaf], Field(min_length=2)]
    tags: Annotated[list[str], Field(min_length=3, json_schema_extra={"uniqueItems": True})]
    parent: "Tree | None" = None
    note: str | None
    either: Leaf | int
    pair: tuple[int, str]
    free: dict[str, Any]
    flag: bool
    when: Annotated[str, Field(json_schema_extra={"format": "date-time"})]


@pytest.mark.parametrize("model", [Leaf, Tree])
def test_pydantic_accepts_the_smallest_instance_of_its_own_schema(model):
    value = minimal_instance(model.model_json_schema())
    model.model_validate(value)


def test_the_instance_is_the_smallest_one():
    value = minimal_instance(Leaf.model_json_schema())
    assert value == {
        "name": "xxx",
        "code": "AA-000",
        "colour": "red",
        "weight": value["weight"],
        "count": -3,
        "step": 5,
    }
    assert 1.5 < value["weight"] <= 1.5 + 1e-5
    tree = minimal_instance(Tree.model_json_schema())
    assert len(tree["leaves"]) == 2 and "parent" not in tree and tree["note"] == "x"  # not null: an answer
    assert len(set(tree["tags"])) == 3


@pytest.mark.parametrize(
    "pattern, min_length",
    [
        (r"^[A-Za-z0-9_]{1,32}$", 0),
        (r'^[^"\\{}\[\],]{1,40}$', 6),
        (r"(a|bc)\d+(?:x|y)", 0),
        (r"^(ab)+$", 5),
        (r"k", 4),
    ],
)
def test_the_shortest_match_is_found_by_the_pattern_and_long_enough(pattern, min_length):
    text = shortest_match(pattern, min_length=min_length)
    assert re.search(pattern, text) and len(text) >= min_length


def test_a_schema_nobody_can_meet_is_refused_by_name():
    with pytest.raises(ValueError, match="bounds"):
        minimal_instance({"type": "integer", "minimum": 5, "maximum": 3})
    with pytest.raises(ValueError, match="pattern"):
        shortest_match(r"^a$", min_length=3)
