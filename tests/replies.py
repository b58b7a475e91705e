"""A hypothesis strategy for model replies, the hostile ones included: any Unicode text (lone surrogates too),
JSON of any shape with the keys our parsers look for, fenced JSON inside prose, very deep nesting, megabytes.
Shared by the parser tests and `scripts/reliability_report.py`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

KEYS = (
    "thought", "action", "actions", "name", "arguments", "passport", "goal_specification", "entities", "states",
    "relations", "epistemic_gaps", "achievement_gaps", "frontier", "issues", "progress", "label", "summary",
    "facts", "verified_facts", "findings", "text", "plan", "id", "attributes",
)  # fmt: skip


def replies() -> st.SearchStrategy[str]:
    chars = st.characters(codec=None, exclude_categories=())  # every code point, surrogates included
    text = st.text(chars, max_size=300)
    leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(chars, max_size=20)
    values = st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | text, inner, max_size=4)
        ),
        max_leaves=24,
    )
    shaped = st.dictionaries(st.sampled_from(KEYS), values, max_size=8).map(json.dumps)
    fenced = st.tuples(text, shaped, text).map(lambda t: f"{t[0]}```json\n{t[1]}\n```{t[2]}")
    deep = (
        st.integers(100, 200_000).map(lambda n: "{" * n)
        | st.integers(100, 40_000).map(lambda n: '{"action":' * n + '"look"' + "}" * n)
        | st.integers(100, 20_000).map(lambda n: '{"thought": "", "action": ' + "[" * n + "]" * n + "}")
    )
    huge = st.integers(1_000_000, 3_000_000).map(lambda n: '{"thought": "' + "x" * n + '", "action": "look"}')
    lone = st.sampled_from(["\ud800", "\udfff", "\udc80"]).map(
        lambda s: '{"thought": "' + s + '", "action": "look' + s + '"}'
    )
    raw_bytes = st.binary(max_size=300).map(lambda b: b.decode("latin-1"))
    return st.one_of(text, shaped, fenced, deep, huge, lone, raw_bytes)


def parse_seconds(parse: Callable[[str], Any], text: str, *, bound: float = 0.05) -> float:
    """Seconds `parse(text)` takes; a first timing above `bound` is retried, keeping the fastest of three, so a
    pause of a loaded machine (or of the garbage collector) is not taken for the parser's own cost."""
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        parse(text)
        timings.append(time.perf_counter() - started)
        if timings[-1] <= bound:
            break
    return min(timings)
