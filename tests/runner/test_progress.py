"""The progress bar's live counts, read from the episodes' transcripts as they grow."""

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pos_bench import events
from pos_bench.runner.progress import Live, Progress, clock, eta_seconds, line_kind
from pos_bench.transcript import Transcript, episode_dir
from pos_bench.types import EpisodeResult, Task, Usage


def test_live_counts_follow_a_growing_transcript(tmp_path):
    path = tmp_path / "events.jsonl"
    log = Transcript(path)
    live = Live(path)
    live.refresh()  # nothing written yet
    log.write(events.Call(role="agent"))
    log.write(events.Step(turn=0))
    live.refresh()
    log.write(events.Call(role="belief"))
    log.write(events.TurnSpent(turn=1))
    live.refresh()
    assert (live.turns, live.calls) == (2, 2)
    with path.open("a") as f:
        f.write('{"kind": "call", "rol')  # a line still being written is not counted yet
    live.refresh()
    assert live.calls == 2


def test_every_line_a_transcript_writes_is_counted_by_its_kind(tmp_path):
    path = tmp_path / "events.jsonl"
    log = Transcript(path)
    for kind in events.KINDS.values():
        log.write(kind())
    log.write(events.Call(role='agent "quoted", {"kind": "step"}'))
    lines = path.read_bytes().splitlines()
    assert len(lines) == len(events.KINDS) + 1
    assert [line_kind(line) for line in lines] == [json.loads(line)["kind"] for line in lines]
    assert line_kind(b'{"time": 1.0, "kind": "step"}') == "step"  # a line another writer ordered differently
    assert line_kind(b"not json") == ""


def test_live_counts_start_again_when_the_transcript_is_replaced(tmp_path):
    path = tmp_path / "events.jsonl"
    log = Transcript(path)
    log.write(events.Call(role="agent"))
    log.write(events.Step(turn=0))
    live = Live(path)
    live.refresh()
    assert (live.turns, live.calls) == (1, 1)
    log.close()
    path.unlink()  # the episode is played again: its folder is emptied and the transcript written anew
    again = Transcript(path)
    again.write(events.Call(role="agent"))
    live.refresh()
    assert (live.turns, live.calls) == (0, 1)
    live.close()


def open_files_under(folder) -> int:
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            found += os.readlink(f"/proc/self/fd/{fd}").startswith(str(folder))
        except OSError:
            pass
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_a_running_episodes_transcript_stays_open_until_it_finishes(tmp_path):
    progress = Progress(tmp_path, total=2, finished=0, enabled=True, interval=0.0)
    running = [Task("toy/001"), Task("toy/002")]
    for task in running:
        Transcript(episode_dir(tmp_path, task.id) / "events.jsonl").write(events.Step(turn=0))
    for _ in range(5):
        progress.tick(running)
    assert open_files_under(tmp_path) == 2
    progress.finished(EpisodeResult("toy/001", "done", turns=1))
    assert open_files_under(tmp_path) == 1
    progress.close()
    assert open_files_under(tmp_path) == 0


def test_progress_adds_finished_and_running_episodes(tmp_path):
    progress = Progress(tmp_path, total=3, finished=1, enabled=True, interval=0.0)
    running = Task("toy/001")
    log = Transcript(episode_dir(tmp_path, running.id) / "events.jsonl")
    log.write(events.Call(role="agent"))
    log.write(events.Step(turn=0))
    progress.tick([running])
    done = EpisodeResult("toy/002", "done", turns=5, usage={"agent": Usage(1, 1, 7)})
    progress.finished(done)
    progress.finished(EpisodeResult("toy/003", "error"))
    assert (progress.saved, progress.errors, progress.turns, progress.calls) == (3, 1, 5, 7)
    assert sum(x.turns for x in progress.live.values()) == 1
    progress.close()


def test_ticks_read_transcripts_at_most_once_per_interval_and_never_when_off(tmp_path):
    running = Task("toy/001")
    log = Transcript(episode_dir(tmp_path, running.id) / "events.jsonl")
    log.write(events.Step(turn=0))
    off = Progress(tmp_path, total=1, finished=0, enabled=False)
    off.tick([running])
    assert off.live == {}
    slow = Progress(tmp_path, total=1, finished=0, enabled=True, interval=3600.0)
    slow.tick([running])  # the first tick reads
    log.write(events.Step(turn=1))
    slow.tick([running])  # within the interval: not read again
    assert slow.live[(running.id, running.trial)].turns == 1
    for progress in (off, slow):
        progress.close()


def test_eta_appears_from_the_first_turns_before_any_episode_ends():
    # 6 calls over 2 turns in 60 s, a 50-turn budget: 150 calls an episode, 144 left of the running one and
    # 9 episodes waiting, at 0.1 calls/s
    eta = eta_seconds(
        elapsed=60.0, calls=6, turns=2, finished_calls=[], running_calls=[6], waiting=9, turn_budget=50
    )
    assert eta == pytest.approx((144 + 9 * 150) / 0.1)
    assert (
        eta_seconds(
            elapsed=5.0, calls=1, turns=0, finished_calls=[], running_calls=[1], waiting=3, turn_budget=50
        )
        is None
    )  # no turn measured yet
    assert (
        eta_seconds(
            elapsed=0.0, calls=0, turns=0, finished_calls=[], running_calls=[], waiting=3, turn_budget=50
        )
        is None
    )


@given(
    seconds_per_call=st.floats(0.1, 30.0),
    calls_per_episode=st.lists(st.integers(1, 200), min_size=1, max_size=8),
    left=st.integers(0, 200),
)
def test_after_finished_episodes_the_eta_is_their_time_times_the_episodes_left(
    seconds_per_call, calls_per_episode, left
):
    # one worker, episodes played one after another at a steady seconds per call
    elapsed = seconds_per_call * sum(calls_per_episode)
    eta = eta_seconds(
        elapsed=elapsed,
        calls=sum(calls_per_episode),
        turns=sum(calls_per_episode),
        finished_calls=calls_per_episode,
        running_calls=[],
        waiting=left,
        turn_budget=50,
    )
    per_episode = elapsed / len(calls_per_episode)
    assert eta == pytest.approx(per_episode * left, rel=1e-6, abs=1e-6)


def test_the_bar_shows_a_numeric_eta_once_a_turn_is_played(tmp_path, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr("pos_bench.runner.progress.time.monotonic", lambda: now[0])
    progress = Progress(tmp_path, total=4, finished=0, enabled=True, interval=0.0, turn_budget=10)
    running = Task("toy/001")
    log = Transcript(episode_dir(tmp_path, running.id) / "events.jsonl")
    log.write(events.Call(role="agent"))
    now[0] += 2.0
    progress.tick([running])
    assert progress.eta() is None and "eta ?" in str(progress.bar)
    log.write(events.Step(turn=0))
    now[0] += 2.0
    progress.tick([running])
    # 1 call per turn, 10 turns an episode: 9 calls left of the running one, 30 of the 3 waiting, 4 s a call
    assert progress.eta() == pytest.approx((9 + 30) * 4.0)
    assert "eta 2m36s" in str(progress.bar)
    progress.close()


def test_clock_reads_like_a_duration():
    assert [clock(None), clock(45), clock(450), clock(7500)] == ["?", "45s", "7m30s", "2h05m"]
