"""Per-episode files (`events.jsonl`, `result.json`) and the `Recorded` model wrapper that logs every call."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import unicodedata
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pos_bench import events
from pos_bench.models.retry import Failure, failure_kind
from pos_bench.prompting import capped
from pos_bench.protocols import Model
from pos_bench.redact import NO_SECRETS, Redactor
from pos_bench.types import Ledger, Prompt, Reply, Usage, json_value, to_jsonable


def dumps(data: Any, redactor: Redactor, **options: Any) -> str:
    """One JSON document of `data`, secrets redacted; a value JSON cannot hold is written as its `str`, and
    a lone surrogate is escaped, so writing a record never fails."""
    return redactor.json_text(to_jsonable(data), default=str, **options)


ID_FILE = "task_id.txt"
"""In every episode folder: the exact task id the folder holds."""
SLUG_CHARS = 48
"""Readable part of an episode folder's name, at most this many characters (the hash follows it)."""


def folder_name(task_id: str) -> str:
    """The episode folder's name for `task_id`: a readable ASCII slug, then 12 hex digits of the SHA-256 of
    the exact id. Never `.` or `..`, no separator, at most 61 characters, and two ids differing in anything
    (case, Unicode normal form, `_` for a space) get different names, on case-insensitive file systems too
    (the hash is lower-case hex and unique per exact id)."""
    ascii_id = unicodedata.normalize("NFKD", task_id).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", ascii_id).strip("_")[:SLUG_CHARS] or "task"
    digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slug}-{digest}"


def legacy_folder_name(task_id: str) -> str:
    """The name runs written before the safe names used (dots kept, other runs of characters as `__`)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "__", task_id)


def episode_dir(run_dir: Path, task_id: str, trial: int = 0) -> Path:
    """The folder a new episode of `task_id` writes its files in, inside a run folder: trial 0 in the task's
    folder (as before trials existed), trial t > 0 beside it in `<task folder>@t<t>` ('@' never appears in a
    `folder_name`, so no task id can collide with a trial folder)."""
    name = folder_name(task_id)
    return run_dir / "episodes" / (f"{name}@t{trial}" if trial else name)


def find_episode(run_dir: Path, task_id: str, trial: int = 0) -> Path:
    """The folder holding `task_id`'s files, for readers (report, rescoring, analysis, export): the safe name,
    else the legacy name of a run written before it when that folder exists, is a folder of its own inside
    `episodes/` (never `.`/`..`) and its `result.json`, if any, is of this id. Later trials exist only under
    safe names."""
    safe = episode_dir(run_dir, task_id, trial)
    if safe.exists() or trial:
        return safe
    name = legacy_folder_name(task_id)
    legacy = run_dir / "episodes" / name
    if name in ("", ".", "..") or not legacy.is_dir() or not (legacy / "result.json").exists():
        return safe
    try:
        recorded = json.loads((legacy / "result.json").read_text(encoding="utf-8")).get("task_id")
    except (OSError, ValueError, AttributeError):
        return safe
    return legacy if recorded == task_id else safe


def remove_inside(path: Path, root: Path) -> None:
    """Delete the folder `path`, which must lie strictly inside `root`: a name that resolves to `root` itself
    or anywhere outside it is a programming error, never a deletion."""
    target, base = path.resolve(), root.resolve()
    if target == base or base not in target.parents:
        raise AssertionError(f"refusing to delete {path}: not inside {root}")
    shutil.rmtree(target, ignore_errors=True)


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
        if self._keep:
            line = events.row(event)
            self.events.append(line)
            text = self.redactor.json_text(line, default=str)  # the row is plain already
        elif self._file is not None:
            text = self.line_text(event)
        else:
            return
        if self._file is not None:
            self._file.write(text + "\n")
            self._file.flush()

    def line_text(self, event: events.Event) -> str:
        """The line of `event`, its values walked by the JSON encoder (`events.shallow_row`); the row's own text
        where the encoder cannot write a key as `to_jsonable` does (one that is not a string, a number, a
        boolean or null)."""
        try:
            return self.redactor.json_text(events.shallow_row(event), default=json_value)
        except (TypeError, ValueError):
            return self.redactor.json_text(events.row(event), default=str)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == kind]

    def close(self) -> None:
        """Close the file once its rows are on disk (fsync), so a results row never outlives its transcript."""
        if self._file is not None:
            try:
                self._file.flush()
                os.fsync(self._file.fileno())
            finally:
                self._file.close()
                self._file = None


POLICY_ROLE = "agent"
"""The role every method's policy calls carry (SPEC-BASE §2.5: the `agent` bucket)."""


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
        self.failures: Counter[Failure] = Counter()
        """Failed policy calls by kind (refused, overflow, timeout), for the episode's failure ledger."""

    def describe(self) -> Mapping[str, Any]:
        return self.inner.describe()

    @property
    def answered(self) -> int:
        """Policy calls the model answered (whatever the answer was worth)."""
        return sum(role == POLICY_ROLE for role, _ in self.calls)

    def failure_ledger(self) -> Ledger:
        """The policy calls that failed in the serving stack, by kind."""
        return Ledger(**{kind: self.failures[kind] for kind in ("refused", "overflow", "timeout")})

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        started, cpu = time.perf_counter(), time.process_time()
        try:
            reply = without_surrogates(self.inner.generate(prompt, role=role))
        except Exception as error:
            self.transcript.write(
                events.CallError(role=role, prompt=prompt, error=f"{type(error).__name__}: {error}")
            )
            kind = failure_kind(error)
            if role == POLICY_ROLE and kind is not None:
                self.failures[kind] += 1
            raise
        self.usage[role] = self.usage.get(role, Usage()) + reply.usage
        self.calls.append((role, reply.usage))
        if reply.served:
            self.served[reply.served] = None
        self.transcript.write(
            events.Call(
                role=role,
                prompt=prompt,
                reply=capped(reply.text),
                usage=reply.usage,
                cached=reply.cached,
                seconds=round(time.perf_counter() - started, 4),
                served=reply.served or None,
                cpu_seconds=round(time.process_time() - cpu, 4),
            )
        )
        return reply


def without_surrogates(reply: Reply) -> Reply:
    """`reply` with lone surrogate code points (which no UTF-8 file or request body can carry) replaced by
    `?`, so one odd reply costs a parse failure at most, never the episode."""
    clean = reply.text.encode("utf-8", "replace").decode("utf-8")
    return reply if clean == reply.text else Reply(clean, reply.usage, reply.cached, reply.served)


def write_result(path: Path, data: Any, redactor: Redactor = NO_SECRETS) -> None:
    """Write a JSON file atomically and durably, so a killed run or a full disk never leaves a half-written one."""
    tmp = path.with_suffix(".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as file:
            file.write(dumps(data, redactor, indent=1))
            file.flush()
            os.fsync(file.fileno())  # complete on disk before a results row can point at it
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
