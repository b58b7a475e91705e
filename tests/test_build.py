"""Objects built from config nodes: what Hydra's `instantiate` gives, a fresh object (and arguments) each time."""

import functools

import pytest
from hydra.utils import instantiate

from pos_bench.build import build


class Keeper:
    """Changes the list it is given, as a careless constructor might."""

    def __init__(self, items: list, limit: int = 3, options: dict | None = None):
        items.append("mine")
        self.items = items
        self.limit = limit
        self.options = options


class Broken:
    def __init__(self, limit: int):
        raise ValueError(f"limit {limit} is not allowed")


NODE = {"_target_": "tests.test_build.Keeper", "items": ["a"], "limit": 5, "options": {"x": [1]}}


def test_each_build_is_a_fresh_object_with_arguments_of_its_own():
    first, second = build(NODE), build(NODE)
    assert first is not second
    assert first.items == second.items == ["a", "mine"]  # the first constructor's change did not leak
    assert first.items is not second.items and first.options is not second.options
    assert NODE["items"] == ["a"]
    hydra = instantiate(NODE, _convert_="all")
    assert (hydra.items, hydra.limit, hydra.options) == (first.items, first.limit, first.options)
    assert (
        type(first.options) is dict and type(first.options["x"]) is list
    )  # plain containers, as _convert_=all


def test_a_partial_node_gives_a_partial_and_each_build_its_own_arguments():
    node = {**NODE, "_partial_": True}
    one, two = build(node)(limit=1), build(node)(limit=2)
    assert isinstance(build(node), functools.partial)
    assert (one.limit, two.limit) == (1, 2)
    assert one.items == two.items == ["a", "mine"] and one.items is not two.items


def test_a_node_with_an_inner_target_is_built_whole_each_time():
    node = {
        "_target_": "tests.test_build.Keeper",
        "items": [],
        "options": {"_target_": "builtins.dict", "a": 1},
    }
    first, second = build(node), build(node)
    assert first.options == {"a": 1} and first.options is not second.options


def test_constructor_errors_reach_the_caller():
    with pytest.raises(ValueError, match="limit 7 is not allowed"):
        build({"_target_": "tests.test_build.Broken", "limit": 7})
    with pytest.raises(Exception, match="nowhere"):
        build({"_target_": "tests.nowhere.Missing"})
