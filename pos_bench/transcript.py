"""Per-episode files (`events.jsonl`, `result.json`) and the `Recorded` model wrapper that logs every call."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pos_bench import events
from pos_bench.protocols import Model
from pos_bench.redact import NO_SECRETS, Redactor
from pos_bench.types import Prompt, Reply, Usage, to_jsonable


def dumps(data: Any, redactor: Redactor, **options: Any) -> str:
    """One JSON document of `data`, secrets redacted; a value JSON cannot hold is written as its `str`, and
    a lone surrogate is escaped, so writing a record never fails."""
    return redactor.json_text(to_jsonable(data), default=str, **options)


def episode_dir(run_dir: Path, task_id: str, trial: int = 0) -> Path:
    """The folder of one episode's files inside a run folder: trial 0 in the task's folder (as before trials
    existed), trial t > 0 beside it in `<task folder>@t<t>` ('@' never survives the task-id encoding, so no task
    id can collide with a trial folder)."""
    folder = re.sub(r"[^A-Za-z0-9._-]+", "__", task_id)
    return run_dir / "episodes" / (f"{folder}@t{trial}" if trial else folder)


class Transcript:
    """An append-only event log for one episode (`events.jsonl`). `events` holds the rows written, as plain JSON
    objects; `path=None` keeps them in memory only (tests, benches)."""

    def __init__(self, path: Path | None = None, *, keep: bool = True, redactor: Redactor = NO_SECRETS):
        self.path = path
        self.redactor = redactor
        self.events: list[dict[str, Any]] = []
        self._keep = keep
        self._file = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("w", encoding="utf-8")

    def write(self, event: events.Event) -> None:
        line = events.row(event)
        if self._keep:
            self.events.append(line)
        if self._file is not None:
            self._file.write(self.redactor.json_text(line, default=str) + "\n")  # the row is plain already
            self._file.flush()

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == kind]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class Recorded:
    """Wraps a model: every call becomes a `call` event, and usage is summed per role."""

    def __init__(self, model: Model, transcript: Transcript):
        self.inner = model
        self.name = model.name
        self.transcript = transcript
        self.usage: dict[str, Usage] = {}
        self.calls: list[tuple[str, Usage]] = []
        """(role, usage) of every call in order, for per-call measures such as Peak (SPEC-BASE §2.5)."""
        self.served: dict[str, None] = {}
        """The model revisions the servers reported, in first-seen order."""

    def describe(self) -> Mapping[str, Any]:
        return self.inner.describe()

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        started = time.perf_counter()
        try:
            reply = without_surrogates(self.inner.generate(prompt, role=role))
        except Exception as error:
            self.transcript.write(
                events.CallError(role=role, prompt=prompt, error=f"{type(error).__name__}: {error}")
            )
            raise
        self.usage[role] = self.usage.get(role, Usage()) + reply.usage
        self.calls.append((role, reply.usage))
        if reply.served:
            self.served[reply.served] = None
        self.transcript.write(
            events.Call(
                role=role,
                prompt=prompt,
                reply=reply.text,
                usage=reply.usage,
                cached=reply.cached,
                seconds=round(time.perf_counter() - started, 4),
                served=reply.served or None,
            )
        )
        return reply


def without_surrogates(reply: Reply) -> Reply:
    """`reply` with lone surrogate code points (which no UTF-8 file or request body can carry) replaced by
    `?`, so one odd reply costs a parse failure at most, never the episode."""
    clean = reply.text.encode("utf-8", "replace").decode("utf-8")
    return reply if clean == reply.text else Reply(clean, reply.usage, reply.cached, reply.served)


def write_result(path: Path, data: Any, redactor: Redactor = NO_SECRETS) -> None:
    """Write a JSON file atomically, so a killed run never leaves a half-written one."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(dumps(data, redactor, indent=1), encoding="utf-8")
    tmp.replace(path)
