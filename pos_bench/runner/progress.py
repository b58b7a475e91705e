"""The run's progress bar: episodes with an ETA, plus turns, model calls and errors as they happen.

Live counts come from the episodes' own `events.jsonl` (each worker flushes every event), read incrementally,
so no channel between workers and the main process is needed.

The bar reads them once a second for as long as the run plays, so that read is kept small: each in-flight
episode's file is opened once and read from where the last read ended, and a line is counted by the kind its
first field names (`{"kind": "call", …`, as `Transcript` writes every line) without parsing the rest. Reading
20 episodes of a sweep warm, alone (2026-12-07): 0.075 ms of the main process's CPU per model call of a raw
ALFWorld run parsed whole, 0.008 counted this way (PoS: 0.040, 0.005); too little to show in a 48-game run's
main-process CPU (3.1–3.3 s, start-up included, before and after). A transcript replaced while its episode is
in flight (an episode played again empties its folder first) is read again from its start, where an offset into
the old file skipped lines.

The ETA is counted in model calls, not episodes, so it appears within the first calls instead of after the
first episode: the run's measured throughput (calls per second, all workers together) against the calls still
expected, an episode being expected to cost the mean of the episodes finished in this session or, before any
has finished, the calls per turn measured so far times the turn budget (an upper bound: episodes that succeed
end early, and the estimate falls as they do).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from pathlib import Path
from typing import BinaryIO

from tqdm import tqdm

from pos_bench import events
from pos_bench.transcript import episode_dir
from pos_bench.types import EpisodeResult, Task


def eta_seconds(
    *,
    elapsed: float,
    calls: int,
    turns: int,
    finished_calls: list[int],
    running_calls: list[int],
    waiting: int,
    turn_budget: int | None,
) -> float | None:
    """Seconds until the run ends, or None before anything has been measured.

    `calls`/`turns`: made by this session so far (finished and running episodes); `finished_calls`: calls of each
    episode this session finished; `running_calls`: calls so far of each episode in flight; `waiting`: episodes
    not started yet."""
    if elapsed <= 0 or calls <= 0:
        return None
    if finished_calls:
        per_episode = statistics.fmean(finished_calls)
    elif turns and turn_budget:
        per_episode = calls / turns * turn_budget
    else:
        return None
    remaining = waiting * per_episode + sum(max(per_episode - done, 0.0) for done in running_calls)
    return remaining / (calls / elapsed)


def clock(seconds: float | None) -> str:
    """`2h05m`, `7m30s`, `45s`; `?` when unknown."""
    if seconds is None:
        return "?"
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


TURN_NAMES = frozenset(kind.kind for kind in events.TURN_KINDS)
CALL_NAMES = frozenset(kind.kind for kind in events.CALL_KINDS)
_KIND_FIRST = re.compile(rb'\{"kind": ?"([^"\\]*)"')


def line_kind(line: bytes) -> str:
    """The kind of one transcript line: read from its first field when the line starts with it (every line
    `Transcript` writes does), else from the parsed line."""
    found = _KIND_FIRST.match(line)
    if found is not None:
        return found.group(1).decode("utf-8", "replace")
    try:
        data = json.loads(line)
    except ValueError:
        return ""
    return str(data.get("kind", "")) if isinstance(data, dict) else ""


class Live:
    """What one in-flight episode has done so far, read from its transcript: the file stays open between two
    reads (`close` when the episode ends), and each read takes only the lines written since the last. A file
    replaced meanwhile (an episode played again empties its folder first) is read again from its start."""

    def __init__(self, path: Path):
        self.path = path
        self.turns = 0
        self.calls = 0
        self._file: BinaryIO | None = None
        self._partial = b""
        """The end of the last read that was not a whole line yet."""

    def refresh(self) -> None:
        try:
            if self._file is not None and os.stat(self.path).st_ino != os.fstat(self._file.fileno()).st_ino:
                self.close()
            if self._file is None:
                self._file = self.path.open("rb")
                self.turns = self.calls = 0
                self._partial = b""
            data = self._partial + self._file.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1
        self._partial = data[end:]
        for line in data[:end].splitlines():
            if line.strip():
                kind = line_kind(line)
                self.turns += kind in TURN_NAMES
                self.calls += kind in CALL_NAMES

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class Progress:
    """`tick` reads the live counts at most once per `interval` seconds, and never when the bar is off: a
    backend ticks at every finished episode, and each read opens every in-flight episode's transcript."""

    def __init__(
        self,
        run_dir: Path,
        *,
        total: int,
        finished: int,
        enabled: bool,
        interval: float = 1.0,
        turn_budget: int | None = None,
    ):
        self.run_dir = run_dir
        self.enabled = enabled
        self.interval = interval
        self.turn_budget = turn_budget
        self.total = total
        self.started = time.monotonic()
        self._read_at = float("-inf")
        # tqdm's own remaining time counts episodes (`?` until one ends); the postfix carries the call-based ETA
        self.bar = tqdm(
            total=total,
            initial=finished,
            disable=not enabled,
            desc="episodes",
            unit="ep",
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]",
        )
        self.live: dict[tuple[str, int], Live] = {}
        self.turns = self.calls = self.errors = 0
        self.finished_calls: list[int] = []
        self.saved = finished
        """Episodes with a row in `results.jsonl`, this run's included."""

    def tick(self, running: list[Task]) -> None:
        """Refresh the counts of the episodes in flight."""
        now = time.monotonic()
        if not self.enabled or now - self._read_at < self.interval:
            return
        self._read_at = now
        for task in running:
            live = self.live.get((task.id, task.trial))
            if live is None:
                path = episode_dir(self.run_dir, task.id, task.trial) / "events.jsonl"
                live = self.live[(task.id, task.trial)] = Live(path)
            live.refresh()
        self._show()

    def finished(self, result: EpisodeResult) -> None:
        live = self.live.pop((result.task_id, result.trial), None)
        if live is not None:
            live.close()
        calls = sum(u.calls for u in result.usage.values())
        self.turns += result.turns
        self.calls += calls
        if result.status != "error":  # an episode cut short by an error says little of what one costs
            self.finished_calls.append(calls)
        self.errors += result.status == "error"
        self.saved += 1
        self.bar.update(1)
        self._show()

    def eta(self) -> float | None:
        """Seconds until the run ends, from the calls measured so far (`eta_seconds`)."""
        return eta_seconds(
            elapsed=time.monotonic() - self.started,
            calls=self.calls + sum(x.calls for x in self.live.values()),
            turns=self.turns + sum(x.turns for x in self.live.values()),
            finished_calls=self.finished_calls,
            running_calls=[x.calls for x in self.live.values()],
            waiting=max(self.total - self.saved - len(self.live), 0),
            turn_budget=self.turn_budget,
        )

    def _show(self) -> None:
        if not self.enabled:
            return
        turns = self.turns + sum(x.turns for x in self.live.values())
        calls = self.calls + sum(x.calls for x in self.live.values())
        self.bar.set_postfix_str(
            f"eta {clock(self.eta())}, turns={turns}, calls={calls}, errors={self.errors}, "
            f"running={len(self.live)}",
            refresh=True,
        )

    def close(self) -> None:
        for live in self.live.values():
            live.close()
        self.bar.close()
