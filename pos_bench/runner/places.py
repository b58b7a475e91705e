"""Where a run was played: the host and folder of each session that wrote it, kept in `run.json` `places`.

A run folder may be copied or moved to another results root, disk or machine and resumed there; its
fingerprint does not depend on where it lies, so the resume is allowed, and the move is recorded here instead
(one entry per change of host or folder, oldest first). Nothing reads a path back from this list: readers
resolve every file relative to the folder they were given.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Place:
    host: str
    folder: str
    """The run folder's absolute path on `host` at the time (a record only)."""
    since: str
    """UTC time the run was first written from here."""

    def same_as(self, other: Mapping[str, Any]) -> bool:
        return other.get("host") == self.host and other.get("folder") == self.folder


def here(run_dir: Path) -> Place:
    """The place this process writes `run_dir` from."""
    return Place(
        host=socket.gethostname(),
        folder=str(run_dir.resolve()),
        since=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )


def places(run_dir: Path, now: Place) -> list[dict[str, Any]]:
    """`run_dir`'s recorded `places` (none when `run.json` is absent or unreadable: that is reported by the
    reader that needs it) with `now` added when the run was last written from another host or folder."""
    try:
        recorded = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeError):
        recorded = {}
    found = recorded.get("places") if isinstance(recorded, dict) else None
    history = [dict(p) for p in found if isinstance(p, Mapping)] if isinstance(found, list) else []
    if history and now.same_as(history[-1]):
        return history
    return [*history, asdict(now)]


def moved(history: Sequence[Mapping[str, Any]]) -> str | None:
    """A one-line note when the last session wrote from elsewhere than the one before it, else None."""
    if len(history) < 2:
        return None
    before, now = history[-2], history[-1]
    what = "another machine" if before.get("host") != now.get("host") else "another folder"
    return (
        f"note: this run was last written from {what} ({before.get('host')}:{before.get('folder')}); resuming "
        "here, and the move is recorded in run.json `places`."
    )
