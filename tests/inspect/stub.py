"""A loopback OpenAI-protocol server for the inspect tests: `StubOpenAI` (tests/models) answering every role
from the request alone, and keeping each request's start and end time, so the calls in flight at once can be
read from its log."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from typing import Any

from pos_bench.models.scripted import schema_reply
from pos_bench.types import Prompt
from tests.models.stub_openai_server import StubOpenAI, pick_listed_action

MODEL = "stub-model"
"""The id the stub serves; inspect reaches it as `openai-api/stub/stub-model`."""
INSPECT_NAME = f"openai-api/stub/{MODEL}"


def by_schema(body: Mapping[str, Any]) -> str:
    """The smallest reply the request's schema accepts (the policy's: its first listed action), else one of the
    actions the prompt lists: a reply that depends on the request only, as record and replay need."""
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if schema:
        return schema_reply(Prompt(messages=(), schema=schema))
    return pick_listed_action(body)


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most intervals that overlap at one instant."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


class TimedStub(StubOpenAI):
    """The stub with each chat request's (start, end) in `spans`."""

    def __init__(self, **kwargs: Any):
        super().__init__(model_id=MODEL, **{"answer": by_schema, **kwargs})
        self.spans: list[tuple[float, float]] = []
        self._spans_lock = threading.Lock()

    def _handle(self, handler: Any) -> None:
        started = time.monotonic()
        try:
            super()._handle(handler)
        finally:
            with self._spans_lock:
                self.spans.append((started, time.monotonic()))

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "messages" in r]


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
