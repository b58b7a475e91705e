"""The shared retry policy: what is retried, how long it waits, and when it gives up."""

from __future__ import annotations

import pytest

from pos_bench.models.retry import (
    RequestRefused,
    RetryBudgetExhausted,
    Retrying,
    RetryPolicy,
    TransientError,
    failure_kind,
    parse_retry_after,
)
from pos_bench.types import Message, Prompt, Reply

PROMPT = Prompt((Message("user", "hi"),))


class Flaky:
    """Raises the queued errors in order, then answers."""

    name = "flaky"

    def __init__(self, *errors: Exception):
        self.errors = list(errors)
        self.calls = 0

    def describe(self):
        return {"provider": "test", "model": "flaky"}

    def generate(self, prompt, *, role="agent"):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return Reply("ok")


def retrying(model, **policy):
    slept: list[float] = []
    wrapped = Retrying(
        model, RetryPolicy(**{"initial_wait": 1.0, "jitter": 0.0, **policy}), sleep=slept.append
    )
    return wrapped, slept


def test_transient_errors_back_off_exponentially():
    model = Flaky(TransientError("a"), TransientError("b"), TransientError("c"))
    wrapped, slept = retrying(model)
    assert wrapped.generate(PROMPT).text == "ok"
    assert slept == [1.0, 2.0, 4.0] and model.calls == 4


def test_backoff_is_capped_and_jittered():
    wrapped, slept = retrying(Flaky(*[TransientError("x")] * 5), max_wait=3.0, jitter=0.5, max_attempts=6)
    wrapped.generate(PROMPT)
    assert all(w <= 3.0 for w in slept) and slept[-1] >= 3.0 - 1e-9
    assert any(w != int(w) for w in slept[:2])


def test_retry_after_wins_over_backoff_but_is_capped():
    model = Flaky(TransientError("slow down", retry_after=5.0), TransientError("later", retry_after=900.0))
    wrapped, slept = retrying(model, max_retry_after=30.0)
    wrapped.generate(PROMPT)
    assert slept == [5.0, 30.0]


def test_other_errors_are_not_retried():
    model = Flaky(ValueError("bad request"))
    wrapped, slept = retrying(model)
    with pytest.raises(ValueError):
        wrapped.generate(PROMPT)
    assert model.calls == 1 and slept == []


def test_the_budget_bounds_attempts_and_names_the_last_error():
    model = Flaky(*[TransientError(f"try {i}") for i in range(10)])
    wrapped, _ = retrying(model, max_attempts=4)
    with pytest.raises(RetryBudgetExhausted, match="4 times; last error: try 3") as caught:
        wrapped.generate(PROMPT, role="belief")
    assert "(belief)" in str(caught.value) and model.calls == 4


def test_the_budget_bounds_total_time():
    model = Flaky(*[TransientError("x")] * 10)
    wrapped, _ = retrying(model, max_seconds=0.0)
    with pytest.raises(RetryBudgetExhausted):
        wrapped.generate(PROMPT)
    assert model.calls == 1


def test_describe_records_the_policy():
    wrapped, _ = retrying(Flaky(), max_attempts=3)
    assert wrapped.describe()["retry"]["max_attempts"] == 3 and wrapped.describe()["model"] == "flaky"


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("3", 3.0), (" 1.5 ", 1.5), ("-2", None), ("Wed, 21 Oct 2015", None), (None, None)],
)
def test_parse_retry_after(header, seconds):
    assert parse_retry_after(header) == seconds


def test_policy_rejects_bad_values():
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="initial_wait"):
        RetryPolicy(initial_wait=-1)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (
            RequestRefused("llama.cpp failed the 'agent' request (exceed_context_size_error): too long"),
            "overflow",
        ),
        (RequestRefused("openai HTTP 400: This model's maximum context length is 8192 tokens"), "overflow"),
        (
            RequestRefused("anthropic HTTP 400: prompt is too long: 210000 tokens > 200000 maximum"),
            "overflow",
        ),
        (RequestRefused("openai HTTP 400: unsupported parameter: tools"), "refused"),
        (RetryBudgetExhausted("model call (agent) failed 3 times; last error: Request timed out."), None),
        (TransientError("openai HTTP 500: internal error"), None),
    ],
)
def test_failure_kind_tells_an_overflow_from_a_refusal(error, kind):
    assert failure_kind(error) == kind


def test_failure_kind_reads_the_chain_of_a_spent_retry_budget():
    try:
        try:
            raise TimeoutError("the deadline passed")
        except TimeoutError as cause:
            raise RetryBudgetExhausted("model call (agent) failed 3 times") from cause
    except RetryBudgetExhausted as error:
        assert failure_kind(error) == "timeout"
