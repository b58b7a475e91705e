"""The progress bar's live counts, read from the episodes' transcripts as they grow."""

from pos_bench import events
from pos_bench.runner.progress import Live, Progress
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
