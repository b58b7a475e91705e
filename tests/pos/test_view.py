"""Active-Gap subgraph filter (SPEC-POS §9.2; test T59)."""

from __future__ import annotations

from pos_bench.pos.belief import Belief, Entity, Goal, Relation, State
from pos_bench.pos.gaps import Gap, GapPointer
from pos_bench.pos.view import subgraph


def test_t59_subgraph():
    b = Belief(Goal("heat a mug and put it in cabinet"))
    b.world.upsert_entity(Entity(entity_id="e1", entity_type="object", name="mug 3"))
    b.world.upsert_entity(Entity(entity_id="e2", entity_type="receptacle", name="cabinet 1"))
    b.world.upsert_entity(Entity(entity_id="e3", entity_type="receptacle", name="toaster 1"))
    b.world.upsert_state(State(state_id="s1", entity_id="e1", description="mug 3 is cold"))
    b.world.upsert_relation(Relation(relation_id="r1", source_id="e1", target_id="e2", description="inside"))
    b.achievement_gaps = [Gap(target="make mug 3 hot", reason="mug 3 is not hot yet")]
    b.active_gap = GapPointer(gap_type="achievement", target="make mug 3 hot")
    sub = subgraph(b.world.to_dict(), b.expanded_active_gap())
    assert (set(sub["entities"]), set(sub["states"]), set(sub["relations"])) == ({"e1", "e2"}, {"s1"}, {"r1"})
    assert subgraph(b.world.to_dict(), None) == {"entities": {}, "states": {}, "relations": {}}
