"""Fixtures of the inspect tests: the stub server, and inspect's `openai-api/stub` provider pointed at it.

One server serves the whole session: inspect keeps the models it made (memoized with the URL they read from
the environment), so a server per test would leave later tests calling a stopped one. Each test gets it with
its records cleared and no delay."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.inspect.stub import TimedStub, by_schema

pytest.importorskip("inspect_ai")


@pytest.fixture(scope="session")
def stub_server() -> Iterator[TimedStub]:
    server = TimedStub().start()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STUB_BASE_URL", f"{server.url}/v1")
        patch.setenv("STUB_API_KEY", "no-key")
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def stub(stub_server: TimedStub) -> TimedStub:
    """The running stub, its request log empty; inspect's `openai-api/stub/…` models reach it."""
    stub_server.requests.clear()
    stub_server.spans.clear()
    stub_server.delay = 0.0
    stub_server.answer = by_schema
    stub_server.max_in_flight = 0
    stub_server.report_cached = False
    stub_server.faults.rule = None
    stub_server.faults.queue.clear()
    return stub_server
