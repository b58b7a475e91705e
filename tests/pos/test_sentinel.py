"""Sentinel windows, grounding and progress labels (SPEC-POS §7, §8; tests T17–T21, T24, T25, T28–T30)."""

from __future__ import annotations

import pytest

from pos_bench.pos.sentinel import (
    AuditIssue,
    SentinelConfig,
    audit_window,
    compact,
    confidence_distance,
    diagnostic_progress,
    grounding_problem,
)

EVIDENCE = [
    {"step": 3, "action": "open drawer 1", "observation": "You open the drawer 1. In it, you see a Spoon 1."},
    {"step": 4, "action": "go to shelf 1", "observation": "On the shelf 1, you see a mug 2."},
]
KNOWN = {"e1", "s1", "find where mug 1 is"}


def issue(**kw) -> AuditIssue:
    base = {
        "targets": ["s1"],
        "issue_type": "external",
        "problem": "p",
        "evidence_step": 3,
        "evidence_quote": "you see a Spoon 1",
        "evidence": "e",
        "suggestion": "s",
    }
    return AuditIssue(**{**base, **kw})


def test_grounded_issue_passes():
    assert grounding_problem(issue(), EVIDENCE, KNOWN) is None
    assert (
        grounding_problem(
            issue(targets=["find where mug 1 is"], evidence_quote="open drawer 1"), EVIDENCE, KNOWN
        )
        is None
    )


def test_t17_paraphrased_quote_dropped():
    assert grounding_problem(issue(evidence_quote="the drawer holds a spoon"), EVIDENCE, KNOWN)


def test_t18_case_and_whitespace_ignored():
    assert grounding_problem(issue(evidence_quote="YOU  SEE a\nspoon 1"), EVIDENCE, KNOWN) is None


def test_t19_wrong_or_missing_step_dropped():
    assert grounding_problem(issue(evidence_step=4), EVIDENCE, KNOWN)
    assert grounding_problem(issue(evidence_step=1), EVIDENCE, KNOWN)


def test_t20_unknown_target_dropped():
    assert grounding_problem(issue(targets=["s1", "s77"]), EVIDENCE, KNOWN)
    assert grounding_problem(issue(targets=[]), EVIDENCE, KNOWN)


def raw(n: int) -> list[dict]:
    return [{"step": i, "action": None if i < 0 else f"a{i}", "observation": f"o{i}"} for i in range(-1, n)]


@pytest.mark.parametrize("g,first_global", [(8, 8), (32, 32)])
def test_t24_audit_windows(g, first_global):
    config = SentinelConfig(global_audit_every_steps=g)
    mode, ev = audit_window(raw(0), 0, config)
    assert mode == "local" and [e["step"] for e in ev] == [-1]
    for n in range(1, 17):
        mode, ev = audit_window(raw(n), n, config)
        if n % g == 0:
            assert mode == "global" and [e["step"] for e in ev] == list(range(-1, n))
        else:
            assert mode == "local" and [e["step"] for e in ev] == list(range(max(-1, n - 4), n))
    assert audit_window(raw(first_global), first_global, config)[0] == "global"


def test_t25_long_observation_compacted():
    text = "h" * 3000 + "x" * 4000 + "t" * 3000
    out = compact(text, 6000)
    assert out.startswith("h" * 3000) and out.endswith("t" * 3000) and "x" not in out and len(out) > 6000
    _, ev = audit_window([{"step": -1, "action": None, "observation": text}], 0, SentinelConfig())
    assert ev[0]["observation"] == out


def w(states=None, relations=None):
    return {"entities": {}, "states": states or {}, "relations": relations or {}}


def inf(p):
    return {"probability": p, "source_type": "inferred"}


OBS = {"probability": 1.0, "source_type": "observed"}


def test_t28_distance_increase():
    assert confidence_distance(w({"s": inf(0.2)}), w({"s": inf(0.95)}))[0] == 0.375
    label = diagnostic_progress(w({"s": inf(0.2)}), w({"s": inf(0.95)}), threshold=0.3)
    assert (label.progress, label.affected_record_ids) == (1, ["s"])
    d = confidence_distance(w({"s": inf(0.2)}, {"r": inf(0.1)}), w({"s": inf(0.95)}, {"r": inf(0.9)}))[0]
    assert d == 0.775


def test_t29_threshold_is_strict():
    label = diagnostic_progress(w({"s": inf(0.2)}), w({"s": inf(0.8)}), threshold=0.3)
    assert (label.score, label.progress) == (0.3, 0)


def test_t30_observed_records():
    assert confidence_distance(w({"s": OBS}), w({"s": OBS, "t": OBS}))[0] == 0.0
    label = diagnostic_progress(w({"s": inf(0.6)}), w({"s": OBS}), threshold=0.3)
    assert (label.score, label.progress) == (0.3, 0)
    label = diagnostic_progress(w(), w({"n": inf(0.7)}), threshold=0.3)
    assert (label.score, label.progress) == (0.35, 1)
