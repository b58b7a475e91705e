"""Secret redaction: no file pos_bench writes holds the value of an API-key variable, even when a server echoes
the key back in an error body.

The secrets are the values of the environment variables that the config names in any `api_key_env` key (or a
provider's default for it), plus every variable whose name looks like a credential (`*_API_KEY`, `*_TOKEN`,
`*_SECRET`). Values shorter than `MIN_SECRET_CHARS` are ignored: they cannot be told apart from ordinary text.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

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
        """`data` as JSON text with every string redacted (`options` go to `json.dumps`); the text is parsed
        back first, so strings that `default=` made of other values are redacted too."""
        text = json.dumps(data, **options)
        if not self.secrets:
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


NO_SECRETS = Redactor()
"""The redactor of a run that reads no secret (tests, offline tools)."""


def key_variables(node: Any) -> Iterable[str]:
    """Variable names in `api_key_env` keys of a config tree, and the default of every `_target_` class
    that takes an `api_key_env` argument without the node setting it."""
    if isinstance(node, Mapping):
        if isinstance(node.get("api_key_env"), str):
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
    return Redactor(tuple(sorted(pairs, key=lambda p: (-len(p[1]), p[0]))))
