from pos_bench import events
from pos_bench.analysis.reuse import Tokens, after_first, episode_reuse, turn_reuse
from pos_bench.transcript import Transcript
from pos_bench.types import Usage


def call(role: str, prompt: int, reused: int, cpu: float | None = 1.0, cached: bool = False) -> events.Call:
    return events.Call(
        role=role, usage=Usage(prompt, 5, 1, reused), seconds=2.0, cpu_seconds=cpu, cached=cached
    )


def pos_episode() -> list[events.Event]:
    """Belief init, then two PoS turns (policy call, step, belief update and Sentinel), a repaired policy
    call in the second, and a third policy call answered from the response cache."""
    return [
        events.Reset(),
        call("belief", 1000, 0),
        call("sentinel_consistency", 800, 4),
        call("agent", 9000, 4),
        events.Step(turn=0),
        call("belief", 1200, 600),
        call("sentinel_consistency", 900, 4),
        call("agent", 9500, 8600),
        call("agent", 9700, 9500),  # the repair of the same turn
        events.Step(turn=1),
        events.Memory(turn=1),
        call("belief", 1300, 700, cpu=None),
        call("agent", 9900, 0, cached=True),
    ]


def test_calls_are_grouped_by_the_turn_they_serve():
    turns = turn_reuse(pos_episode())
    assert [t.turn for t in turns] == [0, 1, 2, 3]
    start, first, second, third = turns
    assert set(start.roles) == {"belief", "sentinel_consistency"} and start.total.prompt == 1800
    assert first.roles["agent"] == Tokens(1, 9000, 4, 2.0, 1.0)
    assert first.roles["belief"].prompt == 1200 and first.roles["sentinel_consistency"].reused == 4
    assert second.roles["agent"] == Tokens(2, 19200, 18100, 4.0, 2.0)
    assert second.roles["belief"].cpu_seconds is None  # not recorded by that call
    assert second.total.calls == 3 and second.total.cpu_seconds == 2.0
    # the reply from the response cache reached no server: counted, not in the tokens
    assert third.roles == {} and third.from_response_cache == 1 and third.total == Tokens()
    assert [t.from_response_cache for t in turns[:3]] == [0, 0, 0]


def test_after_first_sums_the_later_turns_and_gives_the_evaluated_share():
    later = after_first(turn_reuse(pos_episode()))
    assert later.prompt == 19200 + 1300 and later.reused == 18100 + 700
    assert later.evaluated == 1700 and abs(later.evaluated_share - 1700 / 20500) < 1e-12
    assert Tokens().evaluated_share is None


def test_an_episode_folder_is_read_through_its_transcript(tmp_path):
    log = Transcript(tmp_path / "events.jsonl")
    for event in pos_episode():
        log.write(event)
    log.close()
    assert episode_reuse(tmp_path) == turn_reuse(pos_episode())
