import json

from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.raw import RawHistory
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Recorded, Transcript


def play_raw(turns, replies):
    bench = ToyBenchmark(n_tasks=1)
    log = Transcript()
    model = Recorded(ScriptedModel({"agent": replies}), log)
    method = RawHistory(model)
    play(bench.tasks()[0], bench.make_env(model), method, model, brief=bench.brief, max_turns=turns, log=log)
    return [c["prompt"]["messages"] for c in log.of_kind("call")], method


def test_prompt_at_step_k_holds_every_earlier_step_in_full():
    replies = [
        '{"thought": "first", "action": "inventory"}',
        '{"thought": "second", "action": "look"}',
        '{"thought": "third", "action": "inventory"}',
    ]
    prompts, method = play_raw(3, replies)
    system, user = prompts[2]
    assert system["content"] == ToyBenchmark().brief.system
    assert user["content"].count('"observation"') == 2
    assert '"thought": "first"' in user["content"] and '"thought": "second"' in user["content"]
    assert "You are not carrying anything." in user["content"]
    assert "Previous steps:\nnone yet" in prompts[0][1]["content"]
    assert method.report() == {"history_steps": 3}


def test_the_first_observation_is_not_part_of_the_history():
    prompts, _ = play_raw(2, ['{"thought": "", "action": "inventory"}'])
    first, second = prompts[0][1]["content"], prompts[1][1]["content"]
    assert "Welcome to TextWorld" in first and "Welcome to TextWorld" not in second


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.dictionaries(st.text(), _JSON, max_size=4), max_size=6))
def test_the_previous_steps_are_the_history_written_as_one_indented_json_list(steps):
    """Written one step at a time as the history grows, the text is the whole history written at once."""
    method = RawHistory(ScriptedModel([]))
    for step in steps:
        method.history.append(step)
        expected = json.dumps(method.history, indent=1, ensure_ascii=False)
        assert method.previous_steps() == "Previous steps:\n" + expected
