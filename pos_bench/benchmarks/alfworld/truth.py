"""ALFWorld's ground truth per step, read from the engine's own facts (TextWorld's `facts` info, the PDDL
state the game runs on); identical in the 2.1.1 and 2.1.2 text versions, which change only the wording."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from pos_bench.benchmarks.household import PROPERTIES, Household, household_truth
from pos_bench.truth import WorldTruth

_ABLE = {"cleanable": "clean", "heatable": "hot", "coolable": "cool", "sliceable": "sliced"}
_IS = {"isclean": "clean", "ishot": "hot", "iscool": "cool", "issliced": "sliced"}


def household(facts: Iterable[Any]) -> Household:
    """The household the engine's propositions describe (each has `.name` and `.arguments[i].name`)."""
    by_name: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for fact in facts:
        by_name[fact.name].append(tuple(a.name for a in fact.arguments))
    locations: dict[str, tuple[str, ...]] = defaultdict(tuple)
    for obj, receptacle in by_name["inreceptacle"]:
        locations[obj] += (receptacle,)
    for obj, *_ in by_name["objectatlocation"]:
        locations.setdefault(obj, ())
    spot = {args[-1] for args in by_name["atlocation"]}  # the agent's location, a `loc N` node
    receptacles = tuple(sorted(r for r, _ in by_name["receptacleatlocation"]))
    opened = {r for (r,) in by_name["opened"]}
    properties: dict[str, dict[str, bool]] = defaultdict(dict)
    for able, prop in _ABLE.items():
        for (obj,) in by_name[able]:
            properties[obj][prop] = False
    for predicate, prop in _IS.items():
        for (obj,) in by_name[predicate]:
            properties[obj][prop] = True
    held = next((args[-1] for args in by_name["holds"]), "")
    return Household(
        locations=dict(locations),
        receptacles=receptacles,
        held=held,
        at=tuple(sorted(r for r, loc in by_name["receptacleatlocation"] if loc in spot)),
        openable={r: r in opened for (r,) in by_name["openable"]},
        properties={o: {p: v[p] for p in PROPERTIES if p in v} for o, v in properties.items()},
    )


def alfworld_truth(facts: Iterable[Any], goal: str) -> WorldTruth:
    return household_truth(household(facts), goal)
