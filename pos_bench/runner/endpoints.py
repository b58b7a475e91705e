"""Endpoints checked before the first episode: one cheap request (list the served models) per distinct
endpoint and role, with a short timeout, so a dead URL, a wrong model id or a refused key stops the run at
once (exit 2, one line naming role, URL, model and cause) instead of failing every episode after its retries.

A node is checked when it has a `base_url` (or is an OpenAI / Anthropic client with its public default) and a
`model`; local, scripted and replay models have neither and are skipped. `runner.check_endpoints=false` turns
the check off (an endpoint without a models route, or one not up yet).

The check goes through the providers' own transport (`models/transport.py`), so it goes the same way as every
chat call (through the proxy the environment names for the endpoint, if any) and holds the same bounds: `TIMEOUT`
for the whole check (connect to last byte, not per read), the node's `max_reply_bytes` for the reply, and no
redirect to another origin (the key is never sent there).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pos_bench.models.deadline import deadline
from pos_bench.models.endpoint import MAX_REPLY_BYTES, broken_bound, tls_for
from pos_bench.redact import escaped, scrub_http_logs

TIMEOUT = 5.0
"""Seconds per check; a listing of models answers in milliseconds on a live server."""
DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1"}


@dataclass(frozen=True)
class Endpoint:
    role: str
    url: str
    model: str
    protocol: str
    """`openai` or `anthropic`: how to list the models and send the key."""
    api_key_env: str | None
    max_reply_bytes: int = MAX_REPLY_BYTES


def shown(url: str) -> str:
    """`url` without credentials (user:password@, query string) for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def endpoints(cfg: Mapping[str, Any]) -> list[Endpoint]:
    """One endpoint per distinct (role, URL, model) among the model node and the per-role nodes."""
    nodes = [("agent", cfg.get("model") or {})] + list((cfg.get("roles") or {}).items())
    found: dict[tuple[str, str, str], Endpoint] = {}
    for role, node in nodes:
        if isinstance(node, Mapping) and str(node.get("_target_", "")).endswith(INSPECT_TARGET):
            node = inspect_node(node)
        if not isinstance(node, Mapping) or not node.get("model"):
            continue
        target = str(node.get("_target_", ""))
        protocol = "anthropic" if "anthropic" in target else "openai" if "openai" in target else None
        if protocol is None:
            continue
        url = str(node.get("base_url") or DEFAULT_URLS[protocol]).rstrip("/")
        key = (role, url, str(node["model"]))
        limit = int(node.get("max_reply_bytes") or MAX_REPLY_BYTES)
        found.setdefault(
            key, Endpoint(role, url, str(node["model"]), protocol, node.get("api_key_env"), limit)
        )
    return list(found.values())


INSPECT_TARGET = "inspect_model.InspectModel"


def inspect_node(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A `model=inspect` node as the OpenAI or Anthropic node its provider speaks to, with inspect's own
    variables for the URL and key (`OPENAI_BASE_URL`, `<SERVICE>_BASE_URL` of `openai-api/<service>/…`);
    None for the other providers, which inspect checks itself when the model is built."""
    provider, _, rest = str(node.get("name") or "").partition("/")
    if provider == "openai-api":
        service, _, model = rest.partition("/")
        prefix = service.upper().replace("-", "_")
        url = node.get("base_url") or os.environ.get(f"{prefix}_BASE_URL")
        target, variable = ("openai" if url else ""), f"{prefix}_API_KEY"
    elif provider in ("openai", "anthropic"):
        model, prefix = rest, provider.upper()
        url = node.get("base_url") or os.environ.get(f"{prefix}_BASE_URL")
        target, variable = provider, f"{prefix}_API_KEY"
    else:
        return None
    if not target or not model:
        return None
    return {"_target_": target, "model": model, "base_url": url, "api_key_env": variable}


def problem(endpoint: Endpoint, timeout: float = TIMEOUT) -> str | None:
    """Why `endpoint` cannot serve the run, in one line; None when it lists the model (or cannot list any)."""
    url = endpoint.url + ("/models" if endpoint.url.endswith("/v1") else "/v1/models")
    headers = {"Accept": "application/json"}
    key = os.environ.get(endpoint.api_key_env or "") if endpoint.api_key_env else None
    if key and endpoint.protocol == "anthropic":
        headers.update({"x-api-key": key, "anthropic-version": "2023-06-01"})
    elif key:
        headers["Authorization"] = f"Bearer {key}"
    where = f"role {endpoint.role}: {shown(endpoint.url)} (model {endpoint.model})"
    try:
        status, body = fetch(url, headers, endpoint.max_reply_bytes, timeout)
    except Exception as error:  # noqa: BLE001 - every way the check can fail is this endpoint's problem
        bound = broken_bound(error)
        if bound is not None:
            return f"{where}: {escaped(str(bound))}"
        return f"{where}: unreachable ({escaped(type(error).__name__ + ': ' + str(error))[:300]})"
    if status in (401, 403):
        return f"{where}: the key was refused (HTTP {status}; check ${endpoint.api_key_env})"
    if status >= 300:
        return None  # a server without a models route (404, 405…) may still serve completions
    try:
        listing = json.loads(body or b"{}")
    except (ValueError, RecursionError) as error:  # not JSON, not UTF-8, nested too deep
        return f"{where}: the models listing is not JSON ({type(error).__name__}); is base_url the API's?"
    data = listing.get("data", []) if isinstance(listing, dict) else None
    if not isinstance(data, list):
        return f"{where}: the models listing is not an object with a `data` list; is base_url the API's?"
    served = [escaped(str(m.get("id")))[:200] for m in data if isinstance(m, Mapping)]
    if served and endpoint.model not in served:
        return f"{where}: the server does not serve {endpoint.model}; it serves {', '.join(served[:10])}"
    return None


def fetch(url: str, headers: Mapping[str, str], max_bytes: int, timeout: float) -> tuple[int, bytes]:
    """GET `url` within `timeout` seconds in all, at most `max_bytes` of reply, redirects kept to its origin."""
    import httpx2

    from pos_bench.models.transport import DeadlineTransport

    scrub_http_logs()  # httpx logs each request's URL, which may carry credentials
    transport = DeadlineTransport(tls_for(url), max_bytes)
    with (
        deadline(timeout),
        httpx2.Client(transport=transport, follow_redirects=True, timeout=timeout, trust_env=False) as client,
    ):
        response = client.get(url, headers=dict(headers))
        return response.status_code, response.content


def endpoint_problems(cfg: Mapping[str, Any], timeout: float = TIMEOUT) -> Iterable[str]:
    for endpoint in endpoints(cfg):
        found = problem(endpoint, timeout)
        if found:
            yield found
