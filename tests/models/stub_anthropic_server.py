"""A loopback server speaking enough of the Anthropic Messages protocol to test the real SDK over HTTP.

Shares the threading, delay and fault injection of `stub_openai_server`. When the request carries tools, the
reply is a `tool_use` block for the first tool whose input is the answer's JSON; otherwise a text block.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tests.models.stub_openai_server import StubServer


class StubAnthropic(StubServer):
    """`POST /v1/messages`; usage reports a fixed prompt-cache read so its accounting can be checked."""

    cache_read_tokens = 3

    def error_body(self, message: str) -> Any:
        return {"type": "error", "error": {"type": "api_error", "message": message}}

    def respond(self, path: str, body: Mapping[str, Any]) -> tuple[int, Any]:
        if path != "/v1/messages":
            return 404, self.error_body(f"no route {path}")
        text = self.answer(body)
        if body.get("tools"):
            content = [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": body["tools"][0]["name"],
                    "input": json.loads(text),
                }
            ]
        else:
            content = [{"type": "text", "text": text}]
        prompt_chars = len(str(body.get("system", ""))) + sum(
            len(str(m["content"])) for m in body["messages"]
        )
        return 200, {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", self.model_id),
            "content": content,
            "stop_reason": "tool_use" if body.get("tools") else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": prompt_chars // 4 + 1,
                "output_tokens": len(text) // 4 + 1,
                "cache_read_input_tokens": self.cache_read_tokens,
                "cache_creation_input_tokens": 0,
            },
        }
