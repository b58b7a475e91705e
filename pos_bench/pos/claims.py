"""What a PoS belief claims about the world (issue 28), read from `World.to_dict()` views, and the
Sentinel's decisions as audited updates to score against the truth (`pos_bench.truth.audit_accuracy`).

Every entity is an existence claim; every state is a claim about its entity; every relation is a claim
about its source's entity pointing at its target's entity (a state endpoint stands for its owner, and its
description joins the claim's text). Probability and source type come with each claim.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pos_bench.truth import AuditedUpdate, Claim, EpisodeAccuracy, StepAccuracy, WorldTruth

WorldView = Mapping[str, Mapping[str, Mapping[str, Any]]]
"""`World.to_dict()`: entities, states and relations keyed by id."""


def world_claims(world: WorldView) -> tuple[Claim, ...]:
    entities, states = world.get("entities", {}), world.get("states", {})

    def owner(node: str) -> tuple[str, str]:
        """(entity name, extra text) of a relation endpoint."""
        if node in entities:
            return entities[node]["name"], ""
        state = states.get(node)
        if state is None:
            return node, ""
        return entities.get(state["entity_id"], {}).get("name", state["entity_id"]), state["description"]

    claims = [Claim(e["name"], ref=i, source="entity") for i, e in entities.items()]
    for i, e in entities.items():
        claims += [
            Claim(e["name"], f"{key}: {value}", ref=f"{i}.{key}", source="attribute")
            for key, value in e.get("attributes", {}).items()
        ]
    for i, s in states.items():
        subject = entities.get(s["entity_id"], {}).get("name", s["entity_id"])
        claims.append(
            Claim(subject, s["description"], probability=s["probability"], source=s["source_type"], ref=i)
        )
    for i, r in world.get("relations", {}).items():
        subject, before = owner(r["source_id"])
        target, after = owner(r["target_id"])
        text = " ".join(t for t in (before, r["description"], after) if t)
        claims.append(
            Claim(subject, text, target, probability=r["probability"], source=r["source_type"], ref=i)
        )
    return tuple(claims)


def audited_updates(
    history: Sequence[Mapping[str, Any]], truths: Mapping[int, WorldTruth]
) -> tuple[AuditedUpdate, ...]:
    """PoS's `belief_update_history` (its report, or the memory events' candidate / committed beliefs) as
    audited updates, each with the truth after its step (`truths`: step → truth; step -1 is the reset).
    Updates whose step has no truth are left out."""
    out, before = [], ()
    for entry in history:
        committed = world_claims(entry["final_belief"]["world"])
        if entry["step"] in truths:
            candidate = world_claims(entry["candidate_belief"]["world"])
            out.append(
                AuditedUpdate(
                    entry["step"], entry["status"], before, candidate, committed, truths[entry["step"]]
                )
            )
        before = committed
    return tuple(out)


def at_diagnoses(
    health_history: Sequence[Mapping[str, Any]], accuracy: EpisodeAccuracy
) -> tuple[tuple[str, StepAccuracy], ...]:
    """Belief accuracy at each trapping diagnosis: (pattern, the step's measures) for every entry of PoS's
    `belief_health_history` that was trapped and whose step was measured."""
    measured = {s.step: s for s in accuracy.steps}
    return tuple(
        (str(h.get("trapping_pattern")), measured[h["step"]])
        for h in health_history
        if h.get("trapped") and h["step"] in measured
    )
