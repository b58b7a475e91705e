"""A run's `results.jsonl`: one compact row per episode, keyed by (task, trial) (`types.result_row`), appended by the one process that
holds the run folder's lock. Read back strictly: a bad line or a task listed twice stops the run with a message
naming the file and the fix; only the torn last line a killed run leaves is dropped, with a warning. The run
folder's lock keeps a second process from writing the same file."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from filelock import FileLock, Timeout

from pos_bench.redact import NO_SECRETS, Redactor
from pos_bench.runner.episode import error_result
from pos_bench.transcript import dumps
from pos_bench.types import EpisodeResult, Task, result_from_json, result_row


class ResultsError(RuntimeError):
    """`results.jsonl` cannot be trusted as it is; the message names the line and the fix."""


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "task_id": (str,),
    "success": (bool,),
    "score": (int, float),
    "turns": (int,),
    "steps": (int,),
    "meta_actions": (int,),
    "spent_turns": (int,),
    "peak_input_tokens": (int,),
    "dependency_m": (int, float),
    "seconds": (int, float),
    "extras": (dict,),
    "task_meta": (dict,),
}
"""The types a row's fields must have (`EpisodeResult`): a hand edit such as `"success": "false"` would
otherwise pass and be counted as a success."""


def typed_wrong(result: EpisodeResult) -> None:
    """Raise `TypeError` naming the first field of `result` whose value has the wrong type."""
    if result.status not in ("done", "error"):
        raise TypeError(f"status is {result.status!r}, not 'done' or 'error'")
    if result.error is not None and not isinstance(result.error, str):
        raise TypeError(f"error is {type(result.error).__name__}, not text")
    for name, types in FIELD_TYPES.items():
        value = getattr(result, name)
        wrong = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
        if wrong:
            raise TypeError(f"{name} is {value!r} ({type(value).__name__}), not {types[0].__name__}")


class ResultsFile:
    def __init__(self, path: Path, redactor: Redactor = NO_SECRETS, *, warn: Callable[[str], None] = warn):
        self.path = path
        self.redactor = redactor
        self.warn = warn
        path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()

    def _drop_torn_tail(self) -> None:
        """A run killed mid-write can leave a partial last line: move it to `results.jsonl.torn` (that episode
        is played again) so resume sees whole records."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            torn = self.path.with_name(self.path.name + ".torn")
            torn.write_bytes(data[cut:])
            self.path.write_bytes(data[:cut])
            self.warn(
                f"{self.path}: its last line was cut off (a killed run); moved to {torn}, that episode "
                "will be played again"
            )

    def read(self) -> list[EpisodeResult]:
        if not self.path.exists():
            return []
        results: list[EpisodeResult] = []
        lines: dict[tuple[str, int], int] = {}
        with self.path.open("rb") as f:
            for number, raw in enumerate(f, start=1):
                if not raw.strip():
                    continue
                try:
                    result = result_from_json(json.loads(raw))
                    typed_wrong(result)
                except (ValueError, TypeError, AttributeError, RecursionError) as error:
                    raise ResultsError(
                        f"{self.path} line {number} is not an episode result ({type(error).__name__}: "
                        f"{str(error)[:200]}). Delete that line (its episode is played again) or move the file "
                        "aside to start the run over; nothing was run."
                    ) from error
                key = (result.task_id, result.trial)
                if key in lines:
                    raise ResultsError(
                        f"{self.path} lists task {result.task_id!r} trial {result.trial} twice (lines "
                        f"{lines[key]} and {number}), so its summary would count it twice. Keep one of the two "
                        "lines, or move the file aside to start the run over; nothing was run."
                    )
                lines[key] = number
                results.append(result)
        return results

    def drop_errors(self) -> int:
        """Remove the rows of errored episodes (they are played again); returns how many."""
        results = self.read()
        kept = [r for r in results if r.status != "error"]
        if len(kept) != len(results):
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text("".join(self._line(r) for r in kept), encoding="utf-8")
            tmp.replace(self.path)
        return len(results) - len(kept)

    def _line(self, result: EpisodeResult) -> str:
        return dumps(result_row(result), self.redactor) + "\n"

    def append(self, result: EpisodeResult) -> None:
        line = self._line(result)
        try:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
        except OSError as error:
            if error.errno in NO_SPACE:
                raise DiskFull.from_error(error, self.path) from error
            raise


NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
"""Write failures that mean the disk (or the user's quota) is full."""


class DiskFull(RuntimeError):
    """A write failed for lack of space: the run stops (exit code 3); what finished is kept for the resume."""

    @classmethod
    def from_error(cls, error: OSError, fallback: Path) -> DiskFull:
        path = Path(error.filename) if error.filename else fallback
        folder = next((p for p in (path, *path.parents) if p.exists()), Path("."))
        try:
            free = f"{shutil.disk_usage(folder).free / 1e6:.1f} MB free there now"
        except OSError:
            free = "free space unknown"
        return cls(
            f"no space left writing {path} ({os.strerror(error.errno)}; {free}). The run stopped; finished "
            "episodes are kept. Free some space, then run the same command again to resume."
        )


class RunLocked(RuntimeError):
    """Another process is writing the same run folder."""


@contextmanager
def writer_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run folder's lock: a second process on the same folder is refused, never a second writer."""
    owner = run_dir / ".writer"
    lock = FileLock(run_dir / ".lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        holder = owner.read_text().strip() if owner.is_file() else "unknown"
        raise RunLocked(
            f"another pos_bench process ({holder}) is writing {run_dir}; nothing was run. Wait for it to finish "
            "(then rerun this command to resume) or stop it."
        ) from None
    try:
        owner.write_text(f"pid {os.getpid()}")
        yield
    finally:
        lock.release()


def trials_of(tasks: Iterable[Task], trials: int) -> list[Task]:
    """Every episode of a run of `trials` trials per task: each task's trials 0 … trials-1, task by task."""
    return [replace(t, trial=k) for t in tasks for k in range(trials)]


def pending_tasks(
    tasks: Iterable[Task], results: ResultsFile, *, retry_errors: bool, trials: int = 1
) -> list[Task]:
    """The (task, trial) episodes of the run that have no row yet; rows of trials past `trials` stay, unplayed."""
    if retry_errors:
        results.drop_errors()
    finished = {(r.task_id, r.trial) for r in results.read()}
    return [t for t in trials_of(tasks, trials) if (t.id, t.trial) not in finished]


def record(results: ResultsFile, result: EpisodeResult) -> None:
    """Append `result`; a result that cannot be written becomes an `error` row, so the run goes on."""
    try:
        results.append(result)
    except (TypeError, ValueError, UnicodeError) as error:
        results.append(error_result(Task(result.task_id, meta=result.task_meta, trial=result.trial), error))
