"""A model that plays back canned replies: the offline stand-in for every role in tests and benches."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pos_bench.types import Prompt, Reply, Usage

Responder = Callable[[Prompt, int], str]
"""Computes a reply from the prompt and the role's call index."""


class ScriptedModel:
    """Replies per role, from a list (played in order, the last one repeating) or a function.

    Usage counts characters/4 so token accounting is exercised without a tokenizer.
    """

    def __init__(
        self,
        replies: Mapping[str, Sequence[str] | Responder] | None = None,
        *,
        default: str | Responder = '{"thought": "", "action": "look"}',
        name: str = "scripted",
        delay: float = 0.0,
    ):
        self.replies = dict(replies or {})
        self.default = default
        self.name = name
        self.delay = delay
        """Seconds each call waits, to stand in for a slow model (resume and concurrency checks)."""
        self.calls: dict[str, int] = {}
        self.prompts: list[tuple[str, Prompt]] = []

    def describe(self) -> Mapping[str, Any]:
        # Replies depend on call order, not only on the request, so the response cache must pass it by.
        # `test` labels its runs as harness checks, never as results.
        return {"provider": "scripted", "model": self.name, "temperature": 0.0, "cacheable": False, "test": True}

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        if self.delay:
            time.sleep(self.delay)
        index = self.calls.get(role, 0)
        self.calls[role] = index + 1
        self.prompts.append((role, prompt))
        source = self.replies.get(role, self.default)
        if callable(source):
            text = source(prompt, index)
        elif isinstance(source, str):
            text = source
        else:
            if not source:
                raise ValueError(f"scripted model has an empty reply list for role {role!r}")
            text = source[min(index, len(source) - 1)]
        size = sum(len(m.content) for m in prompt.messages)
        return Reply(text=text, usage=Usage(size // 4 + 1, len(text) // 4 + 1, 1))
