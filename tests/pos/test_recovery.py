"""Recovery target and constraint composition (SPEC-POS §12; tests T48–T51, T54, T55)."""

from __future__ import annotations

import copy
import json

import pytest

from pos_bench.pos.gaps import Gap, GapPointer
from pos_bench.pos.health import HealthTransition, TrappingConfig, assess
from pos_bench.pos.recovery import RecoveryConfig, compose, cycle_evidence

from .worlds import snaps, world


def trapped(worlds, labels=None, e_ids=None, a_ids=None, gap=None, k=None):
    k = k or len(worlds)
    labels = labels or [0] * k
    return assess(
        list(zip(labels, snaps(worlds, e_ids, a_ids))), gap, TrappingConfig(window_size=k, max_cycle_length=2)
    )


def transitions(n):
    return [HealthTransition(i, 0, None, f"go to shelf {i}", "", False, False, progress=0) for i in range(n)]


GAPS = {
    "epistemic": [Gap(target="find where mug 3 is", reason="unseen")],
    "achievement": [Gap(target="make mug 3 hot", reason="cold")],
}
IDS = {"epistemic": ["e:1"], "achievement": ["a:1"]}


@pytest.mark.parametrize("active_type", ["epistemic", "achievement"])
@pytest.mark.parametrize("blocked", ["epistemic", "achievement"])
def test_t48_directive_targets_blocked_type(active_type, blocked):
    e_ids = [["e:1"]] * 4 if blocked == "epistemic" else [["e:1"], [], [], ["e:1"]]
    a = trapped([world(0)] * 4, e_ids=e_ids, a_ids=[["a:1"]] * 4)
    assert a.health.gap_dimension == blocked
    active = GapPointer(gap_type=active_type, target=GAPS[active_type][0].target)
    before = (copy.deepcopy(a.health), active.model_copy())
    d = compose(
        a,
        gaps=GAPS,
        gap_ids=IDS,
        active_gap=active,
        step=4,
        transitions=transitions(4),
        snapshots=[s for _, s in a.window],
        config=RecoveryConfig(),
        epsilon=0.15,
    )
    assert d.gap_dimension == d.recovery_frontier["gap_type"] == blocked
    assert d.trigger_frontier == active.model_dump()
    assert f"{blocked} recovery gap" in d.instruction and GAPS[blocked][0].target in d.instruction
    assert (a.health, active) == before
    assert d.applies_from_step == d.started_at_step == 4


def test_t49_no_fallback_to_other_dimension():
    a = trapped([world(0)] * 4, e_ids=[["e:1"], [], [], []], a_ids=[["a:1"]] * 4)
    assert a.health.gap_dimension == "achievement"
    gaps = {"epistemic": GAPS["epistemic"], "achievement": []}
    d = compose(
        a,
        gaps=gaps,
        gap_ids={"epistemic": ["e:1"], "achievement": []},
        active_gap=GapPointer(gap_type="epistemic", target="find where mug 3 is"),
        step=4,
        transitions=transitions(4),
        snapshots=[],
        config=RecoveryConfig(),
        epsilon=0.15,
    )
    assert d is None


def test_t50_persistent_gap_preferred():
    gaps = {
        "epistemic": [Gap(target="where is the soap", reason="r")],
        "achievement": [
            Gap(target="Return book to shelf", reason="r"),
            Gap(target="Wash dirty mug", reason="r"),
        ],
    }
    a = trapped(
        [world(0)] * 4, e_ids=[["e:1"], [], [], ["e:1"]], a_ids=[["a:2"], ["a:2"], ["a:2"], ["a:1", "a:2"]]
    )
    active = GapPointer(gap_type="epistemic", target="where is the soap")
    d = compose(
        a,
        gaps=gaps,
        gap_ids={"epistemic": ["e:1"], "achievement": ["a:1", "a:2"]},
        active_gap=active,
        step=4,
        transitions=transitions(4),
        snapshots=[],
        config=RecoveryConfig(),
        epsilon=0.15,
    )
    assert d.recovery_frontier == {"gap_type": "achievement", "target": "Wash dirty mug"}
    assert active == GapPointer(gap_type="epistemic", target="where is the soap")


def test_t51_active_gap_preferred_among_candidates():
    gaps = {
        "epistemic": [
            Gap(target="where is the soap", reason="r"),
            Gap(target="where is the key", reason="r"),
        ],
        "achievement": [],
    }
    a = trapped([world(0)] * 4, e_ids=[["e:1", "e:2"]] * 4)
    active = GapPointer(gap_type="epistemic", target="where is the key")
    d = compose(
        a,
        gaps=gaps,
        gap_ids={"epistemic": ["e:1", "e:2"], "achievement": []},
        active_gap=active,
        step=4,
        transitions=transitions(4),
        snapshots=[],
        config=RecoveryConfig(),
        epsilon=0.15,
    )
    assert d.recovery_frontier["target"] == "where is the key"


def test_t54_cycle_evidence():
    snapshots = snaps([world(i % 2) for i in range(5)], start=-1)
    window = [(0, s) for s in snapshots[1:]]
    a = assess(window, None, TrappingConfig(window_size=4, max_cycle_length=2))
    assert a.health.recurrence_period == 2
    loop = cycle_evidence(a, 2, {i: f"act {i}" for i in range(4)}, snapshots, epsilon=0.15)
    assert [item["step"] for item in loop] == [2, 3]
    assert loop[0]["world_before"] == snapshots[2].world  # the snapshot at step 1
    assert loop[1]["action"] == "act 3"


def test_t55_static_constraint_quotes_last_verified_action():
    a = trapped([world(0)] * 4)
    assert a.health.trapping_pattern == "static"
    ts = transitions(4) + [HealthTransition(4, 0, None, "examine cabinet 1", "", False, False, progress=None)]
    d = compose(
        a,
        gaps=GAPS,
        gap_ids=IDS,
        active_gap=GapPointer(gap_type="epistemic", target="find where mug 3 is"),
        step=5,
        transitions=ts,
        snapshots=[],
        config=RecoveryConfig(),
        epsilon=0.15,
    )
    assert json.dumps("go to shelf 3") in d.pattern_part and "examine cabinet 1" not in d.instruction
    assert d.instruction == f"{d.pattern_part} {d.gap_part}"
    assert [t["step"] for t in d.low_progress_transitions] == [0, 1, 2, 3]


def test_generic_mode_targets_active_gap_without_gap_part():
    a = trapped([world(0)] * 4, e_ids=[["e:1"], [], [], ["e:1"]], a_ids=[["a:1"]] * 4)
    active = GapPointer(gap_type="epistemic", target="find where mug 3 is")
    d = compose(
        a,
        gaps=GAPS,
        gap_ids=IDS,
        active_gap=active,
        step=4,
        transitions=transitions(4),
        snapshots=[],
        config=RecoveryConfig(mode="generic"),
        epsilon=0.15,
    )
    assert d.recovery_frontier == active.model_dump() and "recovery gap" not in d.instruction
    assert d.gap_part == "" and "Active Gap" in d.instruction


def test_instruction_is_pattern_space_gap_with_target_verbatim():
    """§12.2: a target with trailing whitespace is kept as is, and the join is exactly one space."""
    a = trapped([world(0)] * 4, e_ids=[["e:1"]] * 4, a_ids=[["a:1"]] * 4)
    gaps = {
        "epistemic": [Gap(target="find where mug 3 is  ", reason="unseen")],
        "achievement": GAPS["achievement"],
    }
    d = compose(
        a,
        gaps=gaps,
        gap_ids=IDS,
        active_gap=GapPointer(gap_type="epistemic", target="find where mug 3 is  "),
        step=4,
        transitions=transitions(4),
        snapshots=[s for _, s in a.window],
        config=RecoveryConfig(),
        epsilon=0.15,
    )
    assert d.instruction == d.pattern_part + " " + d.gap_part
    assert d.instruction.endswith("find where mug 3 is  ")
