import json

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from baselines.passport.method import SituationPassport
from baselines.passport.protocol import constraint_text
from baselines.passport.records import Health, ReplyShape, read_reply
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Recorded, Transcript
from tests.conftest import REPO

BENCH = ToyBenchmark(n_tasks=2)
TASK = BENCH.tasks()[0]
CONF = REPO / "conf"

CALM = {"progress": False, "stall": False, "movement": "none", "stuck_on": "none"}
MOVED = {"progress": True, "stall": False, "movement": "none", "stuck_on": "none"}
FROZEN = {"progress": False, "stall": True, "movement": "frozen", "stuck_on": "knowledge"}


def reply(health=CALM, *, state="in the room", action="look", passport=None, **extra):
    body = {
        "thought": "t",
        "check": [],
        "passport": passport
        if passport is not None
        else {
            "entities": [{"name": "me", "state": state, "confidence": "high", "source": "step 0"}],
            "relations": [],
            "knowledge_gaps": ["where the apple is"],
            "achievement_gaps": ["apple not in drawer"],
        },
        "health": health,
        "active_gaps": [{"kind": "knowledge", "gap": "where the apple is", "reason": "needed first"}],
        "action": action,
        **extra,
    }
    return json.dumps(body)


def run(replies, *, max_turns=4, auditor_replies=None, **settings):
    log = Transcript()
    scripted = {"agent": replies}
    if auditor_replies is not None:
        scripted["passport_auditor"] = auditor_replies
    model = Recorded(ScriptedModel(scripted), log)
    method = SituationPassport(model, **settings)
    result = play(TASK, BENCH.make_env(model), method, model, brief=BENCH.brief, max_turns=max_turns, log=log)
    return result, log


def agent_prompts(log):
    return [c["prompt"]["messages"][-1]["content"] for c in log.of_kind("call") if c["role"] == "agent"]


def records(log):
    return [e["record"] for e in log.of_kind("memory")]


def test_structured_reply_is_parsed_into_the_committed_passport_and_shown_next_step():
    result, log = run([reply(state="in the room"), reply(state="at drawer 1")], max_turns=2)
    first, second = records(log)
    assert first["committed"] and first["malformed"] == []
    assert first["passport"]["entities"] == [
        {"name": "me", "state": "in the room", "confidence": "high", "source": "step 0"}
    ]
    assert first["active_gaps"][0]["gap"] == "where the apple is"
    assert first["health"] == CALM and first["diagnosis"] is None
    assert second["changed_entities"] == ["me"]
    prompts = agent_prompts(log)
    assert "Passport: none yet" in prompts[0]
    assert '"state":"in the room"' in prompts[1] and "Passport (committed at step 0)" in prompts[1]
    assert result.report["passport"]["entities"][0]["state"] == "at drawer 1"
    assert result.report["malformed_replies"] == 0


def test_malformed_passport_keeps_the_previous_one_and_the_action_still_runs():
    broken = reply(passport={"entities": [{"name": "me"}]})  # no state: the passport part is invalid
    result, log = run([reply(state="in the room"), broken, reply(state="later")], max_turns=3)
    first, second, third = records(log)
    assert not second["committed"]
    assert any(p.startswith("passport.") for p in second["malformed"])
    assert second["passport"] == first["passport"]
    assert second["health"] == CALM  # the other parts are still read
    assert len(log.of_kind("step")) == 3
    assert "Passport (committed at step 0)" in agent_prompts(log)[2]
    assert third["passport"]["entities"][0]["state"] == "later"
    assert result.report["malformed_replies"] == 1


def test_missing_parts_are_named_and_nothing_is_committed():
    parsed = read_reply({"passport": "a string"}, ReplyShape())
    assert parsed.passport is None and parsed.health is None and parsed.active_gaps is None
    assert "health: missing" in parsed.problems and "active_gaps: missing" in parsed.problems
    assert any(p.startswith("passport") for p in parsed.problems)


def test_declared_stall_puts_the_constraint_in_the_next_prompt_until_progress():
    replies = [
        reply(action="look"),
        reply(FROZEN, action="inventory"),
        reply(CALM),
        reply(MOVED),
        reply(CALM),
    ]
    result, log = run(replies, max_turns=5)
    prompts = agent_prompts(log)
    assert "CONSTRAINT" not in prompts[1]
    assert "CONSTRAINT (from step 1)" in prompts[2]
    assert (
        'do not repeat the action that left it unchanged ("look")' in prompts[2]
    )  # the action the stall was judged on
    assert "new evidence" in prompts[2]
    assert "where the apple is" in prompts[2]
    assert "CONSTRAINT" in prompts[3]  # no progress yet: still in force
    assert "CONSTRAINT" not in prompts[4]
    events = [r["constraint"]["event"] for r in records(log)]
    assert events == [None, "issued", "kept", "lifted", None]
    assert records(log)[1]["diagnosis"] == {"movement": "frozen", "stuck_on": "knowledge"}
    assert records(log)[2]["gap_kept"] is True
    assert result.report["stalls_declared"] == 1 and result.report["constraints_lifted"] == 1


def test_constraint_combines_one_movement_and_one_gap_rule_and_task_rules():
    circle = Health(progress=False, stall=True, movement="circle", stuck_on="action")
    text = constraint_text(
        circle, gaps=["apple"], recent_actions=["a", "b", "a"], task_rules=["Read ≤ 50 lines."]
    )
    assert 'none of the actions of the loop again: "a", "b".' in text
    assert "change the state of at least one entity" in text and text.endswith("Read ≤ 50 lines.")
    drift = Health(progress=False, stall=True, movement="drift", stuck_on="none")
    assert "serves it" in constraint_text(drift, gaps=[], recent_actions=[])
    vague = Health(progress=False, stall=True, movement="none", stuck_on="none")
    assert "Step back" in constraint_text(vague, gaps=["x"], recent_actions=[])


def test_auditor_makes_its_extra_call_before_acting_and_its_findings_reach_the_prompt():
    finding = {"entry": "me", "problem": "contradicted", "detail": "the observation says otherwise"}
    result, log = run(
        [reply()], max_turns=3, auditor=True, auditor_replies=[json.dumps({"problems": [finding]})]
    )
    roles = [c["role"] for c in log.of_kind("call")]
    # step 0 has no passport to audit; step 1 audits the new entry; step 2 has nothing changed to audit
    assert roles == ["agent", "passport_auditor", "agent", "agent"]
    assert "independent controller found these problems" in agent_prompts(log)[1]
    assert records(log)[1]["check"]["auditor"]["findings"] == [finding]
    assert result.report["auditor_calls"] == 1 and result.report["auditor_findings"] == 1


def test_auditor_checks_every_entry_when_scope_is_all():
    _, log = run(
        [reply()], max_turns=3, auditor=True, check_scope="all", auditor_replies=['{"problems": []}']
    )
    assert [c["role"] for c in log.of_kind("call")].count("passport_auditor") == 2


def test_unsourced_entry_is_marked_low_confidence_by_the_rules():
    passport = {
        "entities": [{"name": "apple", "state": "in fridge", "confidence": "high", "source": ""}],
        "relations": [],
        "knowledge_gaps": [],
        "achievement_gaps": [],
    }
    _, log = run([reply(passport=passport)], max_turns=1)
    record = records(log)[0]
    assert record["passport"]["entities"][0]["confidence"] == "low"
    assert record["check"]["rules"][0]["problem"] == "unsourced"


def test_short_passport_and_two_gaps_change_schema_and_prompt():
    short = reply(
        passport={
            "entities": [{"name": "me", "state": "here"}],
            "relations": [],
            "knowledge_gaps": [],
            "achievement_gaps": [],
        }
    )
    _, log = run([short], max_turns=1, confidence=False, source=False, active_gaps=2)
    call = log.of_kind("call")[0]
    schema = call["prompt"]["schema"]
    entity = next(d for name, d in schema["$defs"].items() if name == "PassportEntity")
    assert set(entity["properties"]) == {"name", "state"}
    assert schema["properties"]["active_gaps"]["maxItems"] == 2
    assert "one or two gaps" in agent_prompts(log)[0] and "confidence (" not in agent_prompts(log)[0]
    assert records(log)[0]["committed"]


def test_full_history_also_shows_the_raw_steps():
    _, log = run([reply()], max_turns=2, history="full")
    assert '"observation": "You are in the middle of a room."' in agent_prompts(log)[1]
    _, log = run([reply()], max_turns=2)
    assert "Previous steps" not in agent_prompts(log)[1]


def test_bad_lever_values_are_rejected():
    with pytest.raises(ValueError, match="active_gaps"):
        SituationPassport(ScriptedModel(), active_gaps=3)
    with pytest.raises(ValueError, match="history"):
        SituationPassport(ScriptedModel(), history="some")


def test_auditor_config_extends_passport():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["method=passport_auditor", "bench=toy", "model=scripted"])
    method = instantiate(cfg.method, _convert_="all")(model=ScriptedModel())
    assert isinstance(method, SituationPassport) and method.auditor


def test_progress_declared_with_a_stall_wins_and_is_flagged():
    both = {"progress": True, "stall": True, "movement": "frozen", "stuck_on": "none"}
    result, log = run([reply(both)], max_turns=2)
    assert "CONSTRAINT" not in agent_prompts(log)[1]
    assert records(log)[0]["health_conflict"] is True
    assert result.report["health_conflicts"] == 2 and result.report["stalls_declared"] == 0


def test_a_spent_turn_still_advances_the_step_number():
    _, log = run(['{"thought": "no action"}', '{"thought": "no action"}', reply()], max_turns=2)
    assert len(log.of_kind("turn_spent")) == 1
    assert "Step 1. Newest observation" in agent_prompts(log)[-1]


def caps(schema) -> list[int]:
    """Every maxLength / maxItems bound in a JSON schema except the protocol's active-gap count."""
    found = []

    def walk(node, key=""):
        if isinstance(node, dict):
            for name, value in node.items():
                if name in ("maxLength", "maxItems") and key != "active_gaps":
                    found.append(value)
                walk(value, name)
        elif isinstance(node, list):
            for item in node:
                walk(item, key)

    walk(schema)
    return found


def test_limits_cap_the_reply_schema_and_no_limits_send_the_protocol_uncapped():
    _, capped = run([reply()], max_turns=1, limits={"items": 5, "name_chars": 20, "findings": 2})
    schema = capped.of_kind("call")[0]["prompt"]["schema"]
    assert schema["properties"]["check"]["maxItems"] == 2
    draft = schema["$defs"]["PassportDraft"]["properties"]
    assert draft["entities"]["maxItems"] == 5
    assert schema["$defs"]["PassportEntity"]["properties"]["name"]["maxLength"] == 20
    assert schema["$defs"]["PassportEntity"]["properties"]["state"]["maxLength"] == 80
    _, free = run([reply()], max_turns=1)
    assert caps(free.of_kind("call")[0]["prompt"]["schema"]) == []
    assert records(free)[0]["committed"]


def test_auditor_schema_follows_the_limits():
    passport = SituationPassport(ScriptedModel(), auditor=True, limits={"findings": 2})
    assert passport.shape.audit_model().model_json_schema()["properties"]["problems"]["maxItems"] == 4
    assert (
        caps(SituationPassport(ScriptedModel(), auditor=True).shape.audit_model().model_json_schema()) == []
    )


@pytest.mark.parametrize(("model", "limited"), [("smollm2", True), ("vllm", False), ("openai", False)])
def test_the_embedded_preset_sets_the_limits_and_remote_models_get_none(model, limited):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["method=passport", "bench=toy", f"model={model}"])
    method = instantiate(cfg.method, _convert_="all")(model=ScriptedModel())
    assert (method.shape.limits is not None) is limited
    if limited:
        assert method.shape.limits.items == 6 and method.shape.limits.state_chars == 80


def test_a_multi_action_reply_is_committed_and_judged_once():
    import dataclasses

    body = json.loads(reply(FROZEN))
    del body["action"]
    body["actions"] = ["look", "inventory", "look"]
    brief = dataclasses.replace(BENCH.brief, max_actions_per_turn=3)
    log = Transcript()
    model = Recorded(ScriptedModel({"agent": [json.dumps(body)]}), log)
    method = SituationPassport(model)
    result = play(TASK, BENCH.make_env(model), method, model, brief=brief, max_turns=1, log=log)
    assert result.steps == 3
    assert result.report["stalls_declared"] == 1 and result.report["constraints_issued"] == 1
