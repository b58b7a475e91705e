"""Secret redaction: no file pos_bench writes holds the value of an API-key variable, even when a server echoes
the key back in an error body, nor a credential written into a URL.

The secrets are the values of the environment variables that the config names in any `api_key_env` key (or a
provider's default for it), plus every variable whose name looks like a credential (`*_API_KEY`, `*_TOKEN`,
`*_SECRET`). Values shorter than `MIN_SECRET_CHARS` are ignored: they cannot be told apart from ordinary text.

Credentials in a URL of the config or of a proxy the environment names (`HTTPS_PROXY`…; user info, and the
values of key-like query parameters such as `api-key`, `token`, `sig`) are secrets too, whatever their length: the
exact `user:password@` and `name=value` texts are redacted wherever they appear, and the bare password or value
when it is long enough to be told apart.
`scrub_urls` cuts them out of any URL by pattern, for text whose config is unknown (the HTTP clients' logs,
through `UrlScrubber`). A value in an `*_env` setting that is not a variable name (a key pasted by mistake) is
a secret as well, and `env_setting_problems` refuses it without repeating it.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from hydra.utils import get_object

MIN_SECRET_CHARS = 8
CREDENTIAL_NAME = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD)$", re.IGNORECASE)


@dataclass(frozen=True)
class Redactor:
    """Replaces each secret value with `[redacted $VARIABLE]`."""

    secrets: tuple[tuple[str, str], ...] = ()
    """(variable name, value) pairs, longest value first so a key that contains another is cut whole."""

    def text(self, value: str) -> str:
        for name, secret in self.secrets:
            if secret in value:
                value = value.replace(secret, f"[redacted ${name}]")
        return value

    def json_text(self, data: Any, **options: Any) -> str:
        """`data` as JSON text with every string redacted (`options` go to `json.dumps`).

        JSON writes a string character by character, so a string that holds a secret holds it in the text as the
        secret's own JSON form. A text without any secret's form is returned as written; one with it is parsed
        back and every string redacted (strings that `default=` made of other values too). Before, every line of
        a run with a key set was parsed back: an ALFWorld call event cost 156 µs of CPU instead of 43, a step 44
        instead of 11."""
        text = json.dumps(data, **options)
        ascii_only = options.get("ensure_ascii", True)
        if not any(json_form(secret, ascii_only) in text for _, secret in self.secrets):
            return text
        options = {k: v for k, v in options.items() if k != "default"}
        return json.dumps(self.value(json.loads(text)), **options)

    def value(self, data: Any) -> Any:
        """`data` (JSON-ready: dicts, lists, strings, numbers) with every string redacted."""
        if not self.secrets:
            return data
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, Mapping):
            return {self.text(str(k)): self.value(v) for k, v in data.items()}
        if isinstance(data, (list, tuple)):
            return [self.value(v) for v in data]
        return data


@functools.cache
def json_form(secret: str, ascii_only: bool) -> str:
    """`secret` as it appears inside a JSON string written with `ensure_ascii=ascii_only`."""
    return json.dumps(secret, ensure_ascii=ascii_only)[1:-1]


NO_SECRETS = Redactor()
"""The redactor of a run that reads no secret (tests, offline tools)."""


def key_variables(node: Any) -> Iterable[str]:
    """Variable names in `api_key_env` keys of a config tree, and the default of every `_target_` class
    that takes an `api_key_env` argument without the node setting it."""
    if isinstance(node, Mapping):
        if isinstance(node.get("api_key_env"), str):
            if is_variable_name(node["api_key_env"]):  # anything else is refused, never looked up or shown
                yield node["api_key_env"]
        elif "api_key_env" not in node and isinstance(node.get("_target_"), str):
            yield from _defaults_of(node["_target_"])
        for value in node.values():
            yield from key_variables(value)
    elif isinstance(node, (list, tuple)):
        for value in node:
            yield from key_variables(value)


@functools.lru_cache(maxsize=256)
def _defaults_of(target: str) -> tuple[str, ...]:
    """A class's default `api_key_env` (looked up once per process: `inspect.signature` is slow)."""
    try:
        parameter = inspect.signature(get_object(target)).parameters.get("api_key_env")
    except Exception:  # noqa: BLE001 - an unloadable target is reported by the pre-flight check, not here
        return ()
    if parameter is not None and isinstance(parameter.default, str):
        return (parameter.default,)
    return ()


def redactor_for(cfg: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Redactor:
    """The redactor of a run: the secrets its config reads, plus credential-looking variables."""
    environ = os.environ if environ is None else environ
    names = set(key_variables(cfg)) | {name for name in environ if CREDENTIAL_NAME.search(name)}
    pairs = {(name, environ.get(name, "").strip()) for name in names}
    pairs = {(n, v) for n, v in pairs if len(v) >= MIN_SECRET_CHARS}
    pairs |= set(config_secrets(cfg)) | set(proxy_secrets(environ))
    return Redactor(tuple(sorted(pairs, key=lambda p: (-len(p[1]), p[0]))))


MIN_URL_SECRET_CHARS = 6
"""A bare password or query value this long is redacted anywhere; a shorter one only in its URL form."""
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEY_LIKE_PARAMETER = re.compile(r"key|token|secret|sig|pass|pwd|auth|credential|session", re.IGNORECASE)
"""Query parameters whose value is a credential (`api-key`, `access_token`, `sig`, `password`, …)."""
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
USER_INFO = re.compile(r"(?<=://)[^/?#@\s]*@")
QUERY_PARAMETER = re.compile(r"([?&;])([^=&;#\s]+)=([^&;#\s]*)")


def is_variable_name(value: str) -> bool:
    return VARIABLE_NAME.fullmatch(value) is not None


def _settings(node: Any, path: str = "") -> Iterator[tuple[str, str, str]]:
    """(dotted path, key, value) of every string setting in a config tree."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _settings(value, f"{path}.{key}" if path else str(key))
            if isinstance(value, str):
                yield (f"{path}.{key}" if path else str(key)), str(key), value
    elif isinstance(node, (list, tuple)):
        for index, value in enumerate(node):
            yield from _settings(value, f"{path}[{index}]")


def env_setting_problems(cfg: Mapping[str, Any]) -> list[str]:
    """An `*_env` setting must name an environment variable; anything else (often the key itself, pasted
    by mistake) is refused, and its value is never repeated."""
    return [
        f"{path}: must name an environment variable (letters, digits and _), but holds something else "
        f"({len(value)} characters, not shown: it may be a key pasted by mistake). Put the key in a variable "
        f"(export MY_KEY=…) and set {path}=MY_KEY."
        for path, key, value in _settings(cfg)
        if key.endswith("_env") and not is_variable_name(value)
    ]


def url_credentials(url: str) -> Iterator[str]:
    """The credential texts of one URL: its `user:password@` part and password, and the `name=value` text
    and value of each key-like query parameter."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        yield parts.netloc.rpartition("@")[0] + "@"
        if parts.password:
            yield parts.password
    for _, name, value in QUERY_PARAMETER.findall(f"?{parts.query}"):
        if value and KEY_LIKE_PARAMETER.search(name):
            yield from (f"{name}={value}", value)


def config_secrets(cfg: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(setting path, secret) for the URL credentials and the misplaced keys of a config."""
    for path, key, value in _settings(cfg):
        if key.endswith("_env") and not is_variable_name(value):
            yield path, value
        for url in URL.findall(value):
            for secret in url_credentials(url):
                if len(secret) >= MIN_URL_SECRET_CHARS or "=" in secret or secret.endswith("@"):
                    yield path, secret


PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")
"""The environment's proxies, honoured (upper or lower case) by the providers' transport (`models/transport.py`)."""


def proxy_secrets(environ: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """(variable, secret) for the credentials in the URL of each proxy the environment names, as for a URL of the
    config: the transport sends them only to the proxy, and nothing the run writes holds them."""
    for name in PROXY_VARIABLES:
        for variable in (name, name.lower()):
            value = environ.get(variable, "").strip()
            if not value:
                continue
            for secret in url_credentials(value if "://" in value else f"http://{value}"):
                if len(secret) >= MIN_URL_SECRET_CHARS or "=" in secret or secret.endswith("@"):
                    yield variable, secret


def scrub_urls(text: str) -> str:
    """`text` with the user info and the key-like query values of every URL in it replaced."""
    if "://" not in text:
        return text
    return URL.sub(_scrub_url, text)


def _scrub_url(match: re.Match[str]) -> str:
    url = USER_INFO.sub("[redacted]@", match.group(0))
    return QUERY_PARAMETER.sub(
        lambda m: f"{m[1]}{m[2]}=[redacted]" if KEY_LIKE_PARAMETER.search(m[2]) else m[0], url
    )


class UrlScrubber(logging.Filter):
    """A logging filter that scrubs URL credentials from each record's message (the HTTP clients log every
    request's URL at INFO, which Hydra writes to the run's log file)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        scrubbed = scrub_urls(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, ()
        return True


HTTP_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "anthropic")


def scrub_http_logs() -> None:
    """Attach `UrlScrubber` to the loggers of the HTTP clients and SDKs (once per logger)."""
    for name in HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, UrlScrubber) for f in logger.filters):
            logger.addFilter(UrlScrubber())


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters other than tab and newline (C0, DEL, C1): a terminal would act on them."""


def escaped(text: str) -> str:
    """`text` from outside (a server's error message, a file's content) made safe to print on a terminal:
    every control character but tab and newline shown as its escape (`\\x1b`), so an escape sequence in a
    server's reply cannot clear the screen or rewrite what was printed."""
    return CONTROL.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


class ScrubbedStream:
    """A text stream (the process's stderr) that scrubs URL credentials from everything written to it: Hydra
    prints a failed job's command-line overrides (`Error executing job with overrides: […]`) and its traceback
    there, and a `model.base_url` may carry a password."""

    def __init__(self, inner: Any):
        self.inner = inner

    def write(self, text: str) -> int:
        return self.inner.write(scrub_urls(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
