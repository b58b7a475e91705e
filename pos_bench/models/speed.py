"""How fast a served model writes, measured with one streamed request, and the warning when a method's longest
replies would take minutes at that speed (issue 44: a laptop's 7–8B model writes 10–20 tokens a second, and a
4,096-token belief reply then takes up to seven minutes).

One request asks for a long count with `max_tokens` = `PROBE_TOKENS`, streamed: the first chunk with text gives
the time to first token, the chunks after it the writing speed. `python -m pos_bench.estimate --measure-speed`
and the pre-flight check (`runner.measure_speed=true`) use it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pos_bench.models.deadline import deadline

PROBE_TOKENS = 64
PROBE_PROMPT = "Count from 1 to 500 in words, separated by commas. Write nothing else."
SLOW_REPLY_S = 60.0
"""A reply that may take longer than this at the measured speed is warned about."""


@dataclass(frozen=True)
class Speed:
    first_token_s: float
    tokens_per_s: float
    tokens: int
    """Tokens the probe's reply had (the server's usage count, else the chunks with text)."""

    def reply_seconds(self, max_tokens: int) -> float:
        """How long a reply of `max_tokens` tokens takes at this speed, its first token included."""
        return self.first_token_s + max_tokens / self.tokens_per_s


def measure(model: Any, *, tokens: int = PROBE_TOKENS, seconds: float = 120.0) -> Speed:
    """The writing speed of an `OpenAIModel`'s server (its client, URL and model id), within `seconds`."""
    _, client = model.client
    body: dict[str, Any] = {
        "model": model.model,
        "messages": [{"role": "user", "content": PROBE_PROMPT}],
        model.token_limit_field: tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if model.temperature is not None:
        body["temperature"] = model.temperature
    arrivals: list[float] = []
    counted = 0
    started = time.monotonic()
    with (
        deadline(seconds),
        client.chat.completions.create(**body, extra_body=model.extra_body or None) as chunks,
    ):
        for chunk in chunks:
            if chunk.usage is not None:
                counted = chunk.usage.completion_tokens or 0
            if any(choice.delta.content for choice in chunk.choices or ()):
                arrivals.append(time.monotonic() - started)
    return speed_of(arrivals, counted)


def speed_of(arrivals: list[float], counted: int) -> Speed:
    """The speed from the arrival times of the chunks with text and the server's token count (0: unknown)."""
    if not arrivals:
        raise ValueError("the server streamed no text for the speed probe")
    tokens = counted or len(arrivals)
    span = arrivals[-1] - arrivals[0]
    if tokens < 2 or span <= 0:  # one chunk: the whole reply arrived at once, its speed is unknown
        return Speed(arrivals[0], float("inf"), tokens)
    # the first chunk's token is in the time to first token; the others were written over the span
    return Speed(arrivals[0], (tokens - 1) / span, tokens)


def slow_replies(
    speed: Speed, max_tokens: Mapping[str, int], limit: float = SLOW_REPLY_S, *, model: Any = None
) -> list[str]:
    """One line per setting (role or config path) whose longest reply would take more than `limit` seconds,
    with what to do about it for `model` (an `OpenAIModel`; without one, the general advice)."""
    return [
        f"{role}: a reply of up to {tokens:,} tokens takes up to {speed.reply_seconds(tokens) / 60:.1f} min "
        f"at the measured {speed.tokens_per_s:.1f} tokens/s (first token {speed.first_token_s:.1f} s); "
        f"{advice(speed, tokens, model)}"
        for role, tokens in max_tokens.items()
        if speed.reply_seconds(tokens) > limit
    ]


def advice(speed: Speed, tokens: int, model: Any = None) -> str:
    """What a reply of `tokens` tokens at `speed` meets under `model`'s settings. Whole or streamed, a call
    ends at its overall deadline, `model.timeout + tokens / model.min_tokens_per_s`: a reply written more
    slowly never finishes. Within it, a streamed reply sees a dead server after `model.timeout` of silence, one
    read whole only at that deadline (under `model.stream: auto`, whichever `OpenAIModel.streams` picks)."""
    if model is None:
        return "set model.stream=true (model=vllm has it) so model.timeout bounds only silences, or lower it"
    deadline = model.call_seconds(tokens)
    if speed.reply_seconds(tokens) > deadline:
        return (
            f"that is past the call's overall deadline of {deadline:.0f} s (model.timeout "
            f"{model.timeout:g} s + {tokens:,} tokens at model.min_tokens_per_s {model.min_tokens_per_s:g}): "
            f"set model.min_tokens_per_s below {speed.tokens_per_s:.1f}, or lower it"
        )
    if model.streams(tokens):
        return "streamed, so it finishes; lower it if episodes must be quicker"
    return (
        f"read whole, it finishes within its overall deadline of {deadline:.0f} s, but a server that stops "
        "is seen only then; set model.stream=true so model.timeout bounds only silences, or lower it"
    )


def reply_limits(cfg: Mapping[str, Any]) -> dict[str, int]:
    """The longest reply each part of a run may ask for: `model.max_tokens`, and every `…max_tokens` setting
    of the method (PoS's `belief_max_tokens`, its sentinels'…), by the config path that sets it."""
    found = {}
    if isinstance((cfg.get("model") or {}).get("max_tokens"), int):
        found["model.max_tokens"] = int(cfg["model"]["max_tokens"])

    def walk(node: Any, path: str) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, int) and not isinstance(node, bool) and path.endswith("max_tokens"):
            found[path] = node

    walk(cfg.get("method") or {}, "method")
    return found


def speed_warnings(cfg: Mapping[str, Any], seconds: float = 120.0) -> tuple[Speed | None, list[str]]:
    """The configured model's measured speed and the slow-reply warnings for this run's reply limits; no speed
    (and one line saying why) for a model that is not an OpenAI-compatible server."""
    from pos_bench.build import build

    model = build(cfg["model"])
    if not hasattr(model, "token_limit_field"):
        return None, [f"speed not measured: {type(model).__name__} is not an OpenAI-compatible server"]
    speed = measure(model, seconds=seconds)
    limits = {"model.max_tokens": int(model.max_tokens), **reply_limits(cfg)}
    return speed, slow_replies(speed, limits, model=model)
