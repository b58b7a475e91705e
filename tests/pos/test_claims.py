"""PoS claims (issue 28): the committed belief as claims, and the update history as audited updates."""

from __future__ import annotations

from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.pos.claims import at_diagnoses, audited_updates, world_claims
from pos_bench.pos.method import Pos
from pos_bench.protocols import ClaimingMethod
from pos_bench.truth import Claim, Observed, episode_accuracy, judge
from pos_bench.types import Decision, Step

from .script import INIT, PosScript, delta

WORLD = {
    "entities": {
        "e1": {"entity_id": "e1", "entity_type": "object", "name": "mug 1", "attributes": {"color": "red"}},
        "e2": {"entity_id": "e2", "entity_type": "receptacle", "name": "cabinet 1"},
    },
    "states": {
        "s1": {
            "state_id": "s1",
            "entity_id": "e2",
            "description": "closed",
            "probability": 0.7,
            "reason": "guess",
            "source_type": "inferred",
        }
    },
    "relations": {
        "r1": {
            "relation_id": "r1",
            "source_id": "e1",
            "target_id": "s1",
            "description": "inside",
            "probability": 1.0,
            "reason": None,
            "source_type": "observed",
        }
    },
}


def test_every_record_of_the_world_is_a_claim_with_its_source_and_probability() -> None:
    claims = world_claims(WORLD)
    assert claims == (
        Claim("mug 1", ref="e1", source="entity"),
        Claim("cabinet 1", ref="e2", source="entity"),
        Claim("mug 1", "color: red", ref="e1.color", source="attribute"),
        Claim("cabinet 1", "closed", probability=0.7, source="inferred", ref="s1"),
        # a relation to a state points at the state's owner and carries its description
        Claim("mug 1", "inside closed", "cabinet 1", probability=1.0, source="observed", ref="r1"),
    )


def test_pos_claims_its_committed_belief_and_its_history_scores_each_audit() -> None:
    bench = ToyBenchmark(n_tasks=1)
    task = bench.tasks()[0]
    env = bench.make_env(None)
    obs = env.reset(task)
    moved = delta(
        upsert_relations=[
            {
                "relation_id": "r1",
                "source_id": "e1",
                "target_id": "e2",
                "description": "in",
                "source_type": "observed",
            }
        ]
    )
    method = Pos(PosScript(init=[INIT], updates=[moved]).model())
    assert isinstance(method, ClaimingMethod)
    method.start(task, bench.brief, obs)
    assert {c.subject for c in method.claims()} == {"mug 1", "cabinet 1"}
    after = env.step("look")
    method.update(Step(0, obs, Decision(thought="", action="look"), after))
    relation = next(c for c in method.claims() if c.ref == "r1")
    truth = env.truth()
    mug_in_cabinet = env.world.where["mug 1"] == "cabinet 1"
    assert [j.verdict for j in judge([relation], truth)] == ["true" if mug_in_cabinet else "false"]
    updates = audited_updates(method.report()["belief_update_history"], {0: truth})
    assert [(u.step, u.status) for u in updates] == [(0, "validated")]
    assert updates[0].committed == method.claims()
    assert relation not in updates[0].before


def test_accuracy_at_each_trapping_diagnosis_picks_the_trapped_steps() -> None:
    env = ToyBenchmark(n_tasks=1).make_env(None)
    env.reset(ToyBenchmark(n_tasks=1).tasks()[0])
    world = env.truth()  # nothing is held at the start: "mug 1 held" is false
    steps = [Observed(i, world, (Claim("mug 1", "held"),)) for i in range(4)]
    history = [
        {"step": 1, "trapped": False, "trapping_pattern": None},
        {"step": 2, "trapped": True, "trapping_pattern": "Static"},
        {"step": 7, "trapped": True, "trapping_pattern": "Cycle"},  # not measured
    ]
    picked = at_diagnoses(history, episode_accuracy(steps))
    assert [(pattern, s.step, s.false) for pattern, s in picked] == [("Static", 2, 1)]
