"""The endpoint budget: its arithmetic (AIMD on 429, token bucket) and its cap on requests in flight, for
threads of one process and for processes of one host, against the loopback stub through the real SDK."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading

import pytest

from pos_bench.models.budget import (
    Budgeted,
    Endpoint,
    FileBudget,
    LocalBudget,
    admits,
    endpoint_of,
    fresh,
    refill,
    settle,
    wait_seconds,
)
from pos_bench.models.openai import OpenAIModel
from pos_bench.models.retry import Retrying, RetryPolicy
from pos_bench.types import Message, Prompt
from tests.models.stub_openai_server import PATIENT, StubOpenAI

KEY = "sk-test-budget-0123456789"
FAST = RetryPolicy(initial_wait=0.01, max_wait=0.05, jitter=0.0)
PROMPT = Prompt((Message("system", "s"), Message("user", "Choose.\n- look\n- open fridge 1")), max_tokens=16)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("STUB_BUDGET_KEY", KEY)


@pytest.fixture
def stub():
    with StubOpenAI(delay=0.05) as server:
        yield server


def budgeted(stub: StubOpenAI, budget, *, max_concurrency: int) -> Budgeted:
    """A fresh model per call, as the runner builds one per episode; only the budget is shared."""
    model = OpenAIModel(
        "stub-model",
        base_url=f"{stub.url}/v1",
        api_key_env="STUB_BUDGET_KEY",
        timeout=PATIENT,
        max_concurrency=max_concurrency,
    )
    return Budgeted(model, budget, endpoint_of(model.describe()))


def hammer(call, n: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def one() -> None:
        try:
            call()
        except BaseException as error:  # noqa: BLE001 - surfaced by the caller's assertion
            errors.append(error)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_a_429_halves_the_allowed_concurrency_and_successes_earn_it_back():
    endpoint = Endpoint("u m", max_in_flight=8)
    narrowed = settle(fresh(endpoint, 0.0), endpoint, tokens=0, rate_limited=True)
    assert narrowed.limit == 4.0 and not admits(narrowed, endpoint, 4) and admits(narrowed, endpoint, 3)
    assert settle(narrowed, endpoint, tokens=0, rate_limited=True).limit == 2.0
    recovered = narrowed
    for _ in range(40):
        recovered = settle(recovered, endpoint, tokens=0, rate_limited=False)
    assert recovered.limit == 8.0
    floor = fresh(Endpoint("u m", max_in_flight=1), 0.0)
    assert settle(floor, endpoint, tokens=0, rate_limited=True).limit == 1.0


def test_an_empty_token_bucket_refuses_until_it_refills():
    endpoint = Endpoint("u m", max_in_flight=4, tokens_per_minute=60)
    spent = settle(fresh(endpoint, 0.0), endpoint, tokens=90, rate_limited=False)
    assert spent.tokens == -30 and not admits(spent, endpoint, 0)
    assert wait_seconds(spent, endpoint) == pytest.approx(30.0)
    assert not admits(refill(spent, endpoint, 30.0), endpoint, 0)
    assert admits(refill(spent, endpoint, 31.0), endpoint, 0)
    assert refill(spent, endpoint, 1e6).tokens == 60  # the bucket holds one minute at most


def test_models_without_an_endpoint_get_no_budget():
    assert endpoint_of({"provider": "scripted", "model": "s"}) is None
    with pytest.raises(ValueError, match="max_concurrency"):
        endpoint_of({"base_url": "u", "model": "m", "max_concurrency": 0})


@pytest.mark.parametrize("make", [lambda _: LocalBudget(), FileBudget], ids=["threads", "files"])
def test_models_sharing_a_budget_keep_the_endpoint_under_its_cap(stub, tmp_path, make):
    budget = make(tmp_path)
    errors = hammer(lambda: budgeted(stub, budget, max_concurrency=3).generate(PROMPT), 12)
    assert errors == [] and len(stub.requests) == 12
    assert stub.max_in_flight == 3


def test_separate_budgets_do_not_limit_each_other(stub):
    errors = hammer(lambda: budgeted(stub, LocalBudget(), max_concurrency=2).generate(PROMPT), 6)
    assert errors == [] and stub.max_in_flight > 2


def call_through_files(url: str, folder: str, n: int) -> None:
    """Child process: `n` threads calling the stub through the file budget in `folder`."""
    model = OpenAIModel("stub-model", base_url=f"{url}/v1", api_key_env="STUB_BUDGET_KEY", max_concurrency=2)
    wrapped = Budgeted(model, FileBudget(folder), endpoint_of(model.describe()))
    assert hammer(lambda: wrapped.generate(PROMPT), n) == []


def test_the_file_budget_caps_several_processes_together(stub, tmp_path):
    context = multiprocessing.get_context("spawn")
    children = [
        context.Process(target=call_through_files, args=(stub.url, str(tmp_path), 3)) for _ in range(3)
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=120)
    assert [c.exitcode for c in children] == [0, 0, 0] and len(stub.requests) == 9
    assert stub.max_in_flight == 2


def test_a_rate_limited_endpoint_gets_fewer_requests_at_once(stub):
    budget = LocalBudget()
    stub.faults.push("429")
    Retrying(budgeted(stub, budget, max_concurrency=4), FAST).generate(PROMPT)
    stub.max_in_flight = 0
    errors = hammer(lambda: budgeted(stub, budget, max_concurrency=4).generate(PROMPT), 8)
    assert errors == [] and 2 <= stub.max_in_flight <= 3


def test_the_file_budget_writes_its_state_only_when_it_changes(tmp_path):
    endpoint = Endpoint("http://127.0.0.1:1/v1 m", max_in_flight=4)
    budget = FileBudget(tmp_path)
    budget.release(budget.acquire(endpoint), tokens=10, rate_limited=False)
    (state,) = tmp_path.glob("*/state.json")
    marked = json.dumps(json.loads(state.read_text()), indent=1)  # the same state, laid out as we never write
    state.write_text(marked)
    for _ in range(3):  # at its full limit with no token bucket: nothing to write
        budget.release(budget.acquire(endpoint), tokens=10, rate_limited=False)
    assert state.read_text() == marked
    budget.release(budget.acquire(endpoint), tokens=10, rate_limited=True)  # a 429 halves the limit
    assert state.read_text() != marked
    assert json.loads(state.read_text())["limit"] == 2.0


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc (Linux)")
def test_the_file_budget_keeps_a_few_files_open_per_run_whatever_the_calls(tmp_path):
    endpoint = Endpoint("http://127.0.0.1:1/v1 m", max_in_flight=4)
    before = open_descriptors()
    for run in ("first", "second/", "third"):  # one budget folder per run, as the runner makes them
        budget = FileBudget(f"{tmp_path / run}")
        for _ in range(50):
            budget.release(budget.acquire(endpoint), tokens=1, rate_limited=False)
        held = [budget.acquire(endpoint) for _ in range(4)]  # every slot at once
        for lease in held:
            budget.release(lease, tokens=1, rate_limited=False)
        assert open_descriptors() - before <= 1 + 4  # the state file and the four slots of this run only
    assert len({lease.slot for lease in held}) == 4
    wide = FileBudget(tmp_path / "wide")
    before = open_descriptors()
    for _ in range(50):  # one call at a time against an endpoint of 64 slots
        wide.release(
            wide.acquire(Endpoint("http://127.0.0.1:1/v1 m", max_in_flight=64)), tokens=1, rate_limited=False
        )
    assert open_descriptors() - before <= 2  # its state file and one slot, not one descriptor per slot tried
