"""The ground truth of a household world (ALFWorld's engine and the toy household): the facts it holds and
the vocabulary that reads a claim about it (`pos_bench.truth`).

Objects and receptacles carry ALFWorld's canonical names ("mug 1", "drawer 3"), so a claim naming one is
matched exactly; the agent is the subject `agent`. Facts: every object's location (a receptacle, or `agent`
while held; ALFWorld may put one object in two nested receptacles), what the agent holds ("nothing" when
empty-handed), the receptacles the agent stands at, whether each openable receptacle is open, and the
properties clean / hot / cool / sliced of the objects that can have them (false until made true).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pos_bench.truth import AGENT, Fact, Term, WorldTruth

PROPERTIES = ("clean", "hot", "cool", "sliced")

TERMS = (
    Term("holding", "nothing", ("holding nothing", "empty handed", "empty-handed", "hands are empty")),
    Term("holding", None, ("holding", "holds", "carrying", "carries")),
    Term("location", AGENT, ("held", "in inventory", "inventory", "in hand", "carried", "picked up")),
    Term("location", None, ("in", "on", "at", "inside", "located", "placed", "sits", "lies")),
    Term("open", "false", ("closed", "not open", "shut")),
    Term("open", "true", ("open", "opened")),
    Term("clean", "false", ("not clean", "dirty", "unclean")),
    Term("clean", "true", ("clean", "cleaned", "washed", "rinsed")),
    Term("hot", "false", ("not hot", "not heated")),
    Term("hot", "true", ("hot", "heated", "warm")),
    Term("cool", "false", ("not cool", "not cooled", "not chilled")),
    Term("cool", "true", ("cool", "cooled", "cold", "chilled")),
    Term("sliced", "false", ("not sliced", "unsliced", "whole")),
    Term("sliced", "true", ("sliced", "cut")),
)
"""Negated phrases come before their positive forms: the first matching term of an attribute wins."""

ENTITY_SHAPE = r"(?:[a-z]+ )?\d+"
"""ALFWorld's names: a type and an instance number ("mug 3"); a bare number is an instance named by its id
alone ("1234567890", the filler a small model writes). A name of that shape the world lacks is invented; a
name without a number ("room", "desk", "none") names no one entity and is left unscored."""


@dataclass(frozen=True)
class Household:
    """A household's state, as its engine holds it."""

    locations: Mapping[str, tuple[str, ...]]
    """Object → the receptacles holding it (empty while held or lying free)."""
    receptacles: tuple[str, ...]
    held: str = ""
    at: tuple[str, ...] = ()
    """The receptacles where the agent stands (none in the middle of the room)."""
    openable: Mapping[str, bool] = field(default_factory=dict)
    """Openable receptacle → open now."""
    properties: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)
    """Object → {property: holds now} for the properties it can take."""


def kind(entity: str) -> str:
    """The type part of a canonical name ("mug 1" → "mug")."""
    return entity.rsplit(" ", 1)[0]


def goal_facts(facts: Iterable[Fact], goal: str) -> frozenset[Fact]:
    """The facts the goal needs: every fact about an entity whose type the goal names ("put a clean mug in
    cabinet" needs where every mug is, whether each is clean, and whether each cabinet is open)."""
    words = set(re.findall(r"[a-z]+", goal.lower()))
    return frozenset(f for f in facts if f.subject != AGENT and kind(f.subject) in words)


def household_truth(world: Household, goal: str) -> WorldTruth:
    facts: set[Fact] = set()
    for obj, places in world.locations.items():
        facts.update(Fact(obj, "location", r) for r in places)
    if world.held:
        facts.add(Fact(world.held, "location", AGENT))
    facts.add(Fact(AGENT, "holding", world.held or "nothing"))
    facts.update(Fact(AGENT, "location", r) for r in world.at)
    for receptacle, opened in world.openable.items():
        facts.add(Fact(receptacle, "open", "true" if opened else "false"))
    for obj, props in world.properties.items():
        facts.update(Fact(obj, p, "true" if on else "false") for p, on in props.items())
    entities = frozenset({*world.locations, *world.receptacles, AGENT} | ({world.held} - {""}))
    return WorldTruth(
        facts=frozenset(facts),
        entities=entities,
        goal=goal_facts(facts, goal),
        terms=TERMS,
        entity_shape=ENTITY_SHAPE,
    )
