"""The belief state as typed records: World (entities, states, relations), Goal, gaps and the Active Gap
(SPEC-POS §2), with the invariants the paper's schema implies and the incremental delta the belief model sends.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, field_validator, model_validator

from pos_bench.pos.gaps import GAP_TYPES, Gap, GapPointer, resolve, select_active_gap, stabilise

Scalar = str | int | float | bool | None
ATTRIBUTE_BUDGET = 4096
"""Characters allowed for an entity's attributes as compact sorted JSON (§2.1)."""

_RELATION_ALIASES = {
    "source_entity_id": "source_id",
    "src_entity_id": "source_id",
    "source": "source_id",
    "src": "source_id",
    "target_entity_id": "target_id",
    "dst_entity_id": "target_id",
    "target": "target_id",
    "dst": "target_id",
    "relation_type": "description",
    "relation": "description",
    "type": "description",
}


class BeliefError(ValueError):
    """A delta that cannot be applied: a missing owner or endpoint, or a record that breaks the schema."""


def compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _trim_id(value: str) -> str:
    """Ids are compared without surrounding spaces or list punctuation (a small model writes "e1, ")."""
    return value.strip().strip(",;").strip()


RecordId = Annotated[str, AfterValidator(_trim_id)]


class Entity(BaseModel):
    """A concrete thing or actor. Attributes hold stable scalar lookup values only; conditions are States."""

    model_config = ConfigDict(extra="forbid")
    entity_id: RecordId
    entity_type: str
    name: str
    attributes: dict[str, Scalar] = {}

    @field_validator("attributes")
    @classmethod
    def _budget(cls, value: dict[str, Scalar]) -> dict[str, Scalar]:
        if any(not k for k in value):
            raise ValueError("attribute keys must be non-empty strings")
        size = len(compact_json(value))
        if size > ATTRIBUTE_BUDGET:
            raise ValueError(f"attributes take {size} characters as JSON; the budget is {ATTRIBUTE_BUDGET}")
        return value


def _observed_rule(data: Any) -> Any:
    """Observed facts are certain and need no reason (§2.4), whatever the model sent."""
    if isinstance(data, dict) and data.get("source_type", "observed") == "observed":
        return {**data, "probability": 1.0, "reason": None}
    return data


class State(BaseModel):
    """One condition of one entity."""

    model_config = ConfigDict(extra="forbid")
    state_id: RecordId
    entity_id: RecordId
    description: str
    probability: float = 1.0
    reason: str | None = None
    source_type: Literal["observed", "inferred"] = "observed"

    _observed = model_validator(mode="before")(_observed_rule)


class Relation(BaseModel):
    """A directed fact between two nodes (entity or state ids)."""

    model_config = ConfigDict(extra="forbid")
    relation_id: RecordId
    source_id: RecordId
    target_id: RecordId
    description: str
    probability: float = 0.5
    reason: str | None = None
    source_type: Literal["observed", "inferred"] = "observed"

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            renamed = {}
            for key, value in data.items():
                name = _RELATION_ALIASES.get(key, key)
                renamed[key if name in data and name != key else name] = value  # never shadow a real field
            data = renamed
        return _observed_rule(data)


class World:
    """Entities, states and relations keyed by id; every mutation keeps owners and endpoints valid."""

    def __init__(self) -> None:
        self.entities: dict[str, Entity] = {}
        self.states: dict[str, State] = {}
        self.relations: dict[str, Relation] = {}

    def upsert_entity(self, entity: Entity) -> None:
        """Insert, or replace the fields and merge the attributes of an existing entity (null deletes a key)."""
        old = self.entities.get(entity.entity_id)
        merged = dict(old.attributes) if old else {}
        for key, value in entity.attributes.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        try:
            self.entities[entity.entity_id] = Entity(**{**entity.model_dump(), "attributes": merged})
        except ValueError as error:
            raise BeliefError(f"entity {entity.entity_id}: {error}") from error

    def upsert_state(self, state: State) -> None:
        if state.entity_id not in self.entities:
            raise BeliefError(
                f"state {state.state_id} names owner {state.entity_id!r}, which is not an entity"
                f"{self._hint(state.entity_id, self.entities)}"
            )
        self.states[state.state_id] = state

    def upsert_relation(self, relation: Relation) -> None:
        for end in (relation.source_id, relation.target_id):
            if end not in self.entities and end not in self.states:
                raise BeliefError(
                    f"relation {relation.relation_id} endpoint {end!r} is neither an entity nor a state"
                    f"{self._hint(end, {**self.entities, **self.states})}"
                )
        self.relations[relation.relation_id] = relation

    def _hint(self, wrong: str, ids: Mapping[str, Any], shown: int = 8) -> str:
        """What a model needs to fix a dangling reference: the ids it may use (a name is not an id)."""
        named = [i for i, e in self.entities.items() if e.name == wrong]
        if named:
            return f" id: {wrong!r} is the name of entity {named[0]!r}; refer to an entity by its entity_id"
        known = ", ".join(repr(i) for i in list(ids)[:shown]) + (", …" if len(ids) > shown else "")
        return f" id (the ids are {known}; refer to one of them, or add the record)" if ids else " id"

    def remove_state(self, state_id: str) -> None:
        """Delete a state and every relation touching it (idempotent)."""
        self.states.pop(state_id, None)
        for rid in [r for r, rel in self.relations.items() if state_id in (rel.source_id, rel.target_id)]:
            del self.relations[rid]

    def remove_relation(self, relation_id: str) -> None:
        self.relations.pop(relation_id, None)

    def to_dict(self) -> dict[str, dict[str, dict[str, Any]]]:
        def entity(e: Entity) -> dict[str, Any]:
            data = e.model_dump()
            if not data["attributes"]:
                del data["attributes"]
            return data

        return {
            "entities": {k: entity(v) for k, v in self.entities.items()},
            "states": {k: v.model_dump() for k, v in self.states.items()},
            "relations": {k: v.model_dump() for k, v in self.relations.items()},
        }

    def __len__(self) -> int:
        return len(self.entities) + len(self.states) + len(self.relations)


@dataclass(frozen=True)
class Goal:
    user_input: str
    specification: str = ""


@dataclass
class Belief:
    """B_t: world estimate, goal, the two ordered gap lists and the Active Gap pointer."""

    goal: Goal
    world: World = field(default_factory=World)
    epistemic_gaps: list[Gap] = field(default_factory=list)
    achievement_gaps: list[Gap] = field(default_factory=list)
    active_gap: GapPointer | None = None

    def gaps(self) -> dict[str, list[Gap]]:
        return {"epistemic": self.epistemic_gaps, "achievement": self.achievement_gaps}

    def copy(self) -> Belief:
        return copy.deepcopy(self)

    def expanded_active_gap(self) -> dict[str, str] | None:
        """The Active Gap as `{gap_type, target, reason}`, or None when it no longer resolves (§2.8)."""
        return expand(self.active_gap, self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "goal": {"user_input": self.goal.user_input, "specification": self.goal.specification},
            "world": self.world.to_dict(),
            "epistemic_gaps": [g.model_dump() for g in self.epistemic_gaps],
            "achievement_gaps": [g.model_dump() for g in self.achievement_gaps],
            "frontier": self.active_gap.model_dump() if self.active_gap else None,
        }


def expand(pointer: GapPointer | None, belief: Belief) -> dict[str, str] | None:
    gap = resolve(pointer, belief.gaps()[pointer.gap_type]) if pointer else None
    return None if gap is None or pointer is None else {"gap_type": pointer.gap_type, **gap.model_dump()}


class BeliefInit(BaseModel):
    """What the belief-init call returns (§6.2)."""

    model_config = ConfigDict(extra="forbid")
    goal_specification: str
    entities: list[Entity]
    states: list[State]
    relations: list[Relation]
    epistemic_gaps: list[Gap]
    achievement_gaps: list[Gap]
    frontier: GapPointer | None


class BeliefDelta(BaseModel):
    """What a belief-update call returns (§6.3): an incremental change plus the complete gap lists."""

    model_config = ConfigDict(extra="forbid")
    remove_state_ids: list[str]
    remove_relation_ids: list[str]
    upsert_entities: list[Entity]
    upsert_states: list[State]
    upsert_relations: list[Relation]
    epistemic_gaps: list[Gap]
    achievement_gaps: list[Gap]
    frontier: GapPointer | None


def apply_delta(committed: Belief, delta: BeliefDelta | BeliefInit) -> Belief:
    """Build a candidate on a copy of `committed` (§5.3 step 4); the committed belief is never touched.

    Raises BeliefError on a missing owner or endpoint."""
    candidate = committed.copy()
    world = candidate.world
    if isinstance(delta, BeliefInit):
        candidate.goal = Goal(committed.goal.user_input, delta.goal_specification)
        entities, states, relations = delta.entities, delta.states, delta.relations
    else:
        for rid in delta.remove_relation_ids:
            world.remove_relation(rid)
        for sid in delta.remove_state_ids:
            world.remove_state(sid)
        entities, states, relations = delta.upsert_entities, delta.upsert_states, delta.upsert_relations
    for entity in entities:
        world.upsert_entity(entity)
    for state in states:
        world.upsert_state(state)
    for relation in relations:
        world.upsert_relation(relation)
    candidate.epistemic_gaps = stabilise(delta.epistemic_gaps, committed.epistemic_gaps)
    candidate.achievement_gaps = stabilise(delta.achievement_gaps, committed.achievement_gaps)
    candidate.active_gap = select_active_gap(committed.active_gap, delta.frontier, candidate.gaps())
    return candidate


def changed_ids(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Per kind, the sorted ids added, removed or modified between two `World.to_dict()` views (§7.3)."""
    return {
        kind: sorted(
            i for i in before[kind].keys() | after[kind].keys() if before[kind].get(i) != after[kind].get(i)
        )
        for kind in ("entities", "states", "relations")
    }


def gap_targets(*beliefs: Belief) -> set[str]:
    return {g.target for b in beliefs for t in GAP_TYPES for g in b.gaps()[t]}
