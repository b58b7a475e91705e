"""The PoS pipeline on scripted roles (SPEC-POS §5, §7.5, §8, §12.6; tests T13, T21–T23, T27, T31, T32,
T52, T53, T56–T58, T63–T65)."""

from __future__ import annotations

import json
import os

import pytest

from pos_bench.pos.method import Pos
from pos_bench.pos.updater import BeliefFailure
from pos_bench.types import Brief, Decision, Observation, Step, Task

from .script import INIT, PosScript, delta, grounded_issue, moved

BRIEF = Brief(system="household", example="Example: format only.")
FIRST = Observation(
    "You are in the middle of a room.", actions=("look", "go to shelf 1"), goal="put a mug in cabinet."
)
SMALL = {"window_size": 4, "max_cycle_length": 2}


def obs(text: str, *, done: bool = False, won: bool = False) -> Observation:
    return Observation(text, actions=("look", "go to shelf 1"), done=done, goal=FIRST.goal, info={"won": won})


def started(script: PosScript, brief: Brief = BRIEF, **kw) -> tuple[Pos, object]:
    model = script.model()
    pos = Pos(model, **kw)
    pos.start(Task("t"), brief, FIRST)
    return pos, model


def act(pos: Pos, turn: int, text: str = "Nothing happens.", **kw):
    before = obs("before")
    return pos.update(Step(turn, before, Decision("t", "look"), obs(text, **kw)))


def roles(model) -> dict[str, int]:
    return dict(model.calls)


def test_t65_five_calls_per_action_in_execution_mode():
    pos, model = started(PosScript())
    assert roles(model) == {"belief": 2, "sentinel_consistency": 1}
    for t in range(3):
        pos.prompt(obs("now"))
        act(pos, t)
    assert roles(model) == {"belief": 2 + 6, "sentinel_consistency": 4, "sentinel_progress": 3}


def test_diagnostic_mode_has_no_judge_call():
    pos, model = started(PosScript(), Brief(system="s", mode="diagnostic"))
    act(pos, 0)
    assert "sentinel_progress" not in roles(model)
    assert pos.report()["belief_sentinel"]["progress_history"][0]["scoring_method"] == "confidence_distance"


def test_t13_missing_owner_gets_one_repair_then_raises():
    bad = delta(upsert_states=[{"state_id": "s9", "entity_id": "nobody", "description": "x"}])
    pos, model = started(PosScript(updates=[bad, delta()]))
    act(pos, 0)
    assert roles(model)["belief"] == 2 + 3  # update, its repair, textualize
    pos, model = started(PosScript(updates=[bad]))
    with pytest.raises(BeliefFailure):  # T63: non-terminal → the episode errors
        act(pos, 0)


def test_t63_terminal_failure_is_reported_and_raised_for_the_loop_to_record():
    pos, _ = started(PosScript(updates=["not json"]))
    with pytest.raises(BeliefFailure):  # the loop keeps the outcome and records it (§5.5)
        act(pos, 0, "You move the mug 1 to the cabinet 1.", done=True, won=True)
    (error,) = pos.report()["context_errors"]
    assert (error["step"], error["phase"], error["error_type"]) == (0, "update", "BeliefFailure")


def model_down(prompt):
    raise ConnectionError("belief model unreachable")


@pytest.mark.parametrize("failure", ["not json", model_down], ids=["BeliefFailure", "ConnectionError"])
def test_a_failed_terminal_update_closes_the_recovery_as_task_terminal(failure):
    pos, _ = started(PosScript(updates=[delta()] * 4 + [failure]), trapping=SMALL)
    for t in range(4):
        act(pos, t)
    assert pos.report()["active_recovery"] is not None
    with pytest.raises(Exception) as raised:
        act(pos, 4, "You move the mug 1 to the cabinet 1.", done=True, won=True)
    report = pos.report()
    assert report["active_recovery"] is None
    assert report["recovery_history"][-1]["status"] == "task_terminal"
    assert report["recovery_history"][-1]["step"] == 4
    assert report["context_errors"][-1]["error_type"] == type(raised.value).__name__


def test_t22_repaired_path_two_extra_calls():
    script = PosScript(
        updates=[delta(), moved(1)],
        audits=[{"issues": []}, lambda p: {"issues": [grounded_issue(p)]}, {"issues": []}],
    )
    pos, model = started(script)
    record = act(pos, 0, "You arrive at shelf 1.")
    assert record["status"] == "repaired"
    assert roles(model)["sentinel_consistency"] == 3 and script.counts["update"] == 2
    assert pos.belief.world.states["s1"].description == "mug 1 not at place 1"


def test_t22_rejected_keeps_old_belief():
    script = PosScript(updates=[moved(5)], audits=[{"issues": []}, lambda p: {"issues": [grounded_issue(p)]}])
    pos, model = started(script)
    record = act(pos, 0, "You arrive at shelf 1.")
    assert record["status"] == "rejected"
    assert pos.belief.world.states["s1"].description == "mug 1 location unknown"
    assert roles(model)["sentinel_consistency"] == 3 and script.counts["update"] == 2
    assert pos.report()["belief_sentinel"]["pending_issues"][0]["targets"] == ["e1"]


def test_t17_t21_ungrounded_first_issue_validates_without_repair():
    def issues(p):
        good = grounded_issue(p)
        return {"issues": [{**good, "evidence_quote": "made up words"}, good]}

    script = PosScript(updates=[moved(2)], audits=[{"issues": []}, issues])
    pos, model = started(script)
    assert act(pos, 0, "You arrive at shelf 1.")["status"] == "validated"
    assert roles(model)["sentinel_consistency"] == 2 and script.counts["update"] == 1


def test_t23_unparsable_audit_rejects():
    pos, model = started(PosScript(updates=[moved(3)], audits=[{"issues": []}, "no json here"]))
    assert act(pos, 0)["status"] == "rejected"
    assert roles(model)["sentinel_consistency"] == 3  # init audit + audit + its JSON repair


def test_t27_no_consistency_makes_no_audit_but_scores_progress():
    pos, model = started(PosScript(), sentinel={"consistency_enabled": False}, trapping=SMALL)
    for t in range(5):
        act(pos, t)
    assert "sentinel_consistency" not in roles(model)
    assert roles(model)["sentinel_progress"] == 5
    assert pos.report()["belief_health_history"]


def test_no_trapping_same_calls_no_health():
    a, ma = started(PosScript(), trapping=SMALL)
    b, mb = started(PosScript(), trapping={**SMALL, "enabled": False}, recovery={"enabled": False})
    for t in range(5):
        act(a, t)
        act(b, t)
    assert roles(ma) == roles(mb)
    assert b.report()["belief_health_history"] == [] and b.report()["health_transitions"] == []
    assert a.report()["belief_health_history"]


def test_t31_env_success_needs_no_judge_and_t64_no_text():
    pos, model = started(PosScript())
    record = act(pos, 0, "You move the mug 1 to the cabinet 1.", done=True, won=True)
    assert record["progress"]["progress"] == 1 and "sentinel_progress" not in roles(model)
    assert roles(model)["belief"] == 3  # init, text, update: no text after the terminal step


@pytest.mark.parametrize(
    "judge",
    [
        {"progress": 1, "score": 1.0, "affected_record_ids": ["s1"], "reason": "r"},  # s1 unchanged
        {"progress": True, "score": 1.0, "affected_record_ids": [], "reason": "r"},
        {"progress": 1, "score": -1.0, "affected_record_ids": [], "reason": "r"},
    ],
)
def test_t32_invalid_judge_is_unverified(judge):
    pos, model = started(PosScript(judges=[judge]))
    assert act(pos, 0)["progress"]["progress"] is None
    assert roles(model)["sentinel_progress"] == 2


def judge(u: int) -> dict:
    return {"progress": u, "score": float(u), "affected_record_ids": [], "reason": "r"}


def test_trapped_lifecycle_t52_t53_t56_t57():
    updates = [delta()] * 4 + [moved(n) for n in range(4, 20)]
    judges = [judge(0)] * 5 + [judge(0), "bad", "bad", judge(1), judge(1)]
    pos, _ = started(PosScript(updates=updates, judges=judges), trapping=SMALL)
    for t in range(4):
        assert "Recovery constraint" not in pos.prompt(obs("x")).messages[1].content
        act(pos, t)
    first = pos.report()["active_recovery"]
    assert first["trapping_pattern"] == "static" and first["applies_from_step"] == 4
    assert "Recovery constraint" in pos.prompt(obs("x")).messages[1].content  # T56
    act(pos, 4)  # world changes, still no progress → rediagnosed, generic pattern
    second = pos.report()["active_recovery"]
    assert second["trapping_pattern"] is None and second["pattern_part"].startswith("Step back")
    assert pos.report()["recovery_history"][-1]["status"] == "rediagnosed"
    assert pos.report()["recovery_history"][-1]["recovery"]["recovery_action_steps"] == [4]
    act(pos, 5)  # trapped again (rediagnosed)
    kept = pos.report()["active_recovery"]
    health_count = len(pos.report()["belief_health_history"])
    act(pos, 6)  # T57: unverified → directive and health unchanged
    assert pos.report()["active_recovery"]["instruction"] == kept["instruction"]
    assert len(pos.report()["belief_health_history"]) == health_count
    act(pos, 7)  # labels [0, 0, 1] + the unverified one skipped
    act(pos, 8)
    assert pos.report()["active_recovery"] is None
    assert pos.report()["recovery_history"][-1]["status"] == "health_recovered"
    assert "Recovery constraint" not in pos.prompt(obs("x")).messages[1].content


def test_t53_terminal_ends_recovery_without_health():
    pos, _ = started(PosScript(), trapping=SMALL)
    for t in range(4):
        act(pos, t)
    assert pos.report()["active_recovery"] is not None
    n = len(pos.report()["belief_health_history"])
    act(pos, 4, "You move the mug 1 to the cabinet 1.", done=True, won=True)
    report = pos.report()
    assert report["recovery_history"][-1]["status"] == "task_terminal"
    assert len(report["belief_health_history"]) == n and report["health_transitions"][-1]["progress"] == 1


def test_t58_prompt_has_no_earlier_observation():
    pos, _ = started(PosScript())
    act(pos, 0, "You see a zebra-token-4711 on the shelf.")
    act(pos, 1, "Nothing happens.")
    text = "\n".join(m.content for m in pos.prompt(obs("You are facing the shelf 1.")).messages)
    assert "zebra-token-4711" not in text
    assert "You are facing the shelf 1." in text and "belief text number" in text
    assert INIT["goal_specification"] in text


def test_sticky_active_gap_survives_a_new_proposal():
    other = delta(frontier={"gap_type": "achievement", "target": "put mug 1 in cabinet 1"})
    pos, _ = started(PosScript(updates=[other]))
    act(pos, 0)
    assert pos.belief.active_gap.gap_type == "epistemic"
    assert pos.report()["frontier_history"][0]["step"] == -1


def test_the_progress_prompt_opens_with_the_audit_prompt_of_the_same_step():
    """Prefix reuse: both Sentinel lanes send one system prompt and open their payloads with the belief before the
    step, so a server's prefix cache serves the judge from the audit's prompt."""
    seen: dict[str, list] = {"audit": [], "judge": []}

    def audit(prompt):
        seen["audit"].append(prompt)
        return {"issues": []}

    def judge(prompt):
        seen["judge"].append(prompt)
        return {"progress": 0, "score": 0.0, "affected_record_ids": [], "reason": "no change"}

    pos, _ = started(PosScript(updates=[moved(1)], audits=[audit], judges=[judge]))
    pos.prompt(obs("now"))
    act(pos, 0)
    audit_prompt, judge_prompt = seen["audit"][-1], seen["judge"][0]
    assert audit_prompt.messages[0] == judge_prompt.messages[0]
    audit_text, judge_text = audit_prompt.messages[1].content, judge_prompt.messages[1].content
    belief_before = json.JSONDecoder().raw_decode(audit_text)[0]["belief_before"]
    assert json.JSONDecoder().raw_decode(judge_text)[0]["belief_before"] == belief_before
    shared = len(os.path.commonprefix([audit_text, judge_text]))
    assert shared > len(json.dumps(belief_before, separators=(",", ":"), ensure_ascii=False))
