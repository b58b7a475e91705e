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


def test_a_line_is_the_rows_text_whatever_its_values(tmp_path):
    """Written with the encoder walking the values (`Transcript.line_text`), each event's line holds what its
    row holds: records as objects, tuples and sets as lists, a usage without its empty cache counts, fields
    that are None left out where the event says so, a value JSON cannot hold as its text; the row's own text
    where a key cannot be written as the row writes it."""
    import types as pytypes
    from pathlib import Path

    from pos_bench import events
    from pos_bench.truth.reading import Claim, Fact, Term
    from pos_bench.types import Observation, ToolCall

    schema = {
        "type": "object",
        "properties": {"action": {"enum": ("look", "go to desk 1")}},
        "required": ["action"],
    }
    prompt = Prompt(
        messages=(Message("system", "rules"), Message("user", "café ☕ \ud800")), schema=schema, max_tokens=64
    )
    chosen = [
        events.Reset(
            task={"id": "t", 3: (1, 2)}, observation=Observation("You see a desk.", actions=("look",))
        ),
        events.Call(
            role="agent", prompt=prompt, reply="{}", usage=Usage(10, 2, 1), seconds=0.5, cpu_seconds=0.001
        ),
        events.Call(role="belief", prompt=prompt, reply="x", usage=Usage(10, 2, 1, cached_input_tokens=8)),
        events.Step(
            turn=1, thought=None, action=ToolCall("search", {"q": "x", "n": 2}), observation=Observation("ok")
        ),
        events.Memory(
            turn=2, record={"kept": {"b", "a"}, "view": pytypes.MappingProxyType({"k": 1}), "at": Path("/x")}
        ),
        events.Truth(step=0, facts=(Fact("desk 1", "at", "room"),), terms=(Term("at", None, ("on", "in")),)),
        events.Claims(step=0, claims=(Claim("desk 1", text="on the desk", probability=0.5),)),
        events.Memory(turn=3, record={(1, 2): "a key JSON cannot write"}),
    ]
    log = Transcript(tmp_path / "events.jsonl", keep=False)
    for event in chosen:
        log.write(event)
    log.close()
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    rows = [json.loads(json.dumps(events.row(event), default=str)) for event in chosen]
    assert [{k: v for k, v in line.items() if k != "time"} for line in lines] == [
        {k: v for k, v in row.items() if k != "time"} for row in rows
    ]
    assert "cached_input_tokens" not in lines[1]["usage"] and lines[2]["usage"]["cached_input_tokens"] == 8
    assert "cpu_seconds" not in lines[2] and lines[4]["record"]["kept"] == ["a", "b"]
