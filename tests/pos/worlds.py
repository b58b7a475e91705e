"""World builders shared by the PoS tests (SPEC-POS §17 helper `world(v)`)."""

from __future__ import annotations

from typing import Any

from pos_bench.pos.health import Snapshot


def world(v: Any, *, probability: float = 0.5) -> dict[str, dict[str, dict[str, Any]]]:
    """One entity e1 named v, its state s1 described v, one relation e1 → s1 described v."""
    v = str(v)
    return {
        "entities": {"e1": {"entity_id": "e1", "entity_type": "object", "name": v}},
        "states": {
            "s1": {
                "state_id": "s1",
                "entity_id": "e1",
                "description": v,
                "probability": probability,
                "reason": "guess",
                "source_type": "inferred",
            }
        },
        "relations": {
            "r1": {
                "relation_id": "r1",
                "source_id": "e1",
                "target_id": "s1",
                "description": v,
                "probability": 0.5,
                "reason": "guess",
                "source_type": "inferred",
            }
        },
    }


def snaps(
    worlds: list[dict],
    e_ids: list[list[str]] | None = None,
    a_ids: list[list[str]] | None = None,
    start: int = 0,
) -> list[Snapshot]:
    e_ids = e_ids or [["e:1"]] * len(worlds)
    a_ids = a_ids or [[]] * len(worlds)
    return [
        Snapshot(start + i, w, tuple(e), tuple(a)) for i, (w, e, a) in enumerate(zip(worlds, e_ids, a_ids))
    ]
