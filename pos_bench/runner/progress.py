"""The run's progress bar: episodes with an ETA, plus turns, model calls and errors as they happen.

Live counts come from the episodes' own `events.jsonl` (each worker flushes every event), read incrementally,
so no channel between workers and the main process is needed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tqdm import tqdm

from pos_bench import events
from pos_bench.transcript import episode_dir
from pos_bench.types import EpisodeResult, Task


class Live:
    """What one in-flight episode has done so far, read from its transcript."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.turns = 0
        self.calls = 0

    def refresh(self) -> None:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            if line.strip():
                event = events.parse(json.loads(line))
                self.turns += isinstance(event, events.TURN_KINDS)
                self.calls += isinstance(event, events.CALL_KINDS)
        self.offset += end


class Progress:
    """`tick` reads the live counts at most once per `interval` seconds, and never when the bar is off: a
    backend ticks at every finished episode, and each read opens every in-flight episode's transcript."""

    def __init__(self, run_dir: Path, *, total: int, finished: int, enabled: bool, interval: float = 1.0):
        self.run_dir = run_dir
        self.enabled = enabled
        self.interval = interval
        self._read_at = float("-inf")
        self.bar = tqdm(total=total, initial=finished, disable=not enabled, desc="episodes", unit="ep")
        self.live: dict[tuple[str, int], Live] = {}
        self.turns = self.calls = self.errors = 0
        self.saved = finished
        """Episodes with a row in `results.jsonl`, this run's included."""

    def tick(self, running: list[Task]) -> None:
        """Refresh the counts of the episodes in flight."""
        now = time.monotonic()
        if not self.enabled or now - self._read_at < self.interval:
            return
        self._read_at = now
        for task in running:
            path = episode_dir(self.run_dir, task.id, task.trial) / "events.jsonl"
            live = self.live.setdefault((task.id, task.trial), Live(path))
            live.refresh()
        self._show()

    def finished(self, result: EpisodeResult) -> None:
        self.live.pop((result.task_id, result.trial), None)
        self.turns += result.turns
        self.calls += sum(u.calls for u in result.usage.values())
        self.errors += result.status == "error"
        self.saved += 1
        self.bar.update(1)
        self._show()

    def _show(self) -> None:
        if not self.enabled:
            return
        turns = self.turns + sum(x.turns for x in self.live.values())
        calls = self.calls + sum(x.calls for x in self.live.values())
        self.bar.set_postfix(
            turns=turns, calls=calls, errors=self.errors, running=len(self.live), refresh=True
        )

    def close(self) -> None:
        self.bar.close()
