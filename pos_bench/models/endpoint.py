"""What the remote providers share: a key read from a named environment variable, SDK clients built at the
first call and kept per thread, and the mapping of SDK failures onto the retry policy.

The `openai` and `anthropic` SDKs are generated from the same template, so both raise `APIStatusError`
(with the HTTP response) and `APIConnectionError` (timeouts included); `RemoteModel` classifies them once.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import math
import os
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pos_bench.extras import MissingExtra, install_hint
from pos_bench.models.deadline import deadline
from pos_bench.models.retry import RequestRefused, TransientError, parse_retry_after
from pos_bench.redact import escaped, is_variable_name, scrub_http_logs
from pos_bench.types import Prompt, Reply


@dataclass(frozen=True)
class ClientEntry:
    module: Any
    client: Any


PLACEHOLDER_KEY = "not-needed"
"""Sent to local servers (vLLM, Ollama, …) that take no key; the SDKs refuse to build a client without one."""

TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
"""Besides every 5xx: timeout, conflict, too early and rate-limited answers are worth another attempt."""

REFUSED_STATUS = frozenset({400, 413, 422})
"""Answers about the request itself (too long, malformed): the same request meets them again."""

_THREAD = threading.local()
"""Each thread's SDK clients, one per endpoint setting: a connection kept open, never a source of answers.

One client per thread rather than one per process: a thread has at most one request in flight, so its
transport keeps one connection (`transport.py`, not safe to share between threads), where the pool of a client
shared by 64 threads (httpcore's, before) scanned all 64 of its connections and polled each idle one for every
request, ~2 ms of CPU per call under the interpreter lock. The endpoint budget is a run object (`budget.py`),
not thread or module state."""


_TLS_LOCK = threading.Lock()


def shared_tls() -> ssl.SSLContext:
    """One TLS context (CA bundle, `SSL_CERT_FILE`/`SSL_CERT_DIR`) for every client of the process: loading
    the CA bundle is most of the ~40 ms an SDK client costs to build. Built under a lock: the threads of a
    run all make their first call at once."""
    with _TLS_LOCK:
        return _tls_context()


def tls_for(base_url: str | None) -> ssl.SSLContext:
    """The TLS context for a client of `base_url`: `shared_tls()`, except for a plain-http endpoint (a local
    server), which never shakes hands. It gets a context that trusts no certificate, so a redirect to https
    fails verification rather than skipping it, without loading the CA bundle."""
    if base_url and urlsplit(base_url).scheme == "http":
        return _trusts_nothing()
    return shared_tls()


@functools.cache
def _trusts_nothing() -> ssl.SSLContext:
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies certificates and host names, with no CA


@functools.cache
def _tls_context() -> ssl.SSLContext:
    try:
        httpx = importlib.import_module("httpx2")
    except ImportError:  # SDKs before their move to httpx2
        httpx = importlib.import_module("httpx")
    return httpx.create_ssl_context()


def public_url(url: str | None) -> str | None:
    """`url` without credentials or query string, safe to write into run metadata."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def served_revision(model: Any, fingerprint: Any = None) -> str | None:
    """What a response says of the weights that answered: the served model id (an alias resolves to its
    dated snapshot there) and the backend's fingerprint, when the server sends them."""
    parts = [str(p) for p in (model, fingerprint) if p]
    return " ".join(parts) or None


def read_api_key(variable: str | None, provider: str, model: str) -> str:
    """The API key from the environment variable the config names (configs never hold keys)."""
    if variable is None:
        return PLACEHOLDER_KEY
    key = os.environ.get(variable, "").strip()
    if not key:
        raise RuntimeError(
            f"{provider} model {model!r} needs an API key in the environment variable {variable}, which is "
            f"unset or empty. Export it (export {variable}=...) or point model.api_key_env at another variable; "
            "use model.api_key_env=null for a local server that takes no key."
        )
    return key


@functools.lru_cache(maxsize=16)
def key_digest(key: str) -> str:
    """What tells one key from another among a thread's clients, without keeping the key itself there."""
    return hashlib.sha256(key.encode()).hexdigest()


MIN_TOKENS_PER_S = 5.0
"""The slowest decode a call waits for (`model.min_tokens_per_s`): a call's overall deadline is
`model.timeout + max_tokens / min_tokens_per_s`, so a reply of 4,096 tokens may take 120 s + 819 s."""

MAX_REPLY_BYTES = 16 * 1024 * 1024
"""The default bound on one reply body (`model.max_reply_bytes`): far above any real completion or model list."""


MAX_TOKEN_COUNT = 10**12
"""No call reads or writes this many tokens; a larger count (1e300 is a whole number) would overflow the tables."""


def token_count(value: Any, name: str) -> int:
    """A token count of a server's `usage`, as a whole number ≥ 0 (absent: 0). Anything else (negative,
    fractional, non-finite, not a number) makes the response malformed (`ValueError`), never a count that would
    reach the tables."""
    if value is None:
        return 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        raise ValueError(f"malformed usage: {name} is {value!r}, not a count of tokens")
    return value


class ReplyRefused(RuntimeError):
    """A reply broke a bound that holds for every call: a redirect to another origin, or a body past
    `model.max_reply_bytes`. The same server would do it again, so it is not retried; the episode is an error."""


def streamed_failure(error: BaseException) -> bool | None:
    """For a transport error raised while a streamed reply was read: True for a timeout, False for another
    network or protocol failure; None for anything else (a bound the transport refused included)."""
    import httpx2

    if broken_bound(error) is not None:
        return None
    if isinstance(error, httpx2.TimeoutException):
        return True
    if isinstance(error, httpx2.TransportError):
        return False
    return None


def broken_bound(error: BaseException) -> BaseException | None:
    """The transport's `CrossOriginRedirect` or `ReplyTooLarge` that `error` was raised from, if any."""
    from pos_bench.models.transport import CrossOriginRedirect, ReplyTooLarge

    seen: BaseException | None = error
    for _ in range(10):
        if seen is None or isinstance(seen, CrossOriginRedirect | ReplyTooLarge):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class RemoteModel:
    """Base of the providers that call an HTTP API through an official SDK.

    A subclass names its SDK module (`sdk`) and client class (`client_class`, plus any `client_options`) and
    turns one prompt into one request and its response into a `Reply` (`request`). This class adds the lazy client and the error
    classification; the endpoint budget, retries and caching are wrappers composed in `build_model`.

    `revision` names the weights a run means (a dated snapshot, a commit) and is part of the cache key;
    `describe()` stays offline (no call to the server), so a server's own report cannot be.
    """

    sdk: str
    client_class: str
    """The SDK's client class, e.g. `OpenAI`."""
    extra: str = ""
    """The optional extra that installs `sdk` (empty when it is a core dependency)."""
    provider: str

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key_env: str | None,
        timeout: float,
        max_concurrency: int,
        max_tokens: int,
        tokens_per_minute: int | None = None,
        revision: str | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        min_tokens_per_s: float = MIN_TOKENS_PER_S,
    ):
        if not 0 < min_tokens_per_s < math.inf:
            raise ValueError(f"model.min_tokens_per_s must be > 0, got {min_tokens_per_s}")
        if not 0 < timeout < math.inf:
            raise ValueError(f"model.timeout must be > 0 seconds, got {timeout}")
        if max_reply_bytes < 1024:
            raise ValueError(f"model.max_reply_bytes must be ≥ 1024 bytes, got {max_reply_bytes}")
        if timeout <= 0:
            raise ValueError(f"model.timeout must be > 0 seconds, got {timeout}")
        if max_concurrency < 1:
            raise ValueError(f"model.max_concurrency must be ≥ 1, got {max_concurrency}")
        if api_key_env is not None and not is_variable_name(api_key_env):
            raise ValueError(  # never echoed: it is often the key itself, pasted by mistake
                "model.api_key_env must name the environment variable that holds the key, not hold the key"
            )
        self.model = model
        self.name = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_concurrency = max_concurrency
        self.max_tokens = max_tokens
        self.tokens_per_minute = tokens_per_minute
        self.revision = revision
        self.max_reply_bytes = max_reply_bytes
        self.min_tokens_per_s = min_tokens_per_s

    def reply_seconds(self, max_tokens: int | None = None) -> float:
        """How long a reply of `max_tokens` tokens (the model's own by default) may take to be written at the
        slowest speed waited for (`min_tokens_per_s`)."""
        return (max_tokens or self.max_tokens) / self.min_tokens_per_s

    def call_seconds(self, max_tokens: int | None = None) -> float:
        """The overall deadline of one call that may write `max_tokens` tokens: `timeout` (the wait for the
        first token) plus `reply_seconds`."""
        return self.timeout + self.reply_seconds(max_tokens)

    def client_options(self) -> Mapping[str, Any]:
        """Further arguments of the SDK client (headers…)."""
        return {}

    def make_client(self, module: Any, api_key: str, http_client: Any) -> Any:
        """The SDK client on `http_client`: no retries of its own (the run's policy retries), our timeout."""
        return getattr(module, self.client_class)(
            api_key=api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,
            http_client=http_client,
            **self.client_options(),
        )

    def request(self, client: Any, prompt: Prompt) -> Reply:
        """Send one request for `prompt` and read its reply; raise `ValueError` on a malformed response."""
        raise NotImplementedError

    def sampling(self) -> Mapping[str, Any]:
        """The identity-bearing request settings (temperature sent, response mode…) for `describe`."""
        return {}

    def describe(self) -> Mapping[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "revision": self.revision,
            **self.sampling(),
            "max_tokens": self.max_tokens,
            "base_url": public_url(self.base_url),
            "api_key_env": self.api_key_env,
            "timeout": self.timeout,
            "min_tokens_per_s": self.min_tokens_per_s,
            "max_concurrency": self.max_concurrency,
            "tokens_per_minute": self.tokens_per_minute,
        }

    def client_settings(self) -> tuple[Any, ...]:
        """What distinguishes one SDK client from another; equal settings share a client."""
        return (self.provider, self.base_url, self.api_key_env, self.timeout, self.max_reply_bytes)

    def _entry(self) -> ClientEntry:
        """The SDK module and this thread's client for the endpoint, built at the thread's first call."""
        key = read_api_key(self.api_key_env, self.provider, self.model)
        settings = (*self.client_settings(), key_digest(key))
        clients = _THREAD.__dict__.setdefault("clients", {})
        if settings not in clients:
            try:
                module = importlib.import_module(self.sdk)
            except ImportError as error:
                raise MissingExtra(
                    f"the {self.provider} provider needs the `{self.sdk}` package: install it with "
                    f"{install_hint(self.extra) if self.extra else 'pip install ' + self.sdk}."
                ) from error
            from pos_bench.models.transport import DeadlineTransport

            scrub_http_logs()  # their INFO request lines carry the URL, which may carry credentials

            transport = DeadlineTransport(tls_for(self.base_url), self.max_reply_bytes)
            http_client = module.DefaultHttpxClient(transport=transport)
            client = self.make_client(module, key, http_client)
            transport.proxy_for(client.base_url)  # a proxy it cannot use for the endpoint stops the call here
            clients[settings] = ClientEntry(module, client)
        return clients[settings]

    @property
    def client(self) -> tuple[Any, Any]:
        entry = self._entry()
        return entry.module, entry.client

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        module, client = self.client
        try:
            # the whole call, connect to last byte (httpx's timeout is per read), longer for a longer reply
            with deadline(self.call_seconds(prompt.max_tokens)):
                return self.request(client, prompt)
        except module.APIStatusError as error:
            if error.status_code in TRANSIENT_STATUS or error.status_code >= 500:
                hint = parse_retry_after(error.response.headers.get("retry-after"))
                raise TransientError(
                    f"{self.provider} HTTP {error.status_code}: {error}",
                    retry_after=hint,
                    rate_limited=error.status_code == 429,
                ) from error
            if error.status_code in REFUSED_STATUS:
                raise RequestRefused(self.explain(error)) from error
            raise RuntimeError(self.explain(error)) from error
        except module.APITimeoutError as error:
            raise TransientError(
                f"{self.provider} timed out: {error} (model.timeout {self.timeout:g} s of silence, or the "
                f"overall {self.call_seconds(prompt.max_tokens):.0f} s for a reply of up to "
                f"{prompt.max_tokens or self.max_tokens} tokens at model.min_tokens_per_s {self.min_tokens_per_s:g})",
                timed_out=True,
            ) from error
        except module.APIConnectionError as error:
            bound = broken_bound(error)
            if bound is not None:
                raise ReplyRefused(f"{self.provider}: {escaped(str(bound))}") from error
            cause = f" ({escaped(str(error.__cause__))[:300]})" if error.__cause__ is not None else ""
            raise TransientError(f"{self.provider} connection failed: {error}{cause}") from error
        except (json.JSONDecodeError, ValueError) as error:
            raise TransientError(f"{self.provider} returned a malformed response: {error}") from error
        except Exception as error:
            streamed = streamed_failure(error)  # a streamed body is read after the SDK's own error mapping
            if streamed is not None:
                raise TransientError(
                    f"{self.provider} stream broke off: {type(error).__name__}: {error}"
                    + (
                        f" (model.timeout {self.timeout:g} s of silence, or the overall deadline)"
                        if streamed
                        else ""
                    ),
                    timed_out=streamed,
                ) from error
            bound = broken_bound(error)  # the SDK may pass the transport's refusal on as it is
            if bound is None:
                raise
            raise ReplyRefused(f"{self.provider}: {escaped(str(bound))}") from error

    def explain(self, error: Any) -> str:
        """A permanent HTTP failure, with the usual fix for the common statuses."""
        hints = {
            400: "the server rejected the request; check model settings such as temperature or response mode",
            401: f"the key in {self.api_key_env} was refused",
            403: f"the key in {self.api_key_env} may not use this model",
            404: f"model {self.model!r} or the base_url path is unknown to the server",
        }
        hint = hints.get(error.status_code, "not retried")
        return f"{self.provider} HTTP {error.status_code} for model {self.model!r}: {error} ({hint})"
