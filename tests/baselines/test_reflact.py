import json

from baselines.reflact import ReflAct
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Recorded, Transcript
from pos_bench.types import Task


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
    return json.loads(text.split("\n\nCurrent observation:")[0])


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
    assert "move pen 1 to desk 1" in new[0]["prompt"]["messages"][1]["content"]
    assert "put pen 1 in/on desk 1" in old[0]["prompt"]["messages"][1]["content"]


def example_text(method, task_type):
    bench = ToyBenchmark(n_tasks=1)
    obs = bench.make_env(None).reset(bench.tasks()[0])
    method.start(Task("game", meta={"task_type": task_type}), bench.brief, obs)
    return method.prompt(obs).messages[1].content.split("Current observation")[0], method.report()


def test_examples_are_of_the_task_s_own_type():
    heat, heat_report = example_text(ReflAct(ScriptedModel()), "heat")
    look, look_report = example_text(ReflAct(ScriptedModel()), "look_at_obj")
    assert "heat mug 2 with microwave 1" in heat and "desklamp" not in heat
    assert "use desklamp 1" in look and "microwave" not in look
    assert (heat_report["example_type"], look_report["example_type"]) == ("heat", "look_at_obj")
    two, _ = example_text(ReflAct(ScriptedModel(), n_examples=2), "heat")
    assert "heat mug 2" in two and "heat potato 1" in two


def test_a_task_without_a_known_type_falls_back_and_says_so():
    _, report = example_text(ReflAct(ScriptedModel()), None)
    assert report["example_type"] == "pick_and_place" and report["example_type_matched"] is False
