import json

from baselines.reflact import ReflAct
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Recorded, Transcript


def run(replies, *, max_turns=3, text_version="2.1.2"):
    bench = ToyBenchmark(n_tasks=4, text_version=text_version)
    log = Transcript()
    model = Recorded(ScriptedModel({"agent": replies}), log)
    result = play(
        bench.tasks()[0],
        bench.make_env(model),
        ReflAct(model),
        model,
        brief=bench.brief,
        max_turns=max_turns,
        log=log,
    )
    return result, log.of_kind("call")


def reflect(reflection, action):
    return json.dumps({"reflection": reflection, "action": action})


def previous_steps(call):
    text = call["prompt"]["messages"][1]["content"].split("Previous steps:\n")[1]
    return json.loads(text.split("\n\nAvailable actions:")[0])


def test_prompt_holds_earlier_reflections_actions_and_observations():
    replies = [
        reflect("I hold nothing in the middle of the room; plan: search the shelf.", "go to shelf 1"),
        reflect("At shelf 1, hands empty.", "inventory"),
        reflect("x", "look"),
    ]
    _, calls = run(replies)
    steps = previous_steps(calls[2])
    assert [(s["reflection"], s["action"]) for s in steps] == [
        ("I hold nothing in the middle of the room; plan: search the shelf.", "go to shelf 1"),
        ("At shelf 1, hands empty.", "inventory"),
    ]
    assert steps[0]["observation"].startswith("You arrive at shelf 1.")
    assert steps[1]["observation"] == "You are not carrying anything."
    assert "none yet" in calls[0]["prompt"]["messages"][1]["content"].split("Previous steps:")[1]


def test_schema_has_reflection_in_place_of_thought():
    _, calls = run([reflect("r", "look")], max_turns=1)
    schema = calls[0]["prompt"]["schema"]
    assert list(schema["properties"]) == ["reflection", "action"]


def test_a_reply_with_thought_instead_of_reflection_still_fills_memory():
    _, calls = run(
        [json.dumps({"thought": "my hands are empty", "action": "inventory"}), reflect("r", "look")],
        max_turns=2,
    )
    assert previous_steps(calls[1])[0]["reflection"] == "my hands are empty"


def test_example_uses_the_current_grammar():
    _, new = run([reflect("r", "look")], max_turns=1)
    _, old = run([reflect("r", "look")], max_turns=1, text_version="2.1.1")
    assert "move spoon 3 to drawer 1" in new[0]["prompt"]["messages"][1]["content"]
    assert "put spoon 3 in/on drawer 1" in old[0]["prompt"]["messages"][1]["content"]
