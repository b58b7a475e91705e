"""Claims of the methods that keep a state (issue 28), each scored against the toy household's truth; the
methods that keep none do not declare the capability."""

from __future__ import annotations

import json

import pytest

from baselines.acon import Acon
from baselines.expert import Expert
from baselines.hiagent import HiAgent
from baselines.lh_harness import LongHorizonHarness
from baselines.pace import Pace
from baselines.passport import SituationPassport
from baselines.raw import RawHistory
from baselines.reflact import ReflAct
from baselines.stateact import StateAct
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.pos.method import Pos
from pos_bench.protocols import ClaimingMethod
from pos_bench.transcript import Transcript
from pos_bench.truth import judge

BENCH = ToyBenchmark(n_tasks=2)
TASK = BENCH.tasks()[0]


def world():
    """Where the objects are when the episode starts (the toy world is fixed per task)."""
    env = BENCH.make_env(None)
    env.reset(TASK)
    return dict(env.world.where)


WHERE = world()
MUG, APPLE = WHERE["mug 1"], WHERE["apple 1"]
WRONG = next(r for r in ("cabinet 1", "drawer 1", "shelf 1") if r != MUG)


def verdicts(method_obj, env):
    return [j.verdict for j in judge(method_obj.claims(), env.truth())]


def run(make, replies):
    """Play three turns of the toy task with the method `make` builds; return it and the env."""
    env, model = BENCH.make_env(None), ScriptedModel(replies)
    method = make(model)
    play(TASK, env, method, model, brief=BENCH.brief, max_turns=3, log=Transcript())
    assert isinstance(method, ClaimingMethod)
    return method, env


@pytest.mark.parametrize("cls", [RawHistory, ReflAct, Acon, Pace, Expert])
def test_methods_without_a_state_do_not_declare_claims(cls) -> None:
    assert not issubclass(cls, ClaimingMethod)


@pytest.mark.parametrize("cls", [Pos, SituationPassport, LongHorizonHarness, StateAct, HiAgent])
def test_methods_with_a_state_declare_claims(cls) -> None:
    assert issubclass(cls, ClaimingMethod)


def test_passport_world_records_are_claims() -> None:
    passport = {
        "entities": [
            {"name": "mug 1", "state": f"in {MUG}", "confidence": "high", "source": "step 0"},
            {
                "name": "apple 1",
                "state": f"on {WRONG if APPLE != WRONG else MUG}",
                "confidence": "low",
                "source": "",
            },
            {"name": MUG, "state": "seen from afar", "confidence": "high", "source": "step 0"},
        ],
        "relations": [{"source": "mug 1", "target": MUG, "relation": "inside"}],
        "knowledge_gaps": [],
        "achievement_gaps": [],
    }
    reply = {
        "thought": "t",
        "check": [],
        "passport": passport,
        "health": {"progress": False, "stall": False, "movement": "none", "stuck_on": "none"},
        "active_gaps": [{"kind": "knowledge", "gap": "where", "reason": "r"}],
        "action": "look",
    }
    method, env = run(SituationPassport, {"agent": [json.dumps(reply)]})
    assert [c.confidence for c in method.claims()] == ["high", "low", "high", ""]
    assert verdicts(method, env) == ["true", "false", "true"]


def test_stateact_state_line_is_a_claim() -> None:
    turn = {
        "goal": "g",
        "locations_visited": ["countertop 1"],
        "current_location": "countertop 1",
        "current_inventory": "None",
        "thought": "",
        "action": "go to countertop 1",
    }
    method, env = run(StateAct, {"agent": [json.dumps(turn)]})
    assert verdicts(method, env) == ["true", "true"]  # at countertop 1, holding nothing


def test_hiagent_subgoal_summaries_are_free_text_claims() -> None:
    def act(action, subgoal=None):
        return json.dumps({"thought": "t", "action": action, **({"subgoal": subgoal} if subgoal else {})})

    replies = {
        "agent": [act("look", "find the mug"), act("look", "find the apple"), act("look")],
        "summarizer": [f"The mug 1 is in {MUG}; subgoal met."],
    }
    method, env = run(HiAgent, replies)
    assert [c.ref for c in method.claims()] == ["subgoal 1"]
    assert verdicts(method, env) == ["true"]


def test_lh_harness_verified_facts_are_free_text_claims() -> None:
    plan = {
        "task_state": {"completed": [], "incomplete": ["find"], "blockers": [], "untrusted": []},
        "contract": "c",
        "next": "act",
        "subtask": "explore",
        "acceptance_criteria": ["a"],
        "related_rounds": [],
    }
    audit = {
        "status": "incomplete",
        "integrity": "clean",
        "contract_audit": "aligned",
        "verified_facts": [
            {"fact": f"mug 1 is in {MUG}", "step": 1},
            {"fact": f"mug 1 is on {WRONG}", "step": 1},
        ],
        "evidence": ["quoted"],
        "gaps": [],
        "state_update": "none",
    }
    replies = {
        "agent": [json.dumps({"thought": "", "action": "look"})],
        "manager": [json.dumps(plan)],
        "auditor": [json.dumps(audit)],
    }
    method, env = run(lambda m: LongHorizonHarness(m, steps_per_round=1), replies)
    assert {c.source for c in method.claims()} == {"verified"}
    assert verdicts(method, env)[:2] == ["true", "false"]
