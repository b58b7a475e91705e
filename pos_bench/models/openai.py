"""Any OpenAI-compatible chat-completions server through the official `openai` SDK: OpenAI itself, vLLM,
SGLang, Ollama, the llama.cpp server, and the paper backbones' endpoints (DashScope, Moonshot, Zhipu).

A prompt's JSON schema is passed natively as `response_format` (`json_schema`, which vLLM, SGLang, Ollama
and llama.cpp turn into a grammar), or as the plain `json_object` mode for endpoints that only offer that.
The episode's trial (from 1 on) is sent as `seed`. The reply is validated by the caller (`pos_bench.structured`,
`pos_bench.parse`), never here.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict
from typing import Any, Literal

from pos_bench.models.endpoint import (
    MAX_REPLY_BYTES,
    MIN_TOKENS_PER_S,
    RemoteModel,
    served_revision,
    token_count,
)
from pos_bench.models.schema_bounds import (
    SCHEMA_BOUNDS,
    ReplyLimits,
    limited_prompt,
    reply_limits_of,
)
from pos_bench.types import Prompt, Reply, Usage

ResponseMode = Literal["json_schema", "json_object", "none"]
StreamMode = bool | Literal["auto"]

WORKER_IMPORTS = ("openai",)
"""Imported on first use; a run's worker processes have it imported before they start
(`runner/pool/forkserver.py`)."""
LINE_END = re.compile(r"\r\n|\r|\n")


class OpenAIModel(RemoteModel):
    sdk = "openai"
    client_class = "OpenAI"
    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        temperature: float | None = 0.0,
        max_tokens: int = 4096,
        response_mode: ResponseMode = "json_schema",
        strict_schema: bool = False,
        extra_body: Mapping[str, Any] | None = None,
        token_limit_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        timeout: float = 120.0,
        max_concurrency: int = 8,
        tokens_per_minute: int | None = None,
        revision: str | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        stream: StreamMode = False,
        min_tokens_per_s: float = MIN_TOKENS_PER_S,
        reply_limits: Mapping[str, ReplyLimits | Mapping[str, int]] | None = None,
        smoke: bool = False,
    ):
        """
        Args:
            tokens_per_minute: the endpoint's token budget for the whole run (all workers); null: none.
            revision: the weights meant (a dated snapshot, a commit); part of the cache key.
            max_reply_bytes: the most one reply body may hold (16 MB); past it the call fails, unretried.
            temperature: sent as is; `None` leaves it to the server (reasoning models refuse it).
            response_mode: how a prompt's schema is sent; `none` sends no `response_format` at all.
            strict_schema: OpenAI's strict structured outputs, which need every property required and
                `additionalProperties: false`; open-weight servers constrain decoding either way.
            extra_body: extra request fields a server understands, e.g. switching provider thinking off.
            token_limit_field: OpenAI's current models take `max_completion_tokens`; most other servers
                only know `max_tokens`.
            stream: read the reply as server-sent events as it is written; `timeout` then bounds each
                silence (before the first chunk, between two), so a slow server that keeps writing finishes.
                `auto` streams a request only when its longest reply, written at `min_tokens_per_s`, would take
                longer than `timeout` (`streams`); a shorter one is read whole, which costs the client less CPU.
            min_tokens_per_s: the slowest decode waited for; a call's overall deadline is
                `timeout + max_tokens / min_tokens_per_s` (streamed or not).
            reply_limits: role, reply type (a schema's title) or `default` → caps (`max_tokens`, `items`,
                `chars`, `lists`) put into the schema sent (`models/schema_bounds.py`), for a small model behind
                a server that turns schemas into grammars (llama.cpp's): without them it can fill a string or
                a list until its token budget runs out and cut the JSON short. Part of the model's identity.
            smoke: the server serves a smoke-test model (the embedded SmolLM2, `model=smollm2_server`): its runs
                are labelled `smoke`, as the embedded model's are.
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
        if response_mode not in ("json_schema", "json_object", "none"):
            raise ValueError(
                f"model.response_mode must be json_schema, json_object or none, got {response_mode!r}"
            )
        self.temperature = temperature
        self.response_mode = response_mode
        self.strict_schema = strict_schema
        self.extra_body = dict(extra_body or {})
        self.token_limit_field = token_limit_field
        if stream not in (True, False, "auto"):
            raise ValueError(f"model.stream must be true, false or auto, got {stream!r}")
        self.stream = stream
        self.reply_limits = reply_limits_of(reply_limits)
        self.smoke = smoke

    def describe(self) -> Mapping[str, Any]:
        limits = {"reply_limits": {key: asdict(value) for key, value in self.reply_limits.items()}}
        bounds = {**limits, "schema_bounds": SCHEMA_BOUNDS} if self.reply_limits else {}
        smoke = {"smoke": True} if self.smoke else {}
        return {**super().describe(), "stream": self.stream, **bounds, **smoke}

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        return super().generate(limited_prompt(prompt, self.reply_limits, role, self.max_tokens), role=role)

    def streams(self, max_tokens: int | None) -> bool:
        """Whether a request for up to `max_tokens` tokens is streamed. Under `auto`, only when writing them at
        the slowest speed waited for takes longer than `timeout`: a reply read whole is waited for up to its
        overall deadline, `timeout + max_tokens / min_tokens_per_s`, so a dead server is seen after at most twice
        `timeout` for a shorter one, and after many times `timeout` for a longer one, which streaming cuts to
        `timeout` of silence. Reading a reply whole costs less client CPU per call (docs/fullsize.md,
        "Slow servers")."""
        if self.stream == "auto":
            return self.reply_seconds(max_tokens) > self.timeout
        return self.stream

    def sampling(self) -> Mapping[str, Any]:
        return {
            "temperature_sent": self.temperature,
            "response_mode": self.response_mode,
            "strict_schema": self.strict_schema,
            "extra_body": self.extra_body,
        }

    def response_format(self, schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if schema is None or self.response_mode == "none":
            return None
        if self.response_mode == "json_object":
            return {"type": "json_object"}
        return {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": dict(schema), "strict": self.strict_schema},
        }

    def request(self, client: Any, prompt: Prompt) -> Reply:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in prompt.messages],
            self.token_limit_field: prompt.max_tokens or self.max_tokens,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if prompt.trial:  # trial 0 sends none, so a one-trial run's requests are the ones it always sent
            body["seed"] = prompt.trial
        response_format = self.response_format(prompt.schema)
        if response_format is not None:
            body["response_format"] = response_format
        body.update(self.extra_body)
        stream = self.streams(prompt.max_tokens)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        # The body goes out as built, straight onto the SDK client's connection (`direct.py`): the typed
        # `chat.completions.create` walks every message and schema node and builds typed objects of the reply, and
        # even the SDK's plain `post` costs ~0.4 ms of CPU more per call. The reply, whole or streamed, comes
        # over the wire without httpx2's objects (`post_whole`), read to its end, so the connection is kept (a
        # stream left at `[DONE]` would close it, and the next call would open a new one: a TCP, and on a remote
        # endpoint a TLS, handshake per call). Not streamed, one read may take the call's overall deadline;
        # streamed, each read is bounded by `timeout` and the whole by the overall deadline (`RemoteModel.generate`).
        from pos_bench.models.direct import post_whole  # httpx2, loaded with the SDK at the first call

        module = importlib.import_module(self.sdk)
        seconds = self.timeout if stream else self.call_seconds(prompt.max_tokens)
        data = post_whole(module, client, "chat/completions", body, seconds, events=stream)
        return completion_reply(assembled(server_events(event_lines(data))) if stream else json.loads(data))


def event_lines(body: bytes) -> list[str]:
    r"""The lines of a server-sent event stream (`\r\n`, `\n` or `\r` ends one, as the standard allows; JSON
    never holds a raw line break, so one does not split an event)."""
    return LINE_END.split(body.decode("utf-8", "replace"))


def server_events(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a server-sent event stream's `data:` lines, up to `[DONE]`; an `error` event (a server
    failing mid-stream) is raised as `ValueError`, a malformed response."""
    for line in lines:
        if not line.startswith("data:"):
            continue  # blank separators, comments (`: ping`), `event:` names
        data = line[5:].strip()
        if data == "[DONE]":
            return
        event = json.loads(data)
        if not isinstance(event, dict):
            raise ValueError(f"a streamed event is not an object: {data[:200]}")  # noqa: TRY004 - malformed, retried
        if event.get("error"):
            raise ValueError(f"the server failed mid-stream: {str(event['error'])[:300]}")
        yield event


def assembled(chunks: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The chat-completion body that streamed `chunks` (`chat.completion.chunk` objects) add up to: the first
    choice's text, its finish reason, the usage of the closing chunk, the model and fingerprint."""
    parts: list[str] = []
    out: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": None}}]}
    choice = out["choices"][0]
    for chunk in chunks:
        for key in ("model", "system_fingerprint", "usage"):
            if chunk.get(key):
                out[key] = chunk[key]
        for part in chunk.get("choices") or ():
            if part.get("index", 0) != 0:
                continue
            text = (part.get("delta") or {}).get("content")
            if isinstance(text, str):
                parts.append(text)
            if part.get("finish_reason"):
                choice["finish_reason"] = part["finish_reason"]
    if parts:
        choice["message"]["content"] = "".join(parts)
    return out


def completion_reply(completion: Any) -> Reply:
    """The text and token counts of a chat-completions response body; `ValueError` when it has no text."""
    try:
        choice = completion["choices"][0]
        text = choice["message"]["content"]
    except (KeyError, IndexError, TypeError) as error:
        raise ValueError(
            f"the completion has no choices[0].message.content ({type(error).__name__}: {error})"
        ) from error
    if not isinstance(text, str):
        raise ValueError(  # noqa: TRY004 - a malformed response, retried like any other
            f"the completion has no text (finish_reason={choice.get('finish_reason')})"
        )
    usage = completion.get("usage") if isinstance(completion.get("usage"), dict) else {}
    # the prefix-cache hit the server reports (OpenAI, vLLM, SGLang; absent where the server has none)
    details = (
        usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
    )
    return Reply(
        text=text,
        usage=Usage(
            token_count(usage.get("prompt_tokens"), "usage.prompt_tokens"),
            token_count(usage.get("completion_tokens"), "usage.completion_tokens"),
            1,
            cached_input_tokens=token_count(
                details.get("cached_tokens"), "usage.prompt_tokens_details.cached_tokens"
            ),
        ),
        served=served_revision(completion.get("model"), completion.get("system_fingerprint")),
    )
