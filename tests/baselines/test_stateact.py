import json

import pytest

from baselines.alfworld_examples import to_2_1_2
from baselines.stateact import StateAct, state_block
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Recorded, Transcript
from pos_bench.types import Task

TASK = ToyBenchmark(n_tasks=4).tasks()[0]


def turn(action, *, where="middle of the room", visited=(), holding="", thought=""):
    return json.dumps(
        {
            "goal": "find the target",
            "locations_visited": list(visited),
            "current_location": where,
            "current_inventory": holding,
            "thought": thought,
            "action": action,
        }
    )


def run(replies, *, max_turns=3, text_version="2.1.2", **settings):
    bench = ToyBenchmark(n_tasks=4, text_version=text_version)
    log = Transcript()
    model = Recorded(ScriptedModel({"agent": replies}), log)
    result = play(
        TASK,
        bench.make_env(model),
        StateAct(model, **settings),
        model,
        brief=bench.brief,
        max_turns=max_turns,
        log=log,
    )
    return result, log.of_kind("call")


def test_prompt_holds_earlier_state_blocks_with_their_observations():
    replies = [
        turn("go to shelf 1", thought="check the shelf"),
        turn("inventory", where="shelf 1", visited=["shelf 1"]),
        turn("look"),
    ]
    _, calls = run(replies)
    third = calls[2]["prompt"]["messages"][1]["content"].split("Your trajectory so far:")[1]
    assert "> goal: find the target\nlocations visited: None\ncurrent location: middle of the room\n" in third
    assert (
        "current inventory: None\nthought: check the shelf\naction: go to shelf 1\nYou arrive at shelf 1."
        in third
    )
    assert "locations visited: shelf 1\ncurrent location: shelf 1" in third
    assert "action: inventory\nYou are not carrying anything." in third
    first = calls[0]["prompt"]["messages"][1]["content"].split("Your trajectory so far:")[1]
    assert "> goal:" not in first


def test_schema_asks_for_the_state_block_before_the_action():
    _, calls = run([turn("look")], max_turns=1)
    schema = calls[0]["prompt"]["schema"]
    assert list(schema["properties"]) == [
        "goal",
        "locations_visited",
        "current_location",
        "current_inventory",
        "thought",
        "action",
    ]
    assert set(schema["required"]) == set(schema["properties"])


def test_examples_follow_the_grammar_of_the_admissible_commands():
    _, new = run([turn("look")], max_turns=1)
    _, old = run([turn("look")], max_turns=1, text_version="2.1.1")
    new_text, old_text = (c[0]["prompt"]["messages"][1]["content"] for c in (new, old))
    assert "action: move pen 1 to desk 1" in new_text and "in/on" not in new_text
    assert "You arrive at shelf 1. On the shelf 1," in new_text
    assert "action: put pen 1 in/on desk 1" in old_text and "move pen 1" not in old_text


def test_correction_rewrites_put_commands_and_feedback():
    assert to_2_1_2("put egg 2 in/on cabinet 1") == "move egg 2 to cabinet 1"
    assert to_2_1_2("You put the egg 2 in/on the cabinet 1.") == "You move the egg 2 to the cabinet 1."
    assert (
        to_2_1_2("You arrive at loc 4. The fridge 1 is closed.")
        == "You arrive at fridge 1. The fridge 1 is closed."
    )
    assert state_block({"goal": "g", "locations_visited": ["a", "b"]}, "look").startswith(
        "> goal: g\nlocations visited: a, b\ncurrent location: None"
    )


def test_repeat_stop_ends_model_calls_and_env_steps():
    result, calls = run([turn("look")], max_turns=6, repeat_stop=3)
    assert len(calls) == 3 and result.steps == 3 and result.turns == 6
    assert result.spent_turns == 3 and result.report["repeat_stopped_at_turn"] == 2


def test_no_repeat_stop_by_default():
    result, calls = run([turn("look")], max_turns=6)
    assert len(calls) == 6 and result.steps == 6 and result.report["repeat_stopped_at_turn"] is None


def test_bad_settings_are_rejected():
    with pytest.raises(ValueError, match="repeat_stop"):
        StateAct(ScriptedModel(), repeat_stop=1)


def test_two_examples_of_the_task_s_own_type_with_derived_states():
    bench = ToyBenchmark(n_tasks=1)
    obs = bench.make_env(None).reset(bench.tasks()[0])
    texts = {}
    for kind in ("heat", "look_at_obj"):
        method = StateAct(ScriptedModel())
        method.start(Task("game", meta={"task_type": kind}), bench.brief, obs)
        texts[kind] = method.prompt(obs).messages[1].content.split("Your trajectory so far")[0]
        assert method.report()["example_type"] == kind
    heat, look = texts["heat"], texts["look_at_obj"]
    assert "Example 2:" in heat and "heat mug 2 with microwave 1" in heat and "heat potato 1" in heat
    assert "use desklamp 1" in look and "alarmclock 1" in look and "microwave" not in look
    assert "current inventory: mug 2\nthought: None\naction: go to microwave 1" in heat
