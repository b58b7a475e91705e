"""pos_bench's synchronous loop inside inspect's event loop: samples play at once (the loop is never blocked),
as many as `--max-samples`, with at most `--max-connections` model calls in flight, read from the server's own
log of each request's start and end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inspect.runs import eval_task
from tests.inspect.stub import INSPECT_NAME, TimedStub, most_at_once

FOUR = {"bench.limit": 4, "bench.max_turns": 2, "method": "raw"}


@pytest.mark.parametrize(
    ("max_samples", "max_connections", "expected"), [(4, None, 4), (1, None, 1), (4, 2, 2)]
)
def test_inspect_bounds_what_runs_and_what_is_in_flight(
    max_samples: int, max_connections: int | None, expected: int, stub: TimedStub, tmp_path: Path
):
    stub.delay = 0.5  # each call holds the server long enough for the others to arrive
    log = eval_task(
        "toy",
        INSPECT_NAME,
        tmp_path / "logs",
        max_samples=max_samples,
        max_connections=max_connections,
        results_root=str(tmp_path),
        **FOUR,
    )
    assert log.status == "success" and len(log.samples or []) == 4
    assert len(stub.spans) == 8  # 4 samples x 2 turns
    assert most_at_once(stub.spans) == expected
