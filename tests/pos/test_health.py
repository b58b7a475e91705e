"""Belief health and diagnosis (SPEC-POS §10–11; tests T33–T47)."""

from __future__ import annotations

import pytest

from pos_bench.pos.health import (
    HealthTransition,
    Snapshot,
    TrappingConfig,
    assess,
    blocked_dimension,
    distance,
    project,
    window_of,
)

from .worlds import snaps, world


def cfg(k: int, **kw) -> TrappingConfig:
    return TrappingConfig(window_size=k, max_cycle_length=kw.pop("L", min(2, k - 1)), **kw)


def run(worlds, labels, e_ids=None, a_ids=None, gap=None, **kw):
    window = list(zip(labels, snaps(worlds, e_ids, a_ids)))
    return assess(window, gap, cfg(len(worlds), **kw)).health


def test_t33_unverified_transitions_are_not_counted():
    ts = [
        HealthTransition(i, 0, None, "look", "", False, False, progress=p)
        for i, p in enumerate([0, None, 0, 0])
    ]
    snapshots = {s.step: s for s in snaps([world(i) for i in range(4)])}
    assert window_of(ts, snapshots, 4) == []
    ts.append(HealthTransition(4, 0, None, "look", "", False, False, progress=1))
    snapshots[4] = Snapshot(4, world(4), ("e:1",))
    assert [u for u, _ in window_of(ts, snapshots, 4)] == [0, 0, 0, 1]
    assert not assess([], None, cfg(4)).health.window_ready


def test_t34_boundaries():
    distinct = [world(i) for i in range(4)]
    assert run(distinct, [0, 0, 0, 0]).health_score == 0.0
    assert run([world(0)] * 4, [1, 1, 1, 1]).health_score == 0.0
    h = run(distinct, [1, 1, 1, 1])
    assert h.health_score == 1.0 and not h.trapped and h.window_ready


def test_t35_persistence():
    h = run([world(0)] * 4, [0] * 4, e_ids=[["x", "y"], ["x"], ["x"], ["x"]])
    assert (h.persistence_e, h.health_score, h.persistent_epistemic_gaps) == (0.5, 0.5, ("x",))
    assert run([world(0)] * 4, [0] * 4, e_ids=[[], ["x"], ["x"], ["x"]]).persistence_e == 0.0
    assert run([world(0)] * 4, [0] * 4, e_ids=[["x"], ["x"], [], ["x"]]).persistence_e == 0.0


def test_t36_recurrence_ignores_gaps():
    assert run([world(0)] * 4, [0] * 4, e_ids=[["e:1"], ["e:2"], ["e:3"], ["e:4"]]).recurrence == 1.0


def test_t37_confidence_breaks_recurrence():
    h = run([world(0, probability=p) for p in (0, 0.25, 0.5, 0.75)], [0] * 4)
    assert (h.recurrence, h.recurrence_period) == (0.0, None)


def test_t38_field_order_irrelevant():
    a = world(0)
    b = {kind: {i: dict(reversed(list(r.items()))) for i, r in recs.items()} for kind, recs in a.items()}
    assert run([a, b], [0, 0], L=1).recurrence == 1.0


def test_t39_static():
    assert run([world(0)] * 4, [0] * 4).trapping_pattern == "static"


def test_t40_cycle_with_period():
    h = run([world(0), world(1)] * 2, [0] * 4)
    assert (h.recurrence, h.recurrence_period, h.trapping_pattern) == (1.0, 2, "cycle")
    h8 = run([world(0), world(1)] * 4, [0] * 8, L=4)
    assert (h8.recurrence_period, h8.trapping_pattern) == (2, "cycle")


def test_t41_no_pattern():
    h = run([world("A"), world("B"), world("A"), world("C")], [0] * 4)
    assert (h.recurrence, h.trapping_pattern, h.health_score) == (0.5, None, 0.0)


def test_t42_drift():
    worlds = []
    for i in range(4):
        w = world("focus")
        w["entities"]["e2"] = {"entity_id": "e2", "entity_type": "object", "name": f"other{i}"}
        worlds.append(w)
    full = [s.index.full() for s in snaps(worlds)]
    assert distance(full[3], full[2]) == pytest.approx(2 / 9)
    h = run(worlds, [0] * 4, gap={"gap_type": "epistemic", "target": "focus", "reason": ""})
    assert (h.trapping_pattern, h.recurrence_period) == ("drift", 1)


def test_projection_follows_relations_and_owners():
    w = world("mug")
    w["entities"]["e2"] = {"entity_id": "e2", "entity_type": "receptacle", "name": "cabinet"}
    w["entities"]["e3"] = {"entity_id": "e3", "entity_type": "receptacle", "name": "toaster"}
    w["relations"]["r2"] = {
        "relation_id": "r2",
        "source_id": "e1",
        "target_id": "e2",
        "description": "inside",
    }
    p = project(Snapshot(0, w), frozenset({"mug"}))
    assert (len(p["entities"]), len(p["states"]), len(p["relations"])) == (2, 1, 2)
    assert len(project(Snapshot(0, w), None)["entities"]) == 3


def test_t43_tie_goes_to_epistemic():
    h = run([world(0)] * 4, [0] * 4, e_ids=[["x"]] * 4, a_ids=[["y"]] * 4)
    assert (h.persistence_e, h.persistence_a, h.gap_dimension) == (1.0, 1.0, "epistemic")


def test_t44_blocked_dimension_needs_open_gaps():
    last = Snapshot(3, world(0), (), ("a:1",))
    assert blocked_dimension(0.0, 0.0, last) == "achievement"
    assert blocked_dimension(0.0, 0.0, Snapshot(3, world(0))) is None
    h = run([world(0)] * 4, [0] * 4, e_ids=[["x"], ["x"], ["x"], []], a_ids=[["y"]] * 4)
    assert h.gap_dimension == "achievement"


def test_t45_bad_config_raises():
    with pytest.raises(ValueError, match="max_cycle_length"):
        TrappingConfig(window_size=4, max_cycle_length=4)
    with pytest.raises(ValueError):
        TrappingConfig(health_threshold=1.5)


def test_t46_threshold_is_inclusive():
    worlds = [world(i) for i in range(8)]
    h = run(worlds, [1, 1, 0, 0, 0, 0, 0, 0], L=4)
    assert (h.health_score, h.trapped) == (0.25, True)
    ids = [[f"x{j}" for j in range(50)]] + [[f"x{j}" for j in range(37)]] * 7
    h = run(worlds, [0] * 8, e_ids=ids, L=4)
    assert h.health_score == pytest.approx(0.26) and not h.trapped and h.gap_dimension is None


def test_t47_active_gap_change_keeps_window():
    ts = [
        HealthTransition(
            i, i, {"gap_type": "epistemic", "target": f"g{i}"}, "look", "", False, False, progress=0
        )
        for i in range(4)
    ]
    snapshots = {s.step: s for s in snaps([world(0)] * 4)}
    assert len(window_of(ts, snapshots, 4)) == 4
