import contextlib
import json
import time

import numpy as np
import pytest

from baselines.pace.encoder import HashingEncoder
from baselines.pace.method import Pace, granularity, pressure, relative_weights, thresholds
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.protocols import playing_under
from pos_bench.transcript import Recorded, Transcript
from pos_bench.types import Brief, Decision, Observation, Step, ToolCall

BENCH = ToyBenchmark(n_tasks=2)
TASK = BENCH.tasks()[0]
SUMMARY = json.dumps({"detailed": "DETAILED", "brief": "BRIEF"})


def act(action):
    return json.dumps({"thought": "t", "action": action})


def run(actions, *, max_turns, **settings):
    log = Transcript()
    model = Recorded(ScriptedModel({"agent": [act(a) for a in actions], "summarizer": [SUMMARY]}), log)
    method = Pace(model, encoder=HashingEncoder(), tokenizer="chars4", **settings)
    with method:
        result = play(
            TASK, BENCH.make_env(model), method, model, brief=BENCH.brief, max_turns=max_turns, log=log
        )
    agent_calls = [c for c in log.of_kind("call") if c["role"] == "agent"]
    return result, log, agent_calls


def user_text(call):
    return call["prompt"]["messages"][-1]["content"]


def test_relative_weights_sum_to_the_number_of_chunks_and_follow_cosine():
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    w = relative_weights(np.array([1.0, 0.0]), keys, 0.3)
    assert w.sum() == pytest.approx(3.0)
    assert w[0] > w[2] > w[1]


def test_pressure_raises_the_thresholds_and_coarsens_the_same_weight():
    low = thresholds(pressure(1, 100, t_max=50, b_max=128_000), base=(0.4, 0.8, 1.5), weight=0.5)
    high = thresholds(pressure(50, 100, t_max=50, b_max=128_000), base=(0.4, 0.8, 1.5), weight=0.5)
    assert high == pytest.approx((0.6, 1.2, 2.25))
    assert granularity(1.6, low) == "full" and granularity(1.6, high) == "detailed"
    assert granularity(0.3, low) == "placeholder"
    assert pressure(2, 64_000, t_max=50, b_max=128_000) == pytest.approx(0.5)


def test_latest_steps_stay_full_and_older_ones_follow_their_relevance():
    _, log, calls = run(["inventory", "look", "look", "look", "look"], max_turns=5)
    prompt = user_text(calls[4])  # four chunks: 1-2 older, 3-4 latest
    latest = prompt.split("Latest steps:\n")[1].split("\n\n")[0].splitlines()
    assert [line.split("]")[0] for line in latest] == ["[step 3", "[step 4"]
    assert all('"observation": "You are in the middle of a room."' in line for line in latest)
    record = log.of_kind("memory")[4]["record"]
    chosen = record["granularity"]
    assert set(chosen) == {"1", "2"}
    # Step 2 (look) resembles the latest steps more than step 1 (inventory) does.
    assert record["weights"]["2"] > 1 > record["weights"]["1"]
    older = prompt.split("Earlier steps")[1].split("Latest steps")[0]
    shown = {
        "full": "You are not carrying",
        "detailed": "DETAILED",
        "brief": "BRIEF",
        "placeholder": "glimpse 1)",
    }
    assert shown[chosen["1"]] in older
    assert GRANULARITY_ORDER.index(chosen["1"]) > GRANULARITY_ORDER.index(chosen["2"])


GRANULARITY_ORDER = ("full", "detailed", "brief", "placeholder")


def test_glimpse_shows_a_step_in_full_without_an_env_step():
    result, log, calls = run(["inventory", "look", "look", "glimpse 1", "look"], max_turns=4)
    assert (result.meta_actions, result.steps) == (1, 4)
    before = user_text(calls[3])
    assert "glimpse 1" in calls[3]["prompt"]["schema"]["properties"]["action"]["enum"]
    assert "You are not carrying anything." not in before.split("Latest steps")[0]
    after = user_text(calls[4])
    assert "[step 1] {" in after and "You are not carrying anything." in after.split("Latest steps")[0]
    assert "glimpse 1" not in calls[4]["prompt"]["schema"]["properties"]["action"]["enum"]
    assert log.of_kind("memory")[3]["record"] == {"glimpse": 1, "valid": True}
    assert result.report["meta_actions"] == {"glimpse": 1}


def test_glimpses_stop_being_offered_at_the_cap():
    _, _, calls = run(["inventory", "look", "look", "glimpse 1", "look"], max_turns=4, max_glimpses=1)
    enum = calls[4]["prompt"]["schema"]["properties"]["action"]["enum"]
    assert not [a for a in enum if a.startswith("glimpse")]
    assert "glimpse" not in calls[4]["prompt"]["meta_actions"]


def test_one_summary_per_step_and_two_embeddings_per_turn_are_counted():
    result, log, _ = run(["look"] * 4, max_turns=4)
    roles = [c["role"] for c in log.of_kind("call")]
    assert roles.count("summarizer") == 4
    # Keys for 4 chunks, one query on the last turn (the only one with a chunk older than the latest two).
    assert result.report["embedding"]["calls"] == 5
    records = [e["record"] for e in log.of_kind("memory")]
    assert [r["embedding"]["calls"] for r in records] == [1, 1, 1, 2]
    assert result.report["embedding"]["input_tokens"] > 0


def test_tool_benchmarks_get_glimpse_as_a_tool():
    tools = ({"type": "function", "function": {"name": "ask", "parameters": {"type": "object"}}},)
    brief = Brief(system="sys")
    model = ScriptedModel({"summarizer": [SUMMARY]})
    method = Pace(model, encoder=HashingEncoder(), tokenizer="chars4", recent=1)
    obs = Observation(text="hello", tools=tools, goal="diagnose")
    method.start(TASK, brief, obs)
    for turn in range(2):
        decision = Decision(thought="", action=ToolCall("ask", {"q": f"question {turn}"}))
        method.update(Step(turn, obs, decision, obs))
    prompt = method.prompt(obs)
    names = [
        t["function"]["name"]
        for t in json.loads(
            prompt.messages[1].content.split("Available tools:\n")[1].split("\nMemory actions")[0]
        )
    ]
    assert names == ["ask", "glimpse"] and prompt.meta_actions == ("glimpse",)
    record = method.update(Step(2, obs, Decision("", None, meta=ToolCall("glimpse", {"chunk_id": 1})), None))
    assert record == {"glimpse": 1, "valid": True}
    assert "[step 1] {" in method.prompt(obs).messages[1].content


def test_bad_thresholds_are_rejected():
    with pytest.raises(ValueError, match="alpha"):
        Pace(ScriptedModel(), encoder=HashingEncoder(), alpha=2.0)


def test_each_action_of_a_multi_action_turn_is_its_own_chunk():
    import dataclasses

    brief = dataclasses.replace(BENCH.brief, max_actions_per_turn=3)
    reply = json.dumps({"thought": "t", "actions": ["look", "inventory", "look"]})
    log = Transcript()
    model = Recorded(ScriptedModel({"agent": [reply], "summarizer": [SUMMARY]}), log)
    with Pace(model, encoder=HashingEncoder(), tokenizer="chars4") as method:
        result = play(TASK, BENCH.make_env(model), method, model, brief=brief, max_turns=2, log=log)
    assert result.steps == 6 and result.report["chunks"] == 6
    assert model.usage["summarizer"].calls == 6 and model.usage["agent"].calls == 2


class SlowEncoder(HashingEncoder):
    """Spends measurable CPU per text, and notes whether it ran inside a compute slot."""

    def __init__(self, inside):
        super().__init__()
        self.inside, self.seen = inside, []

    def embed(self, texts):
        self.seen.append(self.inside[0])
        deadline = time.process_time() + 0.01
        while time.process_time() < deadline:
            pass
        return super().embed(texts)


def test_the_encoder_computes_inside_the_episodes_compute_slot_and_its_cpu_is_recorded():
    inside = [False]

    @contextlib.contextmanager
    def gate():
        inside[0] = True
        try:
            yield
        finally:
            inside[0] = False

    log = Transcript()
    model = Recorded(ScriptedModel({"agent": [act("look")] * 4, "summarizer": [SUMMARY]}), log)
    encoder = SlowEncoder(inside)
    with Pace(model, encoder=encoder, tokenizer="chars4") as method, playing_under(gate):
        play(TASK, BENCH.make_env(model), method, model, brief=BENCH.brief, max_turns=4, log=log)
    assert encoder.seen and all(encoder.seen)
    spent = [e["record"]["embedding"]["cpu_seconds"] for e in log.of_kind("memory")]
    assert sum(spent) >= 0.01 * len(encoder.seen) - 1e-3
    records = [e["record"] for e in log.of_kind("memory")]
    assert all(s >= 0.01 * r["embedding"]["calls"] - 1e-3 for s, r in zip(spent, records))
