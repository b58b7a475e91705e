"""The OpenAI chat-completions shapes the stand-in sends: a whole completion, a streamed chunk, usage with
`prompt_tokens_details.cached_tokens`, an error; and the text a chat request is read as."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pos_bench.standin.replies import message_text

SERVED_BY = "pos_bench-standin"
"""The `system_fingerprint` of every reply, so a transcript says a stand-in answered it."""


@dataclass(frozen=True)
class Answer:
    """One admitted request's reply, as counted: its clock key, text, tokens and why it ended."""

    key: int
    text: str
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    finish_reason: str


def chat_template(messages: Any) -> str:
    """The text a server would read for `messages`: each message's role marker, then its text."""
    parts = [f"<|{m.get('role', 'user')}|>\n{message_text(m)}\n" for m in messages if isinstance(m, Mapping)]
    return "".join(parts) + "<|assistant|>\n"


def completion(body: Mapping[str, Any], answer: Answer) -> dict[str, Any]:
    """The chat-completion object of a whole (not streamed) reply."""
    return {
        "id": f"chatcmpl-standin-{answer.key}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "system_fingerprint": SERVED_BY,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer.text},
                "finish_reason": answer.finish_reason,
            }
        ],
        "usage": usage(answer),
    }


def usage(answer: Answer) -> dict[str, Any]:
    return {
        "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.output_tokens,
        "total_tokens": answer.prompt_tokens + answer.output_tokens,
        "prompt_tokens_details": {"cached_tokens": answer.cached_tokens},
    }


def chunk(
    body: Mapping[str, Any], answer: Answer, delta: Mapping[str, Any], finish: str | None
) -> dict[str, Any]:
    """One server-sent event of a streamed reply."""
    return {
        "id": f"chatcmpl-standin-{answer.key}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "system_fingerprint": SERVED_BY,  # on every chunk, as OpenAI and vLLM send it
        "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish}],
    }


def error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}
