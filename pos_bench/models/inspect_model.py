"""`model=inspect model.name=<provider/model>`: a pos_bench model served by inspect_ai's model API, so every
provider inspect supports (Anthropic, Google, Bedrock, Azure, Mistral, Groq, vLLM, Ollama, …) plays in
`python -m pos_bench`, behind the same budget, retry policy, response cache, replay and failure ledger as the
SDK providers (`models/roles.py` composes them around any model).

Each call is one `Model.generate` of inspect: the prompt's messages converted by `inspect_bridge`, the role as
inspect's model role (a role bound with `--model-role` inside `inspect eval` gets its own model), the usage
back with its cached tokens. inspect's own retries are off unless `max_retries` says otherwise: pos_bench's
policy retries what this class marks transient (HTTP 408/409/425/429 and 5xx, a lost connection, a timeout).

Inside an inspect sample (`pos_bench.inspect` tasks), `name` may be left null: the sample's model is used, with
the command line's base URL, model arguments and generation settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from pos_bench.models.endpoint import public_url
from pos_bench.models.retry import RequestRefused, TransientError
from pos_bench.models.schema_bounds import limited_prompt, reply_limits_of
from pos_bench.types import Prompt, Reply

TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
REFUSED_STATUS = frozenset({400, 413, 422})
TRANSIENT_NAMES = ("timeout", "connect", "connection", "network", "protocolerror", "readerror")
"""Words in an exception's class name that mark a failure of the transport, worth another attempt."""


def status_of(error: BaseException) -> int | None:
    """The HTTP status an SDK error carries (`status_code` or `status`), looked for down its cause chain."""
    seen: BaseException | None = error
    for _ in range(10):
        if seen is None:
            return None
        for name in ("status_code", "status"):
            value = getattr(seen, name, None)
            if isinstance(value, int) and 100 <= value < 600:
                return value
        seen = seen.__cause__ or seen.__context__
    return None


def classified(error: Exception, where: str) -> Exception:
    """An inspect provider's failure as the retry policy reads it: transient, refused, or as it is."""
    status = status_of(error)
    text = f"{where}: {type(error).__name__}: {error}"
    if status is not None and (status in TRANSIENT_STATUS or status >= 500):
        return TransientError(text, rate_limited=status == 429)
    if status is not None and status in REFUSED_STATUS:
        return RequestRefused(text)
    names = " ".join(type(e).__name__.lower() for e in (error, error.__cause__, error.__context__) if e)
    if isinstance(error, TimeoutError) or any(word in names for word in TRANSIENT_NAMES):
        return TransientError(text)
    return error


def inline_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema in the subset inspect's `JSONSchema` holds: `$ref`s replaced by their `$defs`
    entry and `const` written as a one-value `enum` (keys it has no field for are dropped by inspect)."""
    defs = dict(schema.get("$defs") or {})

    def inline(node: Any, depth: int = 0) -> Any:
        if depth > 50:
            raise ValueError("the reply schema nests deeper than 50 levels (a recursive $ref?)")
        if isinstance(node, Mapping):
            if "$ref" in node:
                return inline(defs[str(node["$ref"]).rsplit("/", 1)[-1]], depth + 1)
            out = {k: inline(v, depth + 1) for k, v in node.items() if k != "$defs"}
            if "const" in out:
                out["enum"] = [out.pop("const")]
            return out
        if isinstance(node, list):
            return [inline(v, depth + 1) for v in node]
        return node

    return inline(schema)


class InspectModel:
    """A pos_bench model whose calls are inspect_ai `Model.generate` calls.

    Args:
        name: inspect's `provider/model` (e.g. `anthropic/claude-sonnet-4-0`, `openai-api/local/smollm2`); null
            inside an inspect sample: the sample's model.
        base_url: the provider's endpoint, when not its default (or its `<PROVIDER>_BASE_URL` variable).
        model_args: provider-specific arguments (inspect's `-M`).
        temperature: sent as is; null leaves it to the provider (or to inspect's `--temperature`).
        max_tokens: reply budget of a prompt that sets none.
        response_mode: `json_schema` sends a prompt's reply schema as inspect's `response_schema` (in the
            subset inspect carries, see `inline_schema`); `none` sends none. Replies are validated by pos_bench
            either way.
        max_retries: inspect's own retries of a call; 0 (default) leaves retrying to pos_bench's policy; null
            leaves it to inspect's settings (inside `inspect eval`).
        timeout: seconds one attempt may take (inspect's `attempt_timeout`); null: the provider's.
        max_connections: inspect's bound on calls in flight to this model; null: the provider's default.
        revision: the weights meant (a dated snapshot, a commit); part of the cache key.
        reply_limits: role, reply type or `default` → caps put into the reply schema, as `model=smollm2_server`
            does (`models/schema_bounds.py`). inspect's schema type cannot carry list sizes, so a capped schema
            goes whole as the OpenAI `response_format` in the request body (`extra_body`): for OpenAI-compatible
            providers (`openai`, `openai-api/…`, `vllm`, `sglang`) only.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        base_url: str | None = None,
        model_args: Mapping[str, Any] | None = None,
        temperature: float | None = 0.0,
        max_tokens: int = 4096,
        response_mode: str = "json_schema",
        max_retries: int | None = 0,
        timeout: int | None = 120,
        max_connections: int | None = None,
        revision: str | None = None,
        reply_limits: Mapping[str, Any] | None = None,
    ):
        if response_mode not in ("json_schema", "none"):
            raise ValueError(f"model.response_mode must be json_schema or none, got {response_mode!r}")
        if max_tokens < 1:
            raise ValueError(f"model.max_tokens must be ≥ 1, got {max_tokens}")
        self.model = name
        self.name = name or "inspect"
        self.base_url = base_url
        self.model_args = dict(model_args or {})
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.response_mode = response_mode
        self.max_retries = max_retries
        self.timeout = timeout
        self.max_connections = max_connections
        self.revision = revision
        self.reply_limits = reply_limits_of(reply_limits)
        if name is not None:
            self.provider_model()  # an unknown provider or a missing key stops the run at its pre-flight

    def provider_model(self) -> Any:
        """inspect's model for `name` (memoized by inspect): made here so that an unknown provider, a missing
        package or an unset key variable is a one-line error before the first episode."""
        import re

        from inspect_ai.model import get_model

        try:
            return get_model(self.model, base_url=self.base_url, **self.model_args)
        except Exception as error:
            text = re.sub(r"\[/?[a-z ]+\]", "", str(error)).replace("ERROR: ", "").strip()
            raise ValueError(f"inspect cannot make model {self.model!r}: {' '.join(text.split())}") from error

    def describe(self) -> Mapping[str, Any]:
        return {
            "provider": "inspect",
            "model": self.model,
            "revision": self.revision,
            "temperature_sent": self.temperature,
            "response_mode": self.response_mode,
            "max_tokens": self.max_tokens,
            "base_url": public_url(self.base_url),
            "model_args": dict(self.model_args),
            **(
                {"reply_limits": {k: asdict(v) for k, v in self.reply_limits.items()}}
                if self.reply_limits
                else {}
            ),
        }

    def inspect_model(self, role: str) -> Any:
        """inspect's model for `role`: the one bound to it with `--model-role`, else this model with the role."""
        from inspect_ai.model import get_model
        from inspect_ai.model._model import active_model

        active = active_model()
        if active is not None and (self.model is None or self.model == str(active)):
            base = active
        elif self.model is None:
            raise ValueError("model=inspect needs model.name (inspect's provider/model) outside inspect eval")
        else:
            base = self.provider_model()
        return get_model(role=role, default=base)

    def config(self, prompt: Prompt) -> Any:
        from inspect_ai.model import GenerateConfig, ResponseSchema
        from inspect_ai.util import JSONSchema

        settings: dict[str, Any] = {"max_tokens": prompt.max_tokens or self.max_tokens}
        for key, value in (
            ("temperature", self.temperature),
            ("max_retries", self.max_retries),
            ("attempt_timeout", self.timeout),
            ("max_connections", self.max_connections),
        ):
            if value is not None:
                settings[key] = value
        if prompt.trial:  # trial 0 sends none, as the SDK providers do
            settings["seed"] = prompt.trial
        if prompt.schema is not None and self.response_mode == "json_schema" and self.reply_limits:
            reply = {"name": "reply", "schema": dict(prompt.schema), "strict": False}  # capped in `generate`
            settings["extra_body"] = {"response_format": {"type": "json_schema", "json_schema": reply}}
        elif prompt.schema is not None and self.response_mode == "json_schema":
            schema = JSONSchema.model_validate(inline_schema(prompt.schema))
            settings["response_schema"] = ResponseSchema(name="reply", json_schema=schema)
        return GenerateConfig(**settings)

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        from pos_bench.models.inspect_bridge import run_coroutine

        limited = limited_prompt(prompt, self.reply_limits, role, self.max_tokens)
        return run_coroutine(lambda: self.agenerate(limited, role=role))

    async def agenerate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        """The call itself, on an event loop."""
        from pos_bench.models.inspect_bridge import to_inspect, to_reply

        model = self.inspect_model(role)
        try:
            output = await model.generate(to_inspect(prompt.messages), config=self.config(prompt))
        except Exception as error:
            raise classified(error, f"inspect {model}") from error
        if output.error:
            raise TransientError(f"inspect {model}: {output.error}")
        if output.stop_reason == "model_length":
            # what inspect's providers make of a prompt past the context window (an HTTP 400 turned into an
            # output holding the server's message): the ledger's `overflow`
            raise RequestRefused(
                f"inspect {model}: the prompt exceeds the model's context window ({output.completion[:300]})"
            )
        if output.stop_reason == "content_filter":
            raise RequestRefused(
                f"inspect {model}: the provider refused the request ({output.completion[:300]})"
            )
        return to_reply(output)
