"""One retry policy for every remote call: exponential backoff with jitter, `Retry-After` honoured, a bounded
total. The SDKs' own retries are off (`max_retries=0`), so attempts never multiply.

Providers raise `TransientError` for what is worth another attempt (rate limits, timeouts, connection errors,
5xx, a malformed body); everything else propagates at once. When the budget is spent the call fails with
`RetryBudgetExhausted`, which the runner records as that episode's error (played again when the command is
rerun), never the run's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import tenacity
from tenacity import RetryCallState, RetryError

from pos_bench.models.deadline import deadline
from pos_bench.protocols import Model
from pos_bench.types import Prompt, Reply


class TransientError(RuntimeError):
    """A failed attempt that may succeed if repeated. `retry_after` is the server's hint in seconds;
    `rate_limited` marks a 429, which also narrows the endpoint's budget (`pos_bench.models.budget`);
    `timed_out` marks a call cut by its deadline, which is sent again at most once (`Retrying`)."""

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        rate_limited: bool = False,
        timed_out: bool = False,
    ):
        super().__init__(message)
        self.retry_after = retry_after
        self.rate_limited = rate_limited
        self.timed_out = timed_out


class RequestRefused(RuntimeError):
    """The provider refused this very request (a context overflow, a schema it cannot compile, an HTTP 400):
    the same request always fails the same way, so it is not retried, and the response cache records the
    refusal and raises it again on a repeat, as a replay must (`pos_bench.models.cache`)."""


class RetryBudgetExhausted(RuntimeError):
    """Every allowed attempt failed; the message names the last failure."""


Failure = Literal["refused", "overflow", "timeout"]

OVERFLOW_MARKERS = (
    "exceed_context_size",  # llama.cpp's error type
    "context_length_exceeded",  # OpenAI's error code
    "maximum context length",  # OpenAI's and vLLM's message
    "context window",
    "prompt is too long",  # Anthropic's message
)
"""Words by which servers say a request is longer than the model's context."""


def failure_kind(error: BaseException) -> Failure | None:
    """How a failed model call failed, for the episode's failure ledger: `overflow` (the prompt exceeds the
    context), `refused` (the server refused the request: HTTP 4xx other than 429), `timeout`, or None (any
    other failure). Reads the error and the errors it was raised from."""
    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    text = " ".join(str(e) for e in chain).lower()
    status = next((s for e in chain if isinstance(s := getattr(e, "status_code", None), int)), None)
    if any(isinstance(e, RequestRefused) for e in chain) or (
        status and 400 <= status < 500 and status != 429
    ):
        return "overflow" if any(marker in text for marker in OVERFLOW_MARKERS) else "refused"
    if any(isinstance(e, TimeoutError) or "timeout" in type(e).__name__.lower() for e in chain):
        return "timeout"
    return None


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    """Attempts per call, the first included."""
    max_seconds: float = 600.0
    """Total time of one call, its attempts and backoffs included: an attempt in flight at this limit is cut
    (`pos_bench.models.deadline`), and no backoff ends past it. A remote model's call gets twice the time its
    longest reply may take on top (`max_tokens / model.min_tokens_per_s`)."""
    initial_wait: float = 1.0
    """First backoff in seconds; it doubles per attempt, plus up to `jitter` seconds."""
    max_wait: float = 60.0
    """Cap on one backoff."""
    jitter: float = 1.0
    max_retry_after: float = 120.0
    """Cap on a server's `Retry-After`, so a bad header cannot stall an episode for hours."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"retry.max_attempts must be ≥ 1, got {self.max_attempts}")
        for name in ("max_seconds", "initial_wait", "max_wait", "jitter", "max_retry_after"):
            if getattr(self, name) < 0:
                raise ValueError(f"retry.{name} must be ≥ 0, got {getattr(self, name)}")


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` header (delta-seconds form; an HTTP date is ignored)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


class WaitRetryAfter:
    """tenacity `wait`: the server's `Retry-After` (capped) when it sent one, else exponential backoff."""

    def __init__(self, policy: RetryPolicy):
        self.cap = policy.max_retry_after
        self.backoff = tenacity.wait_exponential_jitter(
            multiplier=policy.initial_wait, max=policy.max_wait, jitter=policy.jitter
        )

    def __call__(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, TransientError) and error.retry_after is not None:
            return min(error.retry_after, self.cap)
        return self.backoff(state)


MAX_TIMEOUTS = 2
"""Attempts of one call that may time out: the request is sent again unchanged once, never twice."""


class Retrying:
    """Wraps a model so each call is retried under `policy`."""

    def __init__(
        self,
        model: Model,
        policy: RetryPolicy = RetryPolicy(),
        *,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.inner = model
        self.name = model.name
        self.policy = policy
        self._sleep = sleep

    def describe(self) -> Mapping[str, Any]:
        return {**self.inner.describe(), "retry": asdict(self.policy)}

    def call_seconds(self, prompt: Prompt) -> float:
        """The total time of this call: `max_seconds`, plus room for two long replies to be written when the
        provider's deadline grows with `max_tokens` (`RemoteModel.reply_seconds`): the first attempt and
        the one unchanged re-send a timeout allows."""
        inner = self.inner
        while not hasattr(inner, "reply_seconds") and hasattr(inner, "inner"):  # through `Budgeted`
            inner = inner.inner
        reply = getattr(inner, "reply_seconds", None)
        return self.policy.max_seconds + (MAX_TIMEOUTS * reply(prompt.max_tokens) if callable(reply) else 0.0)

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        """The reply, after as many attempts as the policy allows. The first attempt runs on its own, and only
        a call whose first attempt failed builds the retry machinery (tenacity's objects, 0.13 ms of CPU per
        call at size, for the few calls that need it); tenacity then counts the failed attempt as its first, so
        the attempts, waits and stops are the ones it would have made from the start."""
        timeouts = 0

        def attempt() -> Reply:
            nonlocal timeouts
            try:
                return self.inner.generate(prompt, role=role)
            except TransientError as error:
                timeouts += error.timed_out
                raise

        total = self.call_seconds(prompt)
        started = time.monotonic()
        try:
            with deadline(total):
                try:
                    return attempt()
                except TransientError as error:
                    first: TransientError | None = error

                def after_the_first() -> Reply:
                    nonlocal first
                    if first is not None:  # tenacity's first attempt: the one that failed above
                        failed, first = first, None
                        raise failed
                    return attempt()

                retrying = tenacity.Retrying(
                    retry=tenacity.retry_if_exception_type(TransientError),
                    wait=WaitRetryAfter(self.policy),
                    # No backoff that would end past the total; the attempt in flight is cut by the deadline. A
                    # request that timed out is sent again once, unchanged: a second timeout says the server
                    # cannot answer it in time, and a third attempt would only generate the same reply from
                    # scratch again.
                    stop=tenacity.stop_any(
                        tenacity.stop_after_attempt(self.policy.max_attempts),
                        tenacity.stop_before_delay(total - (time.monotonic() - started)),
                        lambda _state: timeouts >= MAX_TIMEOUTS,
                    ),
                    sleep=self._sleep,
                )
                return retrying(after_the_first)
        except RetryError as gave_up:
            last = gave_up.last_attempt
            advice = (
                "The request timed out twice and is not sent a third time: a slow server needs model.stream=true "
                "(streamed replies are cut only by model.timeout of silence), a lower max_tokens, or a lower "
                "model.min_tokens_per_s (the overall deadline is model.timeout + max_tokens / min_tokens_per_s)."
                if timeouts >= MAX_TIMEOUTS
                else "The episode is recorded as an error; rerun the same command to play it again (cached calls "
                "are free), or raise retry.max_attempts / retry.max_seconds."
            )
            raise RetryBudgetExhausted(
                f"model call ({role}) failed {last.attempt_number} times; last error: {last.exception()}. {advice}"
            ) from last.exception()
