"""pos_bench inside inspect_ai (issue 43): the benchmarks as inspect tasks (`tasks.py`), every method as an
inspect agent (`agent.py`), inspect's providers as a pos_bench model (`pos_bench.models.inspect_model`).
docs/inspect.md has the commands and what maps to what."""

from __future__ import annotations

from typing import Any


def method_agent(method: str = "pos", **settings: Any) -> Any:
    """An inspect agent that plays the pos_bench method `method` (see `pos_bench.inspect.agent`)."""
    from pos_bench.inspect.agent import method_agent as make

    return make(method, **settings)
