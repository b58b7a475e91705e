"""ALFWorld truth on the real engine (issue 28): the planner expert plays a real game while a scripted PoS
belief plants known true, false and stale claims at known steps, and the Sentinel (scripted) rejects,
misses and repairs known updates; the measures against the engine's own facts equal the planted numbers.
Marked `engine`; skips without alfworld or the staged data."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from pos_bench.benchmarks.alfworld.benchmark import AlfWorldBenchmark
from pos_bench.benchmarks.alfworld.data import TARBALL
from pos_bench.pos.claims import audited_updates
from pos_bench.pos.method import Pos
from pos_bench.protocols import ClaimingMethod, TruthfulEnv
from pos_bench.truth import AGENT, EXISTS, Fact, Observed, audit_accuracy, episode_accuracy
from pos_bench.types import Decision, Step
from tests.pos.script import PosScript, delta

GAME = "look_at_obj_in_light-AlarmClock-None-DeskLamp-308/trial_T20190908_222917_366542"
PLAN = ["go to desk 2", "take alarmclock 1 from desk 2", "go to desk 1", "use desklamp 1"]

GAP_E = {"target": "find the desklamp", "reason": "not seen"}
GAP_A = {"target": "look at alarmclock 1 under desklamp 1", "reason": "not done"}
GAPS = {"epistemic_gaps": [GAP_E], "achievement_gaps": [GAP_A]}


def entity(i: str, n: str) -> dict:
    return {"entity_id": i, "entity_type": "thing", "name": n}


def relation(i: str, source: str, text: str, target: str) -> dict:
    return {"relation_id": i, "source_id": source, "target_id": target, "description": text}


def state(i: str, owner: str, text: str) -> dict:
    return {"state_id": i, "entity_id": owner, "description": text}


INIT = {
    "goal_specification": "look at the alarmclock under the desklamp",
    "entities": [
        entity("e0", "agent"),
        entity("e1", "alarmclock 1"),
        entity("e2", "desk 2"),
        entity("e3", "desk 1"),
        entity("e4", "desklamp 1"),
        entity("e5", "drawer 1"),
        entity("e6", "pen 7"),  # invented (one false claim at every step): the room has pens 1-3
        entity("e7", "shelf 3"),
    ],
    "states": [state("s1", "e5", "closed")],  # true
    "relations": [relation("r1", "e1", "on", "e2"), relation("r2", "e4", "on", "e3")],  # both true
    **GAPS,
    "frontier": {"gap_type": "epistemic", "target": GAP_E["target"]},
}
AT_DESK_2 = relation("r3", "e0", "at", "e2")
AT_DESK_1 = relation("r3", "e0", "at", "e3")
HOLDING = relation("r4", "e0", "holding", "e1")
# step 0: the agent at desk 2 (true) and drawer 1 open (planted false, f1): flagged twice → rejected
U0 = delta(upsert_relations=[AT_DESK_2], upsert_states=[state("f1", "e5", "open")], **GAPS)
# step 1: holding the alarmclock (true); r1 "alarmclock 1 on desk 2" is kept → stale from here
U1 = delta(upsert_relations=[AT_DESK_2, HOLDING], **GAPS)
# step 2: at desk 1 (true) and drawer 1 open again (planted false, f2): the audit misses it → validated
U2 = delta(upsert_relations=[AT_DESK_1], upsert_states=[state("f2", "e5", "open")], **GAPS)
# step 3: drops r1 and f2 and adds "desklamp 1 on shelf 3" (true, t3): flagged → repaired without t3
U3 = delta(
    remove_relation_ids=["r1"],
    remove_state_ids=["f2"],
    upsert_relations=[relation("t3", "e4", "on", "e7")],
    **GAPS,
)
U3_REPAIRED = delta(remove_relation_ids=["r1"], remove_state_ids=["f2"], **GAPS)
FLAGGED = ("f1", "t3")


def audit(prompt) -> dict:
    """Flag a candidate holding a record of FLAGGED, quoting the newest evidence verbatim."""
    payload = json.JSONDecoder().raw_decode(prompt.messages[1].content)[0]
    world = payload["candidate_belief"]["world"]
    hit = next((i for i in FLAGGED if i in world["states"] or i in world["relations"]), None)
    if hit is None:
        return {"issues": []}
    last = payload["raw_trajectory"][-1]
    issue = {
        "targets": [hit],
        "issue_type": "external",
        "problem": f"{hit} contradicts the observation",
        "evidence_step": last["step"],
        "evidence_quote": last["observation"][:20],
        "evidence": "seen",
        "suggestion": f"drop {hit}",
    }
    return {"issues": [issue]}


@pytest.fixture(scope="module")
def tarball(shared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    for package in ("alfworld", "textworld"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")
    path = shared / "benchmarks" / "alfworld" / TARBALL
    if not path.is_file():
        pytest.skip(f"staged ALFWorld tarball not found at {path}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield path


def play_planted(bench: AlfWorldBenchmark):
    """The expert acts; PoS (scripted roles) believes. Returns the observed steps, the PoS report and the
    truth per step (-1: after reset)."""
    task = next(t for t in bench.tasks() if t.id == GAME)
    script = PosScript(init=[INIT], updates=[U0, U0, U1, U2, U3, U3_REPAIRED], audits=[audit])
    env = bench.make_expert_env(None)
    assert isinstance(env, TruthfulEnv)
    method = Pos(script.model())
    assert isinstance(method, ClaimingMethod)
    try:
        obs = env.reset(task)
        method.start(task, bench.brief, obs)
        truths = {-1: env.truth()}
        observed = [Observed(-1, truths[-1], method.claims())]
        for index in range(len(PLAN)):
            command = obs.info["plan"][0]
            after = env.step(command)
            method.update(Step(index, obs, Decision(thought="", action=command), after))
            truths[index] = env.truth()
            observed.append(Observed(index, truths[index], method.claims()))
            obs = after
        assert obs.done and obs.info["won"]
    finally:
        env.close()
    return observed, method.report(), truths


@pytest.mark.engine
@pytest.mark.parametrize("text_version", ["2.1.2", "2.1.1"])
def test_planted_claims_and_audits_measure_exactly(tarball: Path, text_version: str) -> None:
    bench = AlfWorldBenchmark(tarball, text_version=text_version)
    observed, report, truths = play_planted(bench)
    assert [e["action"] for e in report["raw_trajectory"][1:]] == PLAN
    # the engine's facts as the world changes: the alarmclock leaves desk 2 for the agent's hand
    assert Fact("alarmclock 1", "location", "desk 2") in truths[0].facts
    assert Fact("alarmclock 1", "location", AGENT) in truths[1].facts
    assert Fact(AGENT, "location", "desk 1") in truths[2].facts
    assert Fact("drawer 1", "open", "false") in truths[3].facts

    accuracy = episode_accuracy(observed)
    # every step also holds the 8 entities: 7 that exist (true) and pen 7 (false)
    planted = [(-1, 3, 0), (0, 3, 0), (1, 4, 1), (2, 4, 2), (3, 4, 0)]
    counts = [(s.step, s.true, s.false) for s in accuracy.steps]
    assert counts == [(step, true + 7, false + 1) for step, true, false in planted]
    assert [s.precision for s in accuracy.steps] == [10 / 11, 10 / 11, 11 / 13, 11 / 14, 11 / 12]
    assert accuracy.precision == 53 / 61
    # goal facts: where the alarmclock is (1) and where the desklamp is (2: desk 1 and shelf 3)
    assert accuracy.steps[0].recall == 2 / 3
    stale = Fact("alarmclock 1", "location", "desk 2")
    assert [s.stale for s in accuracy.steps] == [(), (), (stale,), (stale,), ()]
    assert (accuracy.stale_claims, accuracy.stale_persistence) == (1, (2,))
    assert accuracy.invented == ("pen 7",)
    assert accuracy.steps[3].false_facts == (
        Fact("alarmclock 1", "location", "desk 2"),
        Fact("drawer 1", "open", "true"),
        Fact("pen 7", EXISTS, "true"),
    )

    audits = audit_accuracy(audited_updates(report["belief_update_history"], truths))
    assert [u.status for u in audits.updates] == [
        "validated",
        "rejected",
        "validated",
        "validated",
        "repaired",
    ]
    # the initial belief invents pen 7 and is validated: a false update missed and committed
    assert [u.false for u in audits.updates] == [True, True, False, True, False]
    assert audits.updates[0].planted == (Fact("pen 7", EXISTS, "true"),)
    assert (audits.false_updates, audits.flagged, audits.flagged_false, audits.committed_false) == (
        3,
        2,
        1,
        2,
    )
    assert (audits.precision, audits.recall) == (0.5, 1 / 3)
