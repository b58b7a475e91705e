"""One budget per endpoint (base URL + model) for the whole run: requests in flight and, optionally, tokens
per minute, shared by every worker whatever the backend.

The budget is a run object handed to each worker (never module state): `LocalBudget` for threads of one
process, `FileBudget` for processes of one host (lock files: a worker killed mid-call frees its slot with
its file descriptors), and on Ray the same `LocalBudget` logic inside an actor (`pos_bench.runner.pool.ray`).

A 429 halves the endpoint's allowed concurrency and each answered call earns back 1/limit of a slot
(additive increase, multiplicative decrease), so a run that hits a provider's rate limit settles just
below it instead of every worker retrying at full width. Tokens are debited after each call from the
usage the provider reported; calls wait while the bucket is empty.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from pos_bench.models.retry import TransientError
from pos_bench.protocols import Model
from pos_bench.types import Prompt, Reply


@dataclass(frozen=True)
class Endpoint:
    key: str
    """Base URL and model: what one provider limit applies to."""
    max_in_flight: int
    tokens_per_minute: int | None = None
    lease_seconds: float = 600.0
    """A slot held longer than this is taken as a dead worker's and given back (LocalBudget only: lock
    files are freed by the kernel when their process dies)."""

    def __post_init__(self) -> None:
        if self.max_in_flight < 1:
            raise ValueError(f"model.max_concurrency must be ≥ 1, got {self.max_in_flight}")
        if self.tokens_per_minute is not None and self.tokens_per_minute < 1:
            raise ValueError(f"model.tokens_per_minute must be ≥ 1 or null, got {self.tokens_per_minute}")


def endpoint_of(description: Mapping[str, Any]) -> Endpoint | None:
    """The endpoint a model's `describe()` names, or None for a model that calls no endpoint (it reports
    no `max_concurrency`)."""
    if description.get("max_concurrency") is None:
        return None
    return Endpoint(
        key=f"{description.get('base_url') or description.get('provider')} {description.get('model')}",
        max_in_flight=int(description["max_concurrency"]),
        tokens_per_minute=description.get("tokens_per_minute"),
        lease_seconds=float(description.get("timeout") or 540.0) + 60.0,
    )


@dataclass(frozen=True)
class Allowance:
    """What an endpoint may take now: its adaptive concurrency and its token bucket."""

    limit: float
    tokens: float
    stamp: float


def fresh(endpoint: Endpoint, now: float) -> Allowance:
    return Allowance(float(endpoint.max_in_flight), float(endpoint.tokens_per_minute or 0), now)


def refill(allowance: Allowance, endpoint: Endpoint, now: float) -> Allowance:
    if endpoint.tokens_per_minute is None:
        return allowance  # no bucket: the stamp is never read, and an unchanged allowance is not written
    level = allowance.tokens + (now - allowance.stamp) * endpoint.tokens_per_minute / 60.0
    return replace(allowance, tokens=min(float(endpoint.tokens_per_minute), level), stamp=now)


def settle(allowance: Allowance, endpoint: Endpoint, *, tokens: int, rate_limited: bool) -> Allowance:
    """After one call: AIMD on the concurrency, the call's tokens taken from the bucket."""
    if rate_limited:
        limit = max(1.0, allowance.limit / 2)
    else:
        limit = min(float(endpoint.max_in_flight), allowance.limit + 1.0 / allowance.limit)
    spent = allowance.tokens - tokens if endpoint.tokens_per_minute is not None else allowance.tokens
    return replace(allowance, limit=limit, tokens=spent)


def wait_seconds(allowance: Allowance, endpoint: Endpoint) -> float:
    """How long a refused caller should wait before asking again."""
    if endpoint.tokens_per_minute is not None and allowance.tokens <= 0:
        return max(0.01, -allowance.tokens * 60.0 / endpoint.tokens_per_minute)
    return random.uniform(0.002, 0.02)


def admits(allowance: Allowance, endpoint: Endpoint, in_flight: int) -> bool:
    has_tokens = endpoint.tokens_per_minute is None or allowance.tokens > 0
    return in_flight < int(allowance.limit) and has_tokens


class Budget(Protocol):
    def acquire(self, endpoint: Endpoint) -> Any:
        """Block until `endpoint` admits one more call; return the lease to give back."""
        ...

    def release(self, lease: Any, *, tokens: int, rate_limited: bool) -> None: ...


class LocalBudget:
    """The budget of one process's threads (and, inside an actor, of a whole Ray cluster)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._allowances: dict[str, Allowance] = {}
        self._endpoints: dict[str, Endpoint] = {}
        self._leases: dict[int, tuple[str, float]] = {}
        self._next = 0

    def _in_flight(self, key: str, now: float) -> int:
        for lease, (_, expires) in list(self._leases.items()):
            if expires < now:
                del self._leases[lease]
        return sum(1 for k, _ in self._leases.values() if k == key)

    def acquire(self, endpoint: Endpoint) -> int:
        with self._changed:
            self._endpoints[endpoint.key] = endpoint
            while True:
                now = time.monotonic()
                allowance = self._allowances.get(endpoint.key) or fresh(endpoint, now)
                allowance = self._allowances[endpoint.key] = refill(allowance, endpoint, now)
                if admits(allowance, endpoint, self._in_flight(endpoint.key, now)):
                    self._next += 1
                    self._leases[self._next] = (endpoint.key, now + endpoint.lease_seconds)
                    return self._next
                self._changed.wait(timeout=wait_seconds(allowance, endpoint) * 5)

    def release(self, lease: int, *, tokens: int, rate_limited: bool) -> None:
        with self._changed:
            key, _ = self._leases.pop(lease, (None, 0.0))
            if key is not None:
                endpoint = self._endpoints[key]
                self._allowances[key] = settle(
                    self._allowances[key], endpoint, tokens=tokens, rate_limited=rate_limited
                )
            self._changed.notify_all()


STATE_BYTES = 256
"""The state file's fixed size: the allowance's JSON padded with spaces, so each write replaces all of it."""


@dataclass
class _Place:
    """One endpoint's files, as this process holds them open between calls (`FileBudget`)."""

    state: int
    """The descriptor of the state file, which is also its lock."""
    slots: dict[int, int] = field(default_factory=dict)
    """Slot number → descriptor of its lock file, opened at first use."""
    held: set[int] = field(default_factory=set)
    """The slots this process's threads hold now: a lock is the descriptor's, so two threads of one process
    holding the same descriptor would both pass it."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Orders this process's threads, which the file locks do not (they share the descriptors)."""
    read: bytes = b""
    """The state file's bytes as last read or written here, and the allowance they hold (`stored`)."""
    stored: Allowance | None = None


@dataclass(frozen=True)
class FileLease:
    place: _Place
    """The endpoint's files, as the process that took the slot holds them."""
    slot: int
    """The slot's number; its lock file is held through `place`'s descriptor of it."""
    endpoint: Endpoint


_OPEN: dict[tuple[int, str], _Place] = {}
"""This process's open places, by (process id, endpoint folder). A process forked from one that had some opens
its own (a lock is shared by every copy of a descriptor). Places of one run's budget folder at a time: those of
an earlier run, and the copies a fork inherited, are closed when a new place opens."""
_OPENING = threading.Lock()
"""Held while a place is looked for and opened: two threads' first calls would otherwise open one each."""


def _close_places_except(folder: str) -> None:
    pid = os.getpid()
    for key, place in list(_OPEN.items()):
        if key[0] == pid and (os.path.dirname(key[1]) == folder or place.held):
            continue  # this run's, or holding a slot now
        del _OPEN[key]
        for fd in (place.state, *place.slots.values()):
            os.close(fd)  # a fork's copy: closing it leaves the other process's lock as it is


class FileBudget:
    """The budget of every process on one host, kept in `folder`: per endpoint, one lock file per slot and a
    state file (adaptive limit, token bucket) read and written under a lock on itself.

    Each process keeps its descriptors of these files open between calls, so a call costs a few system calls
    (lock, read, unlock; lock a slot; and the same to give it back) rather than opening and closing four files
    and parsing paths: 0.37 ms of CPU per call at size before, ALFWorld with 16 workers on 2 cores
    (docs/fullsize.md, "The endpoint budget's files stay open"). A killed worker's slots are freed with its
    descriptors, as before."""

    def __init__(self, folder: str | Path):
        self.folder = os.path.normpath(folder)
        self._paths: dict[str, str] = {}

    def _place(self, endpoint: Endpoint) -> tuple[str, _Place]:
        path = self._paths.get(endpoint.key)
        if path is None:
            digest = hashlib.sha256(endpoint.key.encode()).hexdigest()[:16]
            path = self._paths[endpoint.key] = os.path.join(self.folder, digest)
        place = _OPEN.get((os.getpid(), path))
        if place is None:
            with _OPENING:
                place = _OPEN.get((os.getpid(), path))
                if place is None:
                    _close_places_except(self.folder)
                    os.makedirs(path, exist_ok=True)
                    place = _OPEN[(os.getpid(), path)] = _Place(
                        os.open(os.path.join(path, "state.json"), os.O_RDWR | os.O_CREAT, 0o600)
                    )
        return path, place

    def _update(self, place: _Place, endpoint: Endpoint, change) -> Allowance:
        """Apply `change` to the stored allowance under the state lock; return the new value (written only
        when it changed: a call that finds the endpoint at its full limit, with no token bucket, writes
        nothing)."""
        with place.lock:
            fcntl.flock(place.state, fcntl.LOCK_EX)
            try:
                now = time.time()
                data = os.pread(place.state, 4096, 0)
                if data != place.read:  # the same bytes as last time: the same allowance, not parsed again
                    place.read, place.stored = data, read_allowance(data)
                stored = place.stored
                allowance = change(refill(stored or fresh(endpoint, now), endpoint, now))
                if allowance != stored:
                    data = json.dumps(asdict(allowance)).encode().ljust(STATE_BYTES)
                    os.pwrite(place.state, data, 0)
                    place.read, place.stored = data, allowance
                return allowance
            finally:
                fcntl.flock(place.state, fcntl.LOCK_UN)

    def _take_slot(self, path: str, place: _Place, limit: int) -> int | None:
        """A free slot below `limit`, looked for from this process's own first slot on (its process id modulo
        the limit), so that a process finds its usual slot free and keeps a descriptor open for the few slots
        its calls in flight use, not for every slot of the endpoint."""
        with place.lock:
            start = os.getpid() % limit
            for i in range(limit):
                slot = (start + i) % limit
                if slot in place.held:
                    continue
                fd = place.slots.get(slot)
                if fd is None:
                    fd = place.slots[slot] = os.open(
                        os.path.join(path, f"slot-{slot}"), os.O_RDWR | os.O_CREAT, 0o600
                    )
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                place.held.add(slot)
                return slot
        return None

    def acquire(self, endpoint: Endpoint) -> FileLease:
        path, place = self._place(endpoint)
        while True:
            allowance = self._update(place, endpoint, lambda a: a)
            if admits(allowance, endpoint, 0):
                slot = self._take_slot(path, place, int(allowance.limit))
                if slot is not None:
                    return FileLease(place, slot, endpoint)
            time.sleep(wait_seconds(allowance, endpoint))

    def release(self, lease: FileLease, *, tokens: int, rate_limited: bool) -> None:
        place = lease.place
        try:
            self._update(
                place,
                lease.endpoint,
                lambda a: settle(a, lease.endpoint, tokens=tokens, rate_limited=rate_limited),
            )
        finally:
            with place.lock:
                fcntl.flock(place.slots[lease.slot], fcntl.LOCK_UN)
                place.held.discard(lease.slot)


def read_allowance(data: bytes) -> Allowance | None:
    """The allowance a state file holds; None for an empty (new) or unreadable one, which starts afresh."""
    try:
        return Allowance(**json.loads(data)) if data.strip() else None
    except (ValueError, TypeError):
        return None


class Budgeted:
    """Wraps a model so each call to its endpoint holds a slot of the run's budget (inside the retry loop:
    a call waiting out a back-off holds none)."""

    def __init__(self, model: Model, budget: Budget, endpoint: Endpoint):
        self.inner = model
        self.name = model.name
        self.budget = budget
        self.endpoint = endpoint

    def describe(self) -> Mapping[str, Any]:
        return self.inner.describe()

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        lease = self.budget.acquire(self.endpoint)
        tokens, rate_limited = 0, False
        try:
            reply = self.inner.generate(prompt, role=role)
            tokens = reply.usage.input_tokens + reply.usage.output_tokens
            return reply
        except TransientError as error:
            rate_limited = error.rate_limited
            raise
        finally:
            self.budget.release(lease, tokens=tokens, rate_limited=rate_limited)
