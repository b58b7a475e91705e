"""Transcript events: one typed record per kind, written and read through `pos_bench.events`; a transcript
recorded before the typed records existed (commit ef74750, a PoS episode on the toy household) reads back."""

import json
from dataclasses import replace

import pytest

from pos_bench import events
from pos_bench.transcript import Transcript
from pos_bench.types import Observation, Task, Usage
from tests.conftest import REPO

RECORDED = REPO / "tests" / "fixtures" / "transcript_before_22" / "events.jsonl"


def test_a_transcript_recorded_before_the_change_reads_as_typed_events():
    read = list(events.read(RECORDED))
    kinds = [type(e) for e in read]
    assert kinds[0] is events.Reset and kinds[-1] is events.Score
    assert kinds.count(events.Step) == 3 and kinds.count(events.Memory) == 3
    assert events.Other not in kinds
    calls = [e for e in read if isinstance(e, events.Call)]
    assert {c.role for c in calls} >= {"agent", "belief"}
    assert all(isinstance(c.usage, Usage) and c.usage.input_tokens > 0 for c in calls)
    views = [events.PosMemory.of(e.record) for e in read if isinstance(e, events.Memory)]
    assert all(v is not None and v.health is not None and v.has_active_gap for v in views)
    assert [v.step for v in views] == [0, 1, 2]


def test_each_recorded_line_is_written_again_as_it_was():
    for line in RECORDED.read_text().splitlines():
        data = json.loads(line)
        assert events.row(events.parse(data), now=data["time"]) == data


def test_the_transcript_writes_typed_events_and_an_unknown_kind_reads_as_other(tmp_path):
    path = tmp_path / "events.jsonl"
    log = Transcript(path)
    log.write(events.Reset(task=Task("t/1"), observation=Observation("hello", actions=("look",))))
    log.write(events.Call(role="belief", reply="{}", usage=Usage(7, 2, 1)))
    log.write(events.Error(error="boom"))
    log.close()
    with path.open("a") as f:
        f.write(json.dumps({"kind": "from_the_future", "time": 1.0, "x": 1}) + "\n")
    reset, call, error, other = events.read(path)
    assert reset.task["id"] == "t/1" and reset.observation["text"] == "hello"
    assert call.usage == Usage(7, 2, 1) and call.served is None and "served" not in log.events[1]
    assert error.error == "boom" and "traceback" not in log.events[2]
    assert other == events.Other(name="from_the_future", data={"x": 1}, time=1.0)


def test_a_memory_record_of_another_method_has_no_pos_view():
    assert events.PosMemory.of({"history_turns": 3}) is None
    view = events.PosMemory.of({"status": "committed", "committed_belief": {"frontier": None}})
    assert view is not None and view.has_active_gap and view.active_gap is None


def test_reading_some_kinds_gives_those_events_in_order_and_still_checks_every_line(tmp_path):
    path = tmp_path / "events.jsonl"
    whole = RECORDED.read_text().splitlines()
    # a line laid out by another writer (kind not first) is decoded to learn its kind
    moved = json.loads(next(line for line in whole if json.loads(line)["kind"] == "memory"))
    moved = json.dumps({k: moved[k] for k in reversed(list(moved))})
    path.write_text("\n".join([*whole, moved]) + "\n")
    kept = (events.Memory, events.Step)
    assert list(events.read(path, kept)) == [e for e in events.read(path) if isinstance(e, kept)]
    assert sum(isinstance(e, events.Memory) for e in events.read(path, kept)) == 4
    with path.open("ab") as f:
        f.write(b'{"kind": "call", "reply": "\xc3("}\n')
    with pytest.raises(events.DamagedFile, match="not UTF-8"):
        list(events.read(path, (events.Memory,)))


def test_a_truth_restated_at_later_steps_reads_as_if_each_line_were_decoded(tmp_path):
    from pos_bench.truth import Fact, WorldTruth

    here, there = Fact("mug 1", "location", "desk 1"), Fact("mug 1", "location", "shelf 2")
    worlds = [({here}, {"mug 1", "desk 1"}), ({here}, {"mug 1", "desk 1"}), ({here}, {"mug 1", "desk 1"})]
    worlds += [({there}, {"mug 1", "shelf 2"})] * 2 + [({here}, {"mug 1", "desk 1"})]
    path = tmp_path / "events.jsonl"
    log = Transcript(path)
    previous = None
    for step, (facts, entities) in enumerate(worlds, start=-1):
        world = WorldTruth(facts=frozenset(facts), entities=frozenset(entities))
        log.write(events.Truth.of(step, world, previous))
        log.write(events.Step(turn=step + 1, action="go"))
        previous = world
    log.close()
    decoded = [events.parse(json.loads(line)) for line in path.read_text().splitlines()]
    assert list(events.read(path)) == decoded
    assert list(events.read(path, (events.Truth,))) == [e for e in decoded if isinstance(e, events.Truth)]
    truths = events.truths(events.read(path))
    assert [truths[s].facts for s in sorted(truths)] == [frozenset(f) for f, _ in worlds]
    assert truths == events.truths(decoded)


def test_an_unchanged_world_is_written_without_its_facts_and_an_older_transcript_reads_the_same(tmp_path):
    """A truth line leaves out facts that did not change; a transcript written when every line restated them
    reads back as the same truths."""
    from pos_bench.truth import Fact, WorldTruth

    here, there = Fact("mug 1", "location", "desk 1"), Fact("mug 1", "location", "shelf 2")
    worlds = [
        WorldTruth(facts=frozenset(f), entities=frozenset({"mug 1"})) for f in ({here}, {here}, {there})
    ]
    new, old = tmp_path / "new.jsonl", tmp_path / "old.jsonl"
    written, restated = Transcript(new), Transcript(old)
    previous = None
    for step, world in enumerate(worlds, start=-1):
        event = events.Truth.of(step, world, previous)
        written.write(event)
        # the layout before facts were left out: every line has them
        restated.write(replace(event, facts=tuple(sorted(world.facts))))
        previous = world
    written.close()
    restated.close()
    lines = [json.loads(line) for line in new.read_text().splitlines()]
    assert ["facts" in line for line in lines] == [True, False, True]
    expected = dict(enumerate(worlds, start=-1))
    assert events.truths(events.read(new)) == events.truths(events.read(old)) == expected
