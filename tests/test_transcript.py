import json
import time

import pytest

from pos_bench.models.scripted import ScriptedModel
from pos_bench.transcript import Recorded, Transcript, write_result
from pos_bench.types import Message, Prompt, Reply, Usage

PROMPT = Prompt(messages=(Message("user", "hello"),))


class Broken:
    name = "broken"

    def describe(self):
        return {}

    def generate(self, prompt, *, role="agent"):
        raise ConnectionError("endpoint down")


def test_every_call_is_an_event_and_usage_is_summed_per_role(tmp_path):
    log = Transcript(tmp_path / "events.jsonl")
    model = Recorded(ScriptedModel({"agent": ["a"], "belief": ["bb"]}), log)
    model.generate(PROMPT)
    model.generate(PROMPT, role="belief")
    model.generate(PROMPT, role="belief")
    log.close()
    assert set(model.usage) == {"agent", "belief"} and model.usage["belief"].calls == 2
    lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["role"] for e in lines] == ["agent", "belief", "belief"]
    assert (
        lines[0]["prompt"]["messages"] == [{"role": "user", "content": "hello"}] and lines[1]["reply"] == "bb"
    )


def test_a_failed_call_is_logged_and_raised():
    log = Transcript()
    with pytest.raises(ConnectionError):
        Recorded(Broken(), log).generate(PROMPT, role="judge")
    (event,) = log.of_kind("call_error")
    assert event["role"] == "judge" and "endpoint down" in event["error"]


def test_results_are_written_whole(tmp_path):
    write_result(tmp_path / "result.json", {"usage": {"agent": Usage(1, 2, 3)}})
    assert json.loads((tmp_path / "result.json").read_text()) == {
        "usage": {"agent": {"input_tokens": 1, "output_tokens": 2, "calls": 3}}
    }
    assert not list(tmp_path.glob("*.tmp"))


class Busy:
    """Works on the CPU for a while before answering, like an in-process model."""

    name = "busy"

    def describe(self):
        return {}

    def generate(self, prompt, *, role="agent"):
        started = time.process_time()
        while time.process_time() - started < 0.05:
            pass
        return Reply("{}", Usage(10, 1, 1))


def test_a_call_event_keeps_the_cpu_time_spent_during_the_call():
    log = Transcript()
    Recorded(Busy(), log).generate(PROMPT)
    Recorded(ScriptedModel(delay=0.05), log).generate(PROMPT)
    busy, sleeping = log.of_kind("call")
    assert busy["cpu_seconds"] >= 0.05 and busy["seconds"] >= 0.05
    assert sleeping["seconds"] >= 0.05 and sleeping["cpu_seconds"] < 0.04  # waiting costs no CPU
