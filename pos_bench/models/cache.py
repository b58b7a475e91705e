"""Response cache with record/replay: a killed run resumes mid-episode for free, and a recorded run replays
offline, bit for bit.

The key is the sha256 of the canonical request: the model's identity (its `describe()` without the
operational fields in `NOT_IDENTITY`, so never a key, a host, a timeout or a concurrency cap; a local
model's runtime identity is part of it) plus the messages, the schema, the token budget and, from trial 1 on,
the episode's trial. Unknown `describe()` fields count as identity: a new setting can only cause a miss,
never a wrong hit.

Modes: `off`; `read_write` (answer hits, store misses); `record` (always call, overwrite); `replay` (hits only;
a miss raises `CacheMiss` and nothing reaches the provider). Storage is one SQLite file in WAL mode, so the
threads and processes of one host can share it; WAL does not work across hosts (NFS), so a Ray run gives
the file one owner on the driver's node and its workers go through it (`Store`). A model whose `describe()` says
`cacheable: false` (the scripted test double, whose replies depend on call order) is never cached.

A request the provider refuses as such (`RequestRefused`: a context overflow, an HTTP 400) is recorded like a
reply and refused again on a repeat, so the replay of an episode that ended on it ends the same way.

`model=replay` (`models/replay.py`) uses the same keys: it answers from the replies a run kept in its own
folder (`models/kept.py`), and a miss there falls through to this cache.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from tenacity import retry, retry_if_exception, stop_after_delay, wait_random

from pos_bench.models.retry import RequestRefused
from pos_bench.protocols import Model
from pos_bench.types import Prompt, Reply, Usage, to_jsonable

CacheMode = Literal["off", "read_write", "record", "replay"]

NOT_IDENTITY = frozenset(
    {
        "base_url",
        "api_key_env",
        "timeout",
        "min_tokens_per_s",
        "stream",  # how the reply is read, not what it says
        "max_concurrency",
        "retry",
        "cache",
        "roles",
        "replayed_from",
        "price",
        "cacheable",
        "tokens_per_minute",
        "workers",  # the embedded model's share of the cores: sets n_threads, which is recorded itself
    }
)
"""`describe()` fields that do not change what the model answers, left out of the cache key."""


@dataclass(frozen=True)
class CacheConfig:
    mode: CacheMode = "off"
    path: str = "results/cache/responses.sqlite"
    """One file can serve every run; keys never collide across models or prompts."""

    def __post_init__(self) -> None:
        if self.mode not in ("off", "read_write", "record", "replay"):
            raise ValueError(f"cache.mode must be off, read_write, record or replay, got {self.mode!r}")


class CacheMiss(RuntimeError):
    """Replay asked for a request that was never recorded."""


class CacheError(RuntimeError):
    """The cache file cannot be used (corrupt, locked, unwritable); the message names the file and the fix."""


def cache_error(path: Path, error: sqlite3.Error) -> CacheError:
    if _locked(error):
        return CacheError(
            f"the response cache {path} is locked by another process ({error}). Wait for it to finish, point "
            "cache.path at another file, or run with cache.mode=off."
        )
    return CacheError(
        f"the response cache {path} cannot be used ({type(error).__name__}: {error}). Move it aside "
        f"(mv {path} {path}.bad) to start a fresh cache, or run with cache.mode=off."
    )


def identity(description: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in description.items() if k not in NOT_IDENTITY}


def canonical_json(value: Any) -> str:
    """`value` as the canonical request writes it: keys sorted, no spaces, UTF-8 text unescaped."""
    return json.dumps(to_jsonable(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_request(
    model_identity: Mapping[str, Any], prompt: Prompt, *, identity_json: str | None = None
) -> str:
    """The request as its cache key is taken from: `canonical_json` of model identity, messages, schema, token
    budget and trial. `identity_json`, the identity's `canonical_json` when the caller keeps it, saves writing
    the same identity for every call of a model; the text is the same either way."""
    messages = canonical_json([[m.role, m.content] for m in prompt.messages])
    text = (
        f'{{"max_tokens":{canonical_json(prompt.max_tokens)},"messages":{messages},'
        f'"model":{identity_json or canonical_json(model_identity)},"schema":{canonical_json(prompt.schema)}'
    )
    if prompt.trial:  # trial 0 keeps the key it had before trials existed: old caches and replays still hit
        text += f',"trial":{canonical_json(prompt.trial)}'
    return text + "}"


def request_key(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def describe_request(key: str, model_identity: Mapping[str, Any], prompt: Prompt, role: str) -> str:
    last = prompt.messages[-1].content if prompt.messages else ""
    excerpt = last[-160:].replace("\n", " ")
    return (
        f"request {key[:16]} (role {role}, {model_identity.get('provider')} model {model_identity.get('model')!r}, "
        f"{len(prompt.messages)} messages, last ends '…{excerpt}')"
    )


NEAREST_SCAN = 5000
"""Recorded requests (the newest) compared with a missed one to name the field that differs."""


def key_differences(recorded: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """The fields of two canonical requests that differ, most telling first: model identity fields by name,
    then the schema and token budget, then the first message that differs."""
    found = []
    had, has = recorded.get("model") or {}, wanted.get("model") or {}
    for name in sorted(had.keys() | has.keys()):
        if had.get(name, "<unset>") != has.get(name, "<unset>"):
            found.append(
                f"model.{name} (recorded {_short(had.get(name, '<unset>'))}, now {_short(has.get(name, '<unset>'))})"
            )
    for name in ("schema", "max_tokens"):
        if recorded.get(name) != wanted.get(name):
            found.append(f"{name} (recorded {_short(recorded.get(name))}, now {_short(wanted.get(name))})")
    old, new = recorded.get("messages") or [], wanted.get("messages") or []
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            found.append(f"messages[{index}] ({_first_change(a, b)})")
            break
    else:
        if len(old) != len(new):
            found.append(f"messages (recorded {len(old)}, now {len(new)})")
    return found


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_change(a: list, b: list) -> str:
    if a[0] != b[0]:
        return f"role {a[0]!r} recorded, {b[0]!r} now"
    at = next(
        (i for i, (x, y) in enumerate(zip(a[1], b[1], strict=False)) if x != y), min(len(a[1]), len(b[1]))
    )
    return f"content differs at character {at}: recorded {_short(a[1][at : at + 40])}, now {_short(b[1][at : at + 40])}"


def nearest_recorded(path: Path, request: str) -> str:
    """A sentence naming what differs between `request` and the closest recorded one in the cache file at
    `path` (the newest `NEAREST_SCAN` rows): few differing fields first, then the longest shared history."""
    wanted = json.loads(request)
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0) as db:
            rows = db.execute(
                "SELECT request FROM responses ORDER BY created DESC LIMIT ?", (NEAREST_SCAN,)
            ).fetchall()
    except sqlite3.Error as error:
        return f"(the cache file {path} could not be searched for the nearest recorded request: {error})"
    best: tuple[tuple[int, int], list[str]] | None = None
    for (text,) in rows:
        try:
            recorded = json.loads(text)
        except json.JSONDecodeError:
            continue
        differences = key_differences(recorded, wanted)
        shared = _shared_messages(recorded.get("messages") or [], wanted.get("messages") or [])
        rank = (len(differences), -shared)
        if best is None or rank < best[0]:
            best = (rank, differences)
    if best is None:
        return f"The cache file {path} holds no recorded request."
    return f"The nearest recorded request differs in: {'; '.join(best[1]) or 'nothing visible (a redacted secret?)'}."


def _shared_messages(a: list, b: list) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _locked(error: BaseException) -> bool:
    return isinstance(error, sqlite3.OperationalError) and "locked" in str(error)


@retry(
    retry=retry_if_exception(_locked), wait=wait_random(0.01, 0.1), stop=stop_after_delay(60), reraise=True
)
def _use_wal(db: sqlite3.Connection) -> None:
    """Switch the file to WAL. On a new file several first connections race for this switch, and SQLite answers
    the losers "database is locked" at once (its busy timeout does not cover it), so they try again."""
    db.execute("PRAGMA journal_mode=WAL")


LATER_COLUMNS = {
    "served": "TEXT",  # the served revision (empty for rows written before it was kept)
    "refused": "TEXT",  # a refused request's error (empty: every older row is a reply)
    "cached_input_tokens": "INTEGER",  # the server's prefix-cache counts, so a replay gives the recorded usage
    "cache_write_tokens": "INTEGER",
}
"""Columns added after the first cache files were written, with their SQL types; older files get them empty."""


@retry(
    retry=retry_if_exception(_locked), wait=wait_random(0.01, 0.1), stop=stop_after_delay(60), reraise=True
)
def _add_later_columns(db: sqlite3.Connection) -> None:
    columns = {row[1] for row in db.execute("PRAGMA table_info(responses)")}
    for name, kind in LATER_COLUMNS.items():
        if name in columns:
            continue
        try:
            db.execute(f"ALTER TABLE responses ADD COLUMN {name} {kind}")
        except sqlite3.OperationalError as error:  # another connection added it first
            if "duplicate column" not in str(error):
                raise


def refusal(reply: Reply) -> RequestRefused:
    """The error a cache row of a refused request stands for: same class name, same message (so the row of a
    replayed episode reads as the recording's), still a `RequestRefused`."""
    kind = type(reply.refused or "RequestRefused", (RequestRefused,), {"__module__": __name__})
    return kind(reply.text)


def _storable(text: str) -> str:
    """`text` without lone surrogates, which SQLite's UTF-8 text cannot hold."""
    return text.encode("utf-8", "replace").decode("utf-8")


class ResponseStore:
    """The SQLite file behind the cache: one connection per thread, commits without fsync (WAL with
    `synchronous=NORMAL` stays consistent if a run is killed; only a power cut may lose the newest replies)."""

    def __init__(self, path: str | Path, *, timeout: float = 60.0, redact: Callable[[str], str] = str):
        self.path = Path(path)
        self.timeout = timeout
        self.redact = redact
        """Applied to every stored request and reply, so a secret a server echoes never reaches the file."""
        self._local = threading.local()
        self._file_ready = False
        """Whether the file is in WAL mode with the current table: settled by the first connection."""
        self._setup = threading.Lock()

    def check(self) -> None:
        """Open the file and take (then release) its write lock: a corrupt or locked cache fails here, once,
        with a `CacheError`, instead of failing every episode."""
        try:
            db = self._connect()
            db.execute("SELECT COUNT(*) FROM responses").fetchone()
            db.execute("BEGIN IMMEDIATE")
            db.execute("ROLLBACK")
        except sqlite3.Error as error:
            raise cache_error(self.path, error) from error

    def _connect(self) -> sqlite3.Connection:
        try:
            return self._open()
        except sqlite3.Error as error:
            raise cache_error(self.path, error) from error

    def _open(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=self.timeout)
            db.execute("PRAGMA synchronous=NORMAL")  # a setting of each connection
            with self._setup:  # the rest is kept in the file: once per store, not once per thread
                if not self._file_ready:
                    self._prepare_file(db)
                    self._file_ready = True
            self._local.db = db
        return db

    @staticmethod
    def _prepare_file(db: sqlite3.Connection) -> None:
        _use_wal(db)
        db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, request TEXT NOT NULL, "
            "text TEXT NOT NULL, input_tokens INTEGER, output_tokens INTEGER, calls INTEGER, created REAL, "
            "served TEXT, refused TEXT)"
        )
        _add_later_columns(db)
        db.commit()

    def get(self, key: str) -> Reply | None:
        try:
            row = (
                self._connect()
                .execute(
                    "SELECT text, input_tokens, output_tokens, calls, served, refused, cached_input_tokens, "
                    "cache_write_tokens FROM responses WHERE key = ?",
                    (key,),
                )
                .fetchone()
            )
        except sqlite3.Error as error:
            raise cache_error(self.path, error) from error
        if row is None:
            return None
        usage = Usage(row[1], row[2], row[3], row[6] or 0, row[7] or 0)
        return Reply(row[0], usage, cached=True, served=row[4], refused=row[5])

    def put(self, key: str, request: str, reply: Reply, *, overwrite: bool) -> Reply:
        """Store `reply` (unless another worker stored this request first and `overwrite` is off); return
        what the file now holds for `key`, so every worker answers with the same reply."""
        verb = "INSERT OR REPLACE" if overwrite else "INSERT OR IGNORE"
        row = (
            key,
            _storable(self.redact(request)),
            _storable(self.redact(reply.text)),
            reply.usage.input_tokens,
            reply.usage.output_tokens,
            reply.usage.calls,
            time.time(),
            None if reply.served is None else self.redact(reply.served),  # a server may echo anything here
            None if reply.refused is None else self.redact(reply.refused),
            reply.usage.cached_input_tokens,
            reply.usage.cache_write_tokens,
        )
        try:
            with self._connect() as db:
                db.execute(
                    f"{verb} INTO responses (key, request, text, input_tokens, output_tokens, calls, created, "
                    "served, refused, cached_input_tokens, cache_write_tokens) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
        except sqlite3.Error as error:
            raise cache_error(self.path, error) from error
        stored = self.get(key)
        if stored is None:
            return reply
        return Reply(stored.text, stored.usage, cached=False, served=stored.served, refused=stored.refused)

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0]


class Store(Protocol):
    """Where replies are kept: `ResponseStore` (the SQLite file itself, for the processes of one host) or a
    proxy to its one owner (`pos_bench.runner.pool.ray`, when workers run on several hosts)."""

    def get(self, key: str) -> Reply | None: ...

    def put(self, key: str, request: str, reply: Reply, *, overwrite: bool) -> Reply: ...


class Cached:
    """Wraps a model with the response cache in `mode`, kept in `store` (default: the file at `path`)."""

    def __init__(
        self,
        model: Model,
        config: CacheConfig,
        store: Store | None = None,
        *,
        redact: Callable[[str], str] = str,
    ):
        self.inner = model
        self.name = model.name
        self.config = config
        self.store = store if store is not None else ResponseStore(config.path, redact=redact)
        self._description: Mapping[str, Any] | None = None

    def describe(self) -> Mapping[str, Any]:
        return {**self.inner.describe(), "cache": self.config.mode}

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        if self._description is None:  # a model's description is fixed once it is built
            self._description = self.inner.describe()
        description = self._description
        if self.config.mode == "off" or description.get("cacheable") is False:
            return self.inner.generate(prompt, role=role)
        model_identity = identity(description)
        request = canonical_request(model_identity, prompt)
        key = request_key(request)
        if self.config.mode != "record":
            hit = self.store.get(key)
            if hit is not None and hit.refused:
                raise refusal(hit)
            if hit is not None:
                return hit
            if self.config.mode == "replay":
                raise CacheMiss(
                    f"replay cache miss: no recorded reply for {describe_request(key, model_identity, prompt, role)} "
                    f"in {self.config.path}. Replay reproduces only a recorded run with the same bench, method and "
                    "model settings; record it first with cache.mode=read_write or record. "
                    + nearest_recorded(Path(self.config.path), request)
                )
        try:
            reply = self.inner.generate(prompt, role=role)
        except CacheMiss as miss:  # model=replay behind a read_write cache
            raise CacheMiss(f"{miss} {nearest_recorded(Path(self.config.path), request)}") from None
        except RequestRefused as refused:  # recorded: this request fails the same way on every repeat
            row = Reply(str(refused), Usage(0, 0, 0), refused=type(refused).__name__)
            stored = self.store.put(key, request, row, overwrite=self.config.mode == "record")
            if not stored.refused:  # another worker recorded a reply first
                return stored
            if (stored.refused, stored.text) == (row.refused, row.text):
                raise
            raise refusal(stored) from refused
        # Another worker may have stored this request first; answer with what the cache holds, so a replay
        # sees exactly what this run saw. A reply that reached no model (a replayed one) stays marked cached.
        stored = self.store.put(key, request, reply, overwrite=self.config.mode == "record")
        if stored.refused:
            raise refusal(stored)
        return Reply(
            stored.text, stored.usage, cached=reply.cached, served=stored.served, refused=stored.refused
        )
