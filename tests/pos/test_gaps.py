"""Gap identity and Active-Gap selection (SPEC-POS §3, §4; tests T01–T11)."""

from __future__ import annotations

import pytest

from pos_bench.pos.gaps import (
    Gap,
    GapIds,
    GapPointer,
    equivalent,
    match_score,
    same_pointer,
    select_active_gap,
    stabilise,
)


def gap(target: str, reason: str = "r") -> Gap:
    return Gap(target=target, reason=reason)


def test_t01_exact_after_normalisation():
    assert equivalent("Find  the MUG", "find the mug")


def test_t02_superset_target_matches():
    assert match_score("locate mug 3", "locate mug 3 in kitchen") == pytest.approx(0.88)
    assert equivalent("locate mug 3", "locate mug 3 in kitchen")


def test_t03_different_verb_does_not_match():
    assert match_score("heat mug 3", "cool mug 3") == pytest.approx(0.6166, abs=1e-3)
    assert not equivalent("heat mug 3", "cool mug 3")


def test_t04_single_content_token_never_fuzzy_matches():
    assert not equivalent("the mug", "a mug")


def test_t05_stopwords_and_punctuation_ignored():
    assert match_score("Is the signal present?", "is signal present") == pytest.approx(1.0)
    assert equivalent("Is the signal present?", "is signal present")


def test_reference_float_below_threshold():
    """2 tokens against a 6-token superset is 0.7999…, which does not match (§3.3)."""
    assert not equivalent("alpha beta", "alpha beta gamma delta epsilon zeta")


def test_t06_reconcile_reuses_and_allocates():
    ids = GapIds()
    assert ids.reconcile("epistemic", [gap("find the mug 3"), gap("open cabinet 2")]) == ["e:1", "e:2"]
    assert ids.reconcile("epistemic", [gap("find  the Mug 3"), gap("heat apple in microwave")]) == [
        "e:1",
        "e:3",
    ]


def test_reconcile_types_are_independent():
    ids = GapIds()
    assert ids.reconcile("achievement", [gap("put mug in cabinet")]) == ["a:1"]
    assert ids.reconcile("epistemic", [gap("put mug in cabinet")]) == ["e:1"]


def test_t07_ambiguous_match_gets_fresh_id():
    ids = GapIds()
    ids.reconcile("epistemic", [gap("locate mug 3"), gap("locate mug 3 in kitchen")])
    assert ids.reconcile("epistemic", [gap("locate mug 3 kitchen")]) == ["e:3"]


def test_rejected_update_keeps_ids():
    ids = GapIds()
    gaps = [gap("find the mug"), gap("find the key")]
    assert ids.reconcile("epistemic", gaps) == ids.reconcile("epistemic", gaps) == ["e:1", "e:2"]


def test_t08_stabilise_keeps_old_wording_and_new_reason():
    out = stabilise(
        [gap("locate mug 3 in kitchen", "new"), gap("open the fridge", "x")], [gap("locate mug 3", "old")]
    )
    assert out[0] == gap("locate mug 3", "new")
    assert out[1] == gap("open the fridge", "x")


def test_t09_sticky_active_gap():
    previous = GapPointer(gap_type="epistemic", target="locate mug 3")
    proposal = GapPointer(gap_type="achievement", target="heat mug 3")
    gaps = {"epistemic": [gap("locate mug 3 in kitchen")], "achievement": [gap("heat mug 3")]}
    assert select_active_gap(previous, proposal, gaps) == previous


def test_t10_fallbacks():
    gone = GapPointer(gap_type="epistemic", target="find the key")
    gaps = {"epistemic": [gap("locate mug 3")], "achievement": [gap("heat mug 3 with microwave")]}
    valid = GapPointer(gap_type="achievement", target="heat mug 3")
    assert select_active_gap(gone, valid, gaps) == GapPointer(
        gap_type="achievement", target="heat mug 3 with microwave"
    )
    invalid = GapPointer(gap_type="achievement", target="wash the plate")
    assert select_active_gap(gone, invalid, gaps) == GapPointer(gap_type="epistemic", target="locate mug 3")
    only_a = {"epistemic": [], "achievement": [gap("heat mug 3")]}
    assert select_active_gap(gone, None, only_a) == GapPointer(gap_type="achievement", target="heat mug 3")
    assert select_active_gap(gone, valid, {"epistemic": [], "achievement": []}) is None


def test_t11_pointer_change_is_equivalence_based():
    a = GapPointer(gap_type="epistemic", target="locate mug 3")
    assert same_pointer(a, GapPointer(gap_type="epistemic", target="locate mug 3 in kitchen"))
    assert not same_pointer(a, GapPointer(gap_type="achievement", target="locate mug 3"))
    assert not same_pointer(a, None)
    assert same_pointer(None, None)
