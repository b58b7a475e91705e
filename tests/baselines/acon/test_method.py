import json

import pytest

from baselines.acon.method import Acon, after_heading
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Recorded, Transcript

BENCH = ToyBenchmark(n_tasks=2)
TASK = BENCH.tasks()[0]
LOOK = json.dumps({"thought": "check", "action": "look"})


def run(*, max_turns=4, compressor=("## History summary\nSUMMARY-1",), **settings):
    log = Transcript()
    model = Recorded(ScriptedModel({"agent": [LOOK], "compressor": list(compressor)}), log)
    method = Acon(model, tokenizer="chars4", **settings)
    result = play(TASK, BENCH.make_env(model), method, model, brief=BENCH.brief, max_turns=max_turns, log=log)
    return result, log


def user_text(call):
    return call["prompt"]["messages"][-1]["content"]


def roles(log):
    return [c["role"] for c in log.of_kind("call")]


def test_no_compression_below_the_thresholds():
    result, log = run(t_hist=100_000, t_obs=100_000)
    assert roles(log) == ["agent"] * 4
    last = user_text(log.of_kind("call")[-1])
    assert last.count("You are in the middle of a room.") == 4  # three previous steps + current observation
    assert result.report["history_compressions"] == 0


def test_history_past_t_hist_becomes_a_summary_and_only_the_last_step_stays_verbatim():
    # One step renders to 23 chars4 tokens, over t_hist=20: every turn with an older step compresses.
    result, log = run(t_hist=20, t_obs=100_000, max_turns=4)
    assert roles(log) == ["agent", "agent", "compressor", "agent", "compressor", "agent"]
    calls = log.of_kind("call")
    history_input = user_text(calls[2])
    assert history_input.count('"action": "look"') == 1  # the span excludes the preserved last step
    prompt = user_text(calls[3])
    assert "Summary of the earlier steps:\nSUMMARY-1" in prompt
    assert (
        json.loads(prompt.split("Latest steps:\n")[1].split("\n\nCurrent observation")[0])[0]["action"]
        == "look"
    )
    assert prompt.count('"action": "look"') == 1
    assert result.report["history_compressions"] == 2
    memory = [e["record"] for e in log.of_kind("memory")]
    assert memory[1]["history"]["steps"] == 1


def test_reset_rule_feeds_the_previous_summary_and_replaces_it():
    _, log = run(
        t_hist=20, t_obs=100_000, compressor=["## History summary\nFIRST", "## History summary\nSECOND"]
    )
    calls = log.of_kind("call")
    second = [c for c in calls if c["role"] == "compressor"][1]
    assert "<previous_summary>\nFIRST\n</previous_summary>" in user_text(second)
    last = user_text(calls[-1])
    assert "SECOND" in last and "FIRST" not in last


def test_accumulate_rule_keeps_both_summaries():
    _, log = run(t_hist=20, t_obs=100_000, summary_rule="accumulate", compressor=["A-ONE", "A-TWO"])
    last = user_text(log.of_kind("call")[-1])
    assert "A-ONE\n\nA-TWO" in last


def test_long_observation_is_rewritten_before_it_enters_the_history():
    refined = "## Reasoning\nonly the room matters\n## Refined observation\nROOM"
    result, log = run(t_hist=100_000, t_obs=5, max_turns=3, compressor=[refined])
    assert roles(log) == ["agent", "compressor"] * 3
    calls = log.of_kind("call")
    assert "Current observation:\nYou are in the middle of a room." in user_text(calls[1])
    prompt = user_text(calls[2])
    assert "Current observation:\nROOM" in prompt and "middle of a room" not in prompt
    assert result.report["observation_compressions"] == 3


def test_history_mode_leaves_observations_alone():
    _, log = run(t_hist=100_000, t_obs=5, mode="history")
    assert "compressor" not in roles(log)


def test_guideline_variant_reaches_the_compressor():
    _, domain_log = run(t_hist=20, t_obs=100_000, max_turns=3)
    _, base_log = run(t_hist=20, t_obs=100_000, max_turns=3, guideline="base")
    domain_text = user_text(next(c for c in domain_log.of_kind("call") if c["role"] == "compressor"))
    base_text = user_text(next(c for c in base_log.of_kind("call") if c["role"] == "compressor"))
    assert "Nothing happens." in domain_text and "GUARDRAILS" in domain_text
    assert "GUARDRAILS" not in base_text and "REASONING" in base_text


def test_min_turns_between_spaces_compressions():
    result, _ = run(t_hist=-1, t_obs=100_000, max_turns=6, min_turns_between=3)
    assert result.report["history_compressions"] == 2


def test_after_heading_keeps_the_text_under_the_heading_or_the_whole_reply():
    assert after_heading("notes\n## History summary\n- a\n- b", "history summary") == "- a\n- b"
    assert after_heading("**Refined observation:**\nX", "refined observation") == "X"
    assert after_heading("plain reply", "history summary") == "plain reply"


def test_bad_settings_are_rejected():
    with pytest.raises(ValueError, match="t_obs"):
        Acon(ScriptedModel(), t_obs=0)


def test_each_action_of_a_multi_action_turn_enters_the_history_with_its_observation():
    import dataclasses
    import json

    brief = dataclasses.replace(BENCH.brief, max_actions_per_turn=2)
    reply = json.dumps({"thought": "t", "actions": ["look", "inventory"]})
    log = Transcript()
    model = Recorded(ScriptedModel({"agent": [reply], "compressor": ["## History summary\nS"]}), log)
    method = Acon(model, tokenizer="chars4", t_hist=100000)
    result = play(TASK, BENCH.make_env(model), method, model, brief=brief, max_turns=2, log=log)
    assert result.steps == 4 and result.report["steps_verbatim"] == 4
    last = user_text([c for c in log.of_kind("call") if c["role"] == "agent"][-1])
    assert last.count('"inventory"') >= 1 and "You are not carrying anything." in last
