"""`model=replay model.run=<run folder>`: the model of a recorded run, answering only from what that run kept
(no provider, no network).

The identity comes from the run's `run.json`, so every request has the key it had when recorded; the replies
come from the run's own `episodes/*/responses.jsonl` (`models/kept.py`), so the folder replays wherever it is
copied, from any results root and working directory. A request the run never made raises `CacheMiss`. A run
recorded before runs kept their replies has no such files: its misses then fall through to the response cache
in front of this model, whose `cache.path` must be the recording's file.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pos_bench.models.cache import (
    CacheMiss,
    canonical_request,
    describe_request,
    identity,
    refusal,
    request_key,
)
from pos_bench.models.kept import KeptReply, read_kept
from pos_bench.types import Prompt, Reply


def single_run(folder: Path) -> Path:
    """`folder` itself when it is a run; the one run registered in its `index.json` when it holds runs."""
    index = folder / "index.json"
    if (folder / "run.json").is_file() or not index.is_file():
        return folder
    entries = json.loads(index.read_text(encoding="utf-8"))
    runs = [entry.get("folder") if isinstance(entry, dict) else None for entry in entries]
    strays = [r for r in runs if not isinstance(r, str) or Path(r).name != r or r in ("", ".", "..")]
    if strays:  # a folder from anyone names its runs; it never points outside itself
        raise ValueError(f"{index}: {strays[0]!r} is not the name of a run folder inside {folder}")
    if len(runs) != 1:
        raise ValueError(
            f"{folder} holds {len(runs)} runs ({', '.join(runs)}); set model.run to one of them, e.g. "
            f"model.run={folder / runs[0]}"
        )
    return folder / runs[0]


class Replayed:
    """`model=replay`: the model of a recorded run, answering only from the replies that run kept.

    Args:
        run: the recorded run's folder (it holds `run.json`), or the folder above it when it holds one run.
        role: replay that run's model for this role (a `roles:` entry), instead of its default model.
    """

    def __init__(self, run: str, role: str | None = None):
        folder = single_run(Path(run).expanduser())
        path = folder / "run.json"
        if not path.is_file():
            raise FileNotFoundError(
                f"model=replay needs a recorded run: {path} does not exist (set model.run)"
            )
        recorded = json.loads(path.read_text(encoding="utf-8"))["model"]
        if role is not None:
            if role not in recorded.get("roles", {}):
                raise ValueError(
                    f"the run at {folder} has no model for role {role!r}; its roles: "
                    f"{sorted(recorded.get('roles', {}))}"
                )
            recorded = recorded["roles"][role]
        self.recorded = {k: v for k, v in recorded.items() if k != "roles"}
        self.folder = folder
        self.name = str(self.recorded.get("model", "replay"))
        self._kept: dict[str, KeptReply] | None = None
        self._loading = threading.Lock()

    def describe(self) -> Mapping[str, Any]:
        return {**self.recorded, "replayed_from": str(self.folder)}

    def kept(self) -> dict[str, KeptReply]:
        """The run's kept replies by key, read on first use."""
        with self._loading:
            if self._kept is None:
                self._kept = read_kept(self.folder)
            return self._kept

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        model_identity = identity(self.recorded)
        key = request_key(canonical_request(model_identity, prompt))
        found = self.kept().get(key)
        if found is not None:
            reply = found.reply()
            if reply.refused:
                raise refusal(reply)
            return reply
        where = (
            "its episodes' responses.jsonl"
            if self.kept()
            else "it kept no replies (recorded before runs kept them): set cache.path to the recording's "
            "response cache"
        )
        raise CacheMiss(
            f"replay cache miss: the run at {self.folder} never made "
            f"{describe_request(key, model_identity, prompt, role)} ({where}). Replay reproduces only a "
            "recorded run with the same bench, method and settings."
        )
