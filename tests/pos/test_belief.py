"""World invariants and delta application (SPEC-POS §2; tests T12, T14–T16, T26)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pos_bench.pos.belief import (
    Belief,
    BeliefDelta,
    BeliefError,
    Entity,
    Goal,
    Relation,
    State,
    World,
    apply_delta,
    changed_ids,
)
from pos_bench.pos.gaps import Gap, GapPointer


def base() -> Belief:
    b = Belief(Goal("put a mug in cabinet"))
    b.world.upsert_entity(
        Entity(entity_id="e1", entity_type="object", name="mug 1", attributes={"k": 1, "j": "x"})
    )
    b.world.upsert_entity(Entity(entity_id="e2", entity_type="receptacle", name="cabinet 1"))
    b.world.upsert_state(State(state_id="s1", entity_id="e2", description="cabinet 1 is closed"))
    b.world.upsert_relation(Relation(relation_id="r1", source_id="e1", target_id="s1", description="near"))
    b.world.upsert_relation(Relation(relation_id="r2", source_id="e1", target_id="e2", description="in"))
    return b


def delta(**kw) -> BeliefDelta:
    fields = {
        "remove_state_ids": [],
        "remove_relation_ids": [],
        "upsert_entities": [],
        "upsert_states": [],
        "upsert_relations": [],
        "epistemic_gaps": [],
        "achievement_gaps": [],
        "frontier": None,
    }
    return BeliefDelta(**{**fields, **kw})


def test_t12_observed_is_certain():
    s = State(state_id="s", entity_id="e1", description="d", probability=0.4, reason="because")
    assert (s.probability, s.reason) == (1.0, None)
    r = Relation.model_validate(
        {
            "relation_id": "r",
            "source": "e1",
            "dst": "e2",
            "relation": "in",
            "probability": 0.2,
            "source_type": "inferred",
            "reason": "guess",
        }
    )
    assert (r.source_id, r.target_id, r.description, r.probability) == ("e1", "e2", "in", 0.2)


def test_missing_owner_or_endpoint_is_an_error():
    w = World()
    with pytest.raises(BeliefError):
        w.upsert_state(State(state_id="s", entity_id="nobody", description="d"))
    with pytest.raises(BeliefError):
        w.upsert_relation(Relation(relation_id="r", source_id="x", target_id="y", description="d"))


def test_a_dangling_reference_error_names_the_ids_a_repair_may_use():
    w = World()
    w.upsert_entity(Entity(entity_id="e1", entity_type="furniture", name="desk 1"))
    with pytest.raises(BeliefError, match="'desk 1' is the name of entity 'e1'"):
        w.upsert_state(State(state_id="s", entity_id="desk 1", description="clear"))
    with pytest.raises(BeliefError, match="the ids are 'e1'"):
        w.upsert_relation(Relation(relation_id="r", source_id="e1", target_id="lamp", description="near"))


def test_t14_remove_state_removes_its_relations():
    b = base()
    b.world.remove_state("s1")
    b.world.remove_state("s1")
    assert set(b.world.relations) == {"r2"} and not b.world.states


def test_t15_attribute_merge_and_limits():
    b = base()
    b.world.upsert_entity(
        Entity(entity_id="e1", entity_type="object", name="mug 1", attributes={"k": None, "m": 2})
    )
    assert b.world.entities["e1"].attributes == {"j": "x", "m": 2}
    with pytest.raises(ValidationError):
        Entity(entity_id="e3", entity_type="t", name="n", attributes={"k": [1, 2]})
    with pytest.raises(ValidationError):
        Entity(entity_id="e3", entity_type="t", name="n", attributes={"k": "x" * 4100})


def test_entity_without_attributes_serialises_without_key():
    assert "attributes" not in base().world.to_dict()["entities"]["e2"]


def test_t16_remove_then_upsert_same_relation_keeps_upsert():
    b = base()
    new = Relation(relation_id="r2", source_id="e2", target_id="e1", description="holds")
    cand = apply_delta(b, delta(remove_relation_ids=["r2"], upsert_relations=[new]))
    assert cand.world.relations["r2"].description == "holds"
    assert b.world.relations["r2"].description == "in"  # committed belief untouched


def test_delta_stabilises_gaps_and_keeps_active_gap():
    b = base()
    b.epistemic_gaps = [Gap(target="locate mug 3", reason="old")]
    b.active_gap = GapPointer(gap_type="epistemic", target="locate mug 3")
    cand = apply_delta(
        b,
        delta(
            epistemic_gaps=[Gap(target="locate mug 3 in kitchen", reason="new")],
            achievement_gaps=[Gap(target="put mug in cabinet", reason="r")],
            frontier=GapPointer(gap_type="achievement", target="put mug in cabinet"),
        ),
    )
    assert cand.epistemic_gaps == [Gap(target="locate mug 3", reason="new")]
    assert cand.active_gap == b.active_gap


def test_delta_requires_every_key():
    with pytest.raises(ValidationError):
        BeliefDelta.model_validate({"remove_state_ids": []})


def test_t26_changed_ids():
    before = base()
    after = apply_delta(
        before,
        delta(
            remove_state_ids=["s1"],
            upsert_entities=[
                Entity(entity_id="e2", entity_type="receptacle", name="cabinet 1"),
                Entity(entity_id="e1", entity_type="object", name="mug 1", attributes={"k": 5}),
            ],
            upsert_states=[State(state_id="s9", entity_id="e1", description="mug is hot")],
        ),
    )
    got = changed_ids(before.world.to_dict(), after.world.to_dict())
    assert got == {"entities": ["e1"], "states": ["s1", "s9"], "relations": ["r1"]}


def test_record_ids_are_trimmed_of_spaces_and_list_punctuation():
    from pos_bench.pos.belief import Relation, State

    assert State(state_id=" s1 ", entity_id="e1, ", description="open").entity_id == "e1"
    relation = Relation(relation_id="r1;", source_id=" e1", target_id="s1 ,", description="has")
    assert (relation.relation_id, relation.source_id, relation.target_id) == ("r1", "e1", "s1")
