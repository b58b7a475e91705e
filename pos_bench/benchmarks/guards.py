"""What every tool benchmark does to an observation and to an agent's arguments (SPEC-BENCH §1.2): cap the
text with a notice, and refuse arguments that reach for the answer key."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

NOT_A_TOOL_CALL = (
    'Invalid action: expected a tool call {"name": <tool>, "arguments": {...}}. Nothing was done.'
)
UNKNOWN_TOOL = "Unknown tool {name!r}. The available tools are: {names}. Nothing was done."


def cap(text: str, limit: int, *, hint: str) -> str:
    """The first `limit` characters of `text`, with a notice (ending in `hint`) when something was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[Observation cut to its first {limit} of {len(text)} characters. {hint}]"


def mentions_any(value: Any, fragments: Iterable[str]) -> bool:
    """Whether any string in `value` (keys included, at any depth) contains one of `fragments`, in any case."""
    fragments = tuple(f.lower() for f in fragments)
    if isinstance(value, str):
        return any(fragment in value.lower() for fragment in fragments)
    if isinstance(value, Mapping):
        return any(mentions_any(k, fragments) or mentions_any(v, fragments) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(mentions_any(v, fragments) for v in value)
    return False
