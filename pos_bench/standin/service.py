"""When a stand-in request gets its first token and its last: a batch-throughput model of one serving
deployment, and the clock that applies it to the requests in flight.

The model (`ServiceModel`): a request waits for a batch slot, then `first_token_s`, then its uncached prompt
tokens are read at `prefill_tokens_per_s` (shared by the prompts being read at that moment), then it decodes
one token per step with every other decoding request. A step costs a fixed part (reading the weights) plus a
part per request in the batch (its KV cache), so a request alone decodes at `tokens_per_s` and the batch's
summed speed approaches `batch_tokens_per_s` as it fills. One simplification is knowingly kept: prefill and
decode do not slow each other, where a real engine's chunked prefill takes a share of the decode steps.

`Clock` applies the model to requests that come and go, in any time base: the server drives it with the
monotonic clock, `service_bound` with simulated time, so the bound a full-size run is held to is computed by
the very code that paced it.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass

DONE_EPSILON = 1e-7
"""Work left (seconds or tokens) below which a phase is over: the float rounding of exact arithmetic."""


@dataclass(frozen=True)
class ServiceModel:
    """One vLLM-like deployment of an 8B model on one data-centre GPU (defaults; docs/fullsize.md)."""

    tokens_per_s: float = 100.0
    """Decode speed of a request served alone, in tokens per second."""
    batch_tokens_per_s: float = 3000.0
    """Summed decode speed the batch approaches as it fills, in tokens per second."""
    prefill_tokens_per_s: float = 15000.0
    """Uncached prompt tokens read per second, shared by the prompts being read at the same time."""
    first_token_s: float = 0.02
    """Fixed latency before a request's prompt is read (scheduling, sampling set-up), in seconds."""
    max_batch: int = 256
    """Requests served at once (vLLM's `max_num_seqs`); later ones wait in arrival order."""

    def __post_init__(self) -> None:
        for name in ("tokens_per_s", "batch_tokens_per_s", "prefill_tokens_per_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.batch_tokens_per_s < self.tokens_per_s:
            raise ValueError(
                f"batch_tokens_per_s ({self.batch_tokens_per_s}) must be ≥ tokens_per_s ({self.tokens_per_s}):"
                " a batch is never slower in sum than one request alone"
            )
        if self.first_token_s < 0:
            raise ValueError(f"first_token_s must be ≥ 0, got {self.first_token_s}")
        if self.max_batch < 1:
            raise ValueError(f"max_batch must be ≥ 1, got {self.max_batch}")

    def step_seconds(self, batch: int) -> float:
        """One decode step with `batch` requests decoding."""
        return 1.0 / self.tokens_per_s + (max(batch, 1) - 1) / self.batch_tokens_per_s

    def per_request_tokens_per_s(self, batch: int) -> float:
        """How fast each of `batch` decoding requests gets its tokens."""
        return 1.0 / self.step_seconds(batch)


@dataclass(frozen=True)
class Progress:
    """Where one request stands; the times are in the clock's time base."""

    produced: int
    """Output tokens decoded so far."""
    first_token_at: float | None
    done_at: float | None


@dataclass
class _Job:
    read: int
    output: int
    phase: str = "queued"
    """queued → wait → prefill → decode → done."""
    left: float = 0.0
    first_token_at: float | None = None
    done_at: float | None = None


@dataclass(frozen=True)
class Changes:
    """Requests that got their first token, and requests that finished, during one `advance`."""

    first_token: tuple[Hashable, ...] = ()
    done: tuple[Hashable, ...] = ()


class Clock:
    """The requests in flight under one `ServiceModel`, advanced piecewise: between two phase changes every
    rate is constant, so each advance is exact, whatever the time between calls."""

    def __init__(self, model: ServiceModel, now: float = 0.0):
        self.model = model
        self.now = now
        self._jobs: dict[Hashable, _Job] = {}
        self._queue: deque[Hashable] = deque()

    def admit(self, key: Hashable, *, read_tokens: int, output_tokens: int, now: float) -> Changes:
        """A new request at `now`: `read_tokens` uncached prompt tokens, `output_tokens` to decode."""
        if key in self._jobs:
            raise ValueError(f"request {key!r} is already in flight")
        changes = self.advance(now)
        self._jobs[key] = _Job(read=max(read_tokens, 0), output=max(output_tokens, 0))
        self._queue.append(key)
        return _merged(changes, self._settle())

    def progress(self, key: Hashable) -> Progress:
        job = self._jobs[key]
        produced = (
            job.output - job.left if job.phase == "decode" else job.output if job.phase == "done" else 0
        )
        return Progress(int(produced + DONE_EPSILON), job.first_token_at, job.done_at)

    def release(self, key: Hashable) -> None:
        """Drop a request's record: a finished one, or one whose client left (its share of the batch then goes
        to the others, as a server aborts a request whose connection closed)."""
        if self._jobs.pop(key).phase == "queued":
            self._queue.remove(key)

    @property
    def in_flight(self) -> int:
        return sum(job.phase != "done" for job in self._jobs.values())

    def next_event(self) -> float | None:
        """When the next phase change happens if nothing else arrives; None when nothing is in flight."""
        step = self._next_step()
        return None if step is None else self.now + step

    def advance(self, now: float) -> Changes:
        """Run the requests in flight up to `now` (never backwards)."""
        found = self._settle()
        while now > self.now:
            step = self._next_step()
            if step is None or step >= now - self.now:
                self._run(now - self.now if step is None else min(step, now - self.now))
                self.now = now
            else:
                self._run(step)
                self.now += step
            found = _merged(found, self._settle())
        return found

    def _rates(self) -> dict[str, float]:
        reading = sum(job.phase == "prefill" for job in self._jobs.values())
        decoding = sum(job.phase == "decode" for job in self._jobs.values())
        return {
            "wait": 1.0,
            "prefill": self.model.prefill_tokens_per_s / reading if reading else 0.0,
            "decode": self.model.per_request_tokens_per_s(decoding) if decoding else 0.0,
        }

    def _next_step(self) -> float | None:
        rates = self._rates()
        steps = [job.left / rates[job.phase] for job in self._jobs.values() if job.phase in rates]
        return max(min(steps), 0.0) if steps else None

    def _run(self, span: float) -> None:
        rates = self._rates()
        for job in self._jobs.values():
            if job.phase in rates:
                job.left -= span * rates[job.phase]

    def _settle(self) -> Changes:
        """Move every request whose phase is over to its next one, and fill free batch slots from the queue."""
        first, done = [], []
        moved = True
        while moved:
            moved = False
            busy = sum(job.phase in ("wait", "prefill", "decode") for job in self._jobs.values())
            while self._queue and busy < self.model.max_batch:
                job = self._jobs[self._queue.popleft()]
                job.phase, job.left, busy, moved = "wait", self.model.first_token_s, busy + 1, True
            for key, job in self._jobs.items():
                if job.phase in ("queued", "done") or job.left > DONE_EPSILON:
                    continue
                moved = True
                if job.phase == "wait":
                    job.phase, job.left = "prefill", float(job.read)
                elif job.phase == "prefill":
                    job.phase, job.left, job.first_token_at = "decode", float(job.output), self.now
                    first.append(key)
                else:
                    job.phase, job.left, job.done_at = "done", 0.0, self.now
                    done.append(key)
        return Changes(tuple(first), tuple(done))


def _merged(a: Changes, b: Changes) -> Changes:
    return Changes(a.first_token + b.first_token, a.done + b.done)


@dataclass(frozen=True)
class CallCost:
    """One recorded model call, as the service model sees it."""

    prompt_tokens: int
    cached_tokens: int
    output_tokens: int

    @property
    def read_tokens(self) -> int:
        return max(self.prompt_tokens - self.cached_tokens, 0)


def service_bound(chains: Sequence[Sequence[CallCost]], slots: int, model: ServiceModel) -> float:
    """Seconds the service model needs for `chains` (each episode's calls, in order, one after another) with
    `slots` episodes in flight, each slot taking the next episode as its last one ends: the wall time of a
    run whose client, environments and network cost nothing."""
    if slots < 1:
        raise ValueError(f"slots must be ≥ 1, got {slots}")
    clock = Clock(model)
    episodes: Iterator[Sequence[CallCost]] = iter(chains)
    keys = itertools.count()
    owner: dict[int, Iterator[CallCost]] = {}
    free: deque[Iterator[CallCost]] = deque(iter(()) for _ in range(slots))
    """Slots whose episode is between two calls (or over), with the calls it has left."""
    while True:
        while free:
            calls = free.popleft()
            call = next(calls, None)
            while call is None and (episode := next(episodes, None)) is not None:
                calls = iter(episode)
                call = next(calls, None)
            if call is None:
                continue  # no episode left for this slot
            key = next(keys)
            owner[key] = calls
            done = clock.admit(
                key, read_tokens=call.read_tokens, output_tokens=call.output_tokens, now=clock.now
            )
            free.extend(_finish(clock, owner, done))
        when = clock.next_event()
        if when is None:
            return clock.now
        free.extend(_finish(clock, owner, clock.advance(when)))


def _finish(clock: Clock, owner: dict[int, Iterator[CallCost]], changes: Changes) -> list[Iterator[CallCost]]:
    """The slots whose call just finished, with the calls their episode has left."""
    for key in changes.done:
        clock.release(key)
    return [owner.pop(key) for key in changes.done]
