"""Claude through the official `anthropic` SDK (Messages API).

Temperature: SDK 2.x dropped `temperature`, `top_p` and `top_k` from `messages.create`, and the API version it
sends (2026-10-21) answers any sampling parameter with HTTP 400 on every model. Temperature 0 is therefore
only possible on the previous API version (`api_version: "2023-06-01"`), where models before the Claude 4.7
generation still accept it; it then travels in `extra_body`. Otherwise nothing is sent and `describe()`
records `temperature_sent: null`, so a run never claims a temperature it did not get.

Structured output: a prompt's schema becomes one tool whose `input_schema` is the schema, and `tool_choice`
forces that tool; the tool input, serialised as JSON, is the reply text that the caller validates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pos_bench.models.endpoint import (
    MAX_REPLY_BYTES,
    MIN_TOKENS_PER_S,
    RemoteModel,
    served_revision,
    token_count,
)
from pos_bench.types import Prompt, Reply, Usage

SAMPLING_API_VERSIONS = frozenset({"2023-06-01", "2023-01-01"})
"""API versions that still accept sampling parameters."""

WORKER_IMPORTS = ("anthropic",)
"""Imported on first use; a run's worker processes have it imported before they start
(`runner/pool/forkserver.py`)."""

REPLY_TOOL = "reply"
REPLY_TOOL_DESCRIPTION = "Give your answer as this tool's input; it must follow the input schema exactly."


class AnthropicModel(RemoteModel):
    sdk = "anthropic"
    client_class = "Anthropic"
    extra = "anthropic"
    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "ANTHROPIC_API_KEY",
        temperature: float | None = 0.0,
        api_version: str | None = None,
        max_tokens: int = 4096,
        structured: bool = True,
        timeout: float = 120.0,
        max_concurrency: int = 8,
        tokens_per_minute: int | None = None,
        revision: str | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        min_tokens_per_s: float = MIN_TOKENS_PER_S,
    ):
        """
        Args:
            tokens_per_minute: the endpoint's token budget for the whole run (all workers); null: none.
            revision: the weights meant (a dated snapshot, a commit); part of the cache key.
            max_reply_bytes: the most one reply body may hold (16 MB); past it the call fails, unretried.
            temperature: wanted temperature; sent only when `api_version` accepts sampling parameters.
            api_version: the `anthropic-version` header; `None` keeps the SDK's (which refuses sampling).
            structured: pass a prompt's schema as a forced tool; `False` relies on the prompt alone.
            min_tokens_per_s: the slowest writing waited for: a call's deadline is
                `timeout + max_tokens / min_tokens_per_s`.
        """
        super().__init__(
            model,
            base_url=base_url,
            api_key_env=api_key_env,
            timeout=timeout,
            max_concurrency=max_concurrency,
            max_tokens=max_tokens,
            tokens_per_minute=tokens_per_minute,
            revision=revision,
            max_reply_bytes=max_reply_bytes,
            min_tokens_per_s=min_tokens_per_s,
        )
        self.temperature = temperature
        self.api_version = api_version
        self.structured = structured

    @property
    def temperature_sent(self) -> float | None:
        return self.temperature if self.api_version in SAMPLING_API_VERSIONS else None

    def sampling(self) -> Mapping[str, Any]:
        return {
            "temperature_sent": self.temperature_sent,
            "temperature_wanted": self.temperature,
            "api_version": self.api_version,
            "structured": "forced_tool" if self.structured else "prompt",
        }

    def client_settings(self) -> tuple[Any, ...]:
        return (*super().client_settings(), self.api_version)

    def client_options(self) -> Mapping[str, Any]:
        return {"default_headers": {"anthropic-version": self.api_version} if self.api_version else None}

    def request(self, client: Any, prompt: Prompt) -> Reply:
        system = "\n\n".join(m.content for m in prompt.messages if m.role == "system")
        options: dict[str, Any] = {}
        if system:
            options["system"] = system
        if self.temperature_sent is not None:
            options["extra_body"] = {"temperature": self.temperature_sent}
        use_tool = self.structured and prompt.schema is not None
        if use_tool:
            options["tools"] = [
                {
                    "name": REPLY_TOOL,
                    "description": REPLY_TOOL_DESCRIPTION,
                    "input_schema": dict(prompt.schema),
                }
            ]
            options["tool_choice"] = {"type": "tool", "name": REPLY_TOOL}
        message = client.messages.create(
            model=self.model,
            messages=[{"role": m.role, "content": m.content} for m in prompt.messages if m.role != "system"],
            max_tokens=prompt.max_tokens or self.max_tokens,
            timeout=self.call_seconds(prompt.max_tokens),  # the reply comes whole: one read may take it all
            **options,
        )
        return Reply(
            text=self.reply_text(message.content, use_tool),
            usage=self.usage(message.usage),
            served=served_revision(getattr(message, "model", None)),
        )

    @staticmethod
    def reply_text(blocks: Any, use_tool: bool) -> str:
        if use_tool:
            for block in blocks:
                if block.type == "tool_use" and block.name == REPLY_TOOL:
                    return json.dumps(block.input, ensure_ascii=False)
        texts = [block.text for block in blocks if block.type == "text"]
        if not texts:
            raise ValueError("the message has neither the reply tool call nor text")
        return "".join(texts)

    @staticmethod
    def usage(usage: Any) -> Usage:
        """Prompt-cache reads and writes are input tokens too (the API reports them apart)."""
        read = token_count(usage.cache_read_input_tokens, "usage.cache_read_input_tokens")
        written = token_count(usage.cache_creation_input_tokens, "usage.cache_creation_input_tokens")
        return Usage(
            token_count(usage.input_tokens, "usage.input_tokens") + read + written,
            token_count(usage.output_tokens, "usage.output_tokens"),
            1,
            cached_input_tokens=read,
            cache_write_tokens=written,
        )
