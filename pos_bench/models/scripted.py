"""A model that plays back canned replies: the offline stand-in for every role in tests and benches."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pos_bench.standin.instance import minimal_instance
from pos_bench.types import Prompt, Reply, Usage

Responder = Callable[[Prompt, int], str]
"""Computes a reply from the prompt and the role's call index."""


class ScriptedModel:
    """Replies per role, from a list (played in order, the last one repeating) or a function.

    Usage counts characters/4 so token accounting is exercised without a tokenizer; with `tokenizer` (a
    `bpe-openai` encoding, e.g. `o200k_base`) it counts tokens as the stand-in endpoint does (its chat template),
    which `python -m pos_bench.estimate`'s probe uses.
    """

    def __init__(
        self,
        replies: Mapping[str, Sequence[str] | Responder] | None = None,
        *,
        default: str | Responder = '{"thought": "", "action": "look"}',
        name: str = "scripted",
        delay: float = 0.0,
        tokenizer: str | None = None,
    ):
        self.replies = dict(replies or {})
        self.tokenizer = tokenizer
        self._encoding: Any = None
        self.default = default
        self.name = name
        self.delay = delay
        """Seconds each call waits, to stand in for a slow model (resume and concurrency checks)."""
        self.calls: dict[str, int] = {}
        self.prompts: list[tuple[str, Prompt]] = []

    def describe(self) -> Mapping[str, Any]:
        # Replies depend on call order, not only on the request, so the response cache must pass it by.
        # `test` labels its runs as harness checks, never as results.
        return {
            "provider": "scripted",
            "model": self.name,
            "temperature": 0.0,
            "cacheable": False,
            "test": True,
        }

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
        if self.tokenizer:
            return Reply(text=text, usage=Usage(*self.counted(prompt, text), 1))
        size = sum(len(m.content) for m in prompt.messages)
        return Reply(text=text, usage=Usage(size // 4 + 1, len(text) // 4 + 1, 1))

    def counted(self, prompt: Prompt, text: str) -> tuple[int, int]:
        """Prompt and reply tokens under `tokenizer`, the prompt read through the stand-in's chat template."""
        from pos_bench.standin.wire import chat_template

        if self._encoding is None:
            import bpe_openai

            self._encoding = bpe_openai.get_encoding(self.tokenizer)
        messages = [{"role": m.role, "content": m.content} for m in prompt.messages]
        encode = self._encoding.encode_ordinary
        return len(encode(chat_template(messages))), len(encode(text))


FREE_TEXT_REPLY = "Nothing new to report."
"""What `schema_reply` answers a prompt without a schema (a compressor or summariser call)."""


def schema_reply(prompt: Prompt, index: int = 0) -> str:
    """A responder for any role: the smallest JSON value the prompt's schema accepts (the stand-in's
    `minimal_instance`: required keys only, the first enum value or `anyOf` option, the fewest array items, the
    shortest strings), so every method and benchmark can play a turn without a script written for it. Use it as
    `ScriptedModel(default=schema_reply)` (in a config: `model.default: {_target_:
    pos_bench.models.scripted.schema_reply, _partial_: true}`)."""
    if prompt.schema is None:
        return FREE_TEXT_REPLY
    return json.dumps(minimal_instance(prompt.schema))
