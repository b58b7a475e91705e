"""The run's own record of the replies its episodes used: `episodes/<id>/responses.jsonl`, one line per answered
request, keyed exactly as the response cache keys it (`cache.request_key`).

The shared response cache (`results/cache/responses.sqlite`) serves every run of a results root, so it cannot
travel with one run. This record does: it lives inside the episode's folder, is written whatever the cache mode
(a hit of the shared cache is recorded too, since the episode used it), holds only what the episode used, and
goes when the episode is played again (the runner empties the folder first). `model=replay model.run=<folder>`
(`models/replay.py`) answers from it, so a copied run folder replays anywhere with no `cache.path`.

Only the reply side is kept (text, usage, served revision, refusal): the prompts are already in `events.jsonl`.
Every text goes through the run's redactor before it is written, as the shared cache does.
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_bench.models.cache import canonical_json, canonical_request, identity, request_key
from pos_bench.models.retry import RequestRefused
from pos_bench.protocols import Model
from pos_bench.types import Prompt, Reply, Usage, field_names, usage_from_json

RESPONSES = "responses.jsonl"
"""The file name of an episode's kept replies, inside its episode folder."""


@dataclass(frozen=True)
class KeptReply:
    """One answered request of an episode: what the model (or the cache) said, under the request's cache key."""

    key: str
    role: str
    text: str
    usage: Usage
    served: str | None = None
    refused: str | None = None
    """The class name of the `RequestRefused` the request met (then `text` is its message), else None."""

    def reply(self) -> Reply:
        """The reply a replay gives for this request: marked `cached`, since no model is asked."""
        return Reply(self.text, self.usage, cached=True, served=self.served, refused=self.refused)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KeptReply:
        return cls(
            key=str(data["key"]),
            role=str(data.get("role", "agent")),
            text=str(data["text"]),
            usage=usage_from_json(data.get("usage") or {}),
            served=data.get("served"),
            refused=data.get("refused"),
        )


class ResponseLog:
    """Appends `KeptReply` lines to one episode's `responses.jsonl`; shared by the models of every role, so one
    lock orders their lines."""

    def __init__(self, path: Path, *, redact: Callable[[str], str] = str):
        self.path = path
        self.redact = redact
        self._lock = threading.Lock()
        self._file: int | None = None
        """The file, opened at the first line and kept open until the log is dropped (the episode's end)."""

    def keep(self, kept: KeptReply) -> None:
        row = {
            "key": kept.key,
            "role": kept.role,
            "text": self.redact(kept.text),
            "usage": {name: getattr(kept.usage, name) for name in field_names(Usage)},
            "served": None if kept.served is None else self.redact(kept.served),
            "refused": kept.refused,
        }
        line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
        with self._lock:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
                # one descriptor per episode in flight, closed with the log; opening the file for each line
                # cost two more system calls per model call
                weakref.finalize(self, os.close, self._file)
            rest = memoryview(line)
            while rest:
                rest = rest[os.write(self._file, rest) :]


class Kept:
    """Wraps a model so that every reply it gives (and every refusal it meets) is kept in the episode's
    `ResponseLog`. Adds nothing to `describe()`: a run's fingerprint and cache keys are unchanged."""

    def __init__(self, model: Model, log: ResponseLog):
        self.inner = model
        self.name = model.name
        self.log = log
        self._identity: dict[str, Any] | None = None
        self._identity_json = ""

    def describe(self) -> Mapping[str, Any]:
        return self.inner.describe()

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        if self._identity is None:  # a model's description is fixed once it is built
            self._identity = identity(self.inner.describe())
            self._identity_json = canonical_json(self._identity)
        key = request_key(canonical_request(self._identity, prompt, identity_json=self._identity_json))
        try:
            reply = self.inner.generate(prompt, role=role)
        except RequestRefused as refused:  # a replay must meet the same refusal
            self.log.keep(KeptReply(key, role, str(refused), Usage(), refused=type(refused).__name__))
            raise
        self.log.keep(KeptReply(key, role, reply.text, reply.usage, reply.served, reply.refused))
        return reply


def kept_files(run_dir: Path) -> Iterator[Path]:
    """Every episode's `responses.jsonl` in a run folder."""
    episodes = run_dir / "episodes"
    if episodes.is_dir():
        yield from sorted(episodes.glob(f"*/{RESPONSES}"))


def read_kept(run_dir: Path) -> dict[str, KeptReply]:
    """The kept replies of every episode of `run_dir` by key. A torn last line (a killed episode) is skipped;
    the replies of one request are the same in every episode that made it (only a model whose replies depend
    on call order, the scripted test double, could differ), so the first one kept answers it."""
    found: dict[str, KeptReply] = {}
    for path in kept_files(run_dir):
        for line in path.read_text(encoding="utf-8", errors="surrogatepass").splitlines():
            try:
                kept = KeptReply.from_json(json.loads(line))
            except (ValueError, KeyError, TypeError):
                continue
            found.setdefault(kept.key, kept)
    return found
