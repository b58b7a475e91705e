"""One JSON POST on an SDK client's own HTTP client, with the headers and the error classes the SDK would use, but
without the SDK's per-request machinery.

The SDKs' `client.post` validates a typed options object, copies it, merges its headers, parses and joins the URL
and builds the request anew for every call: about 0.4 ms of CPU per call when the caches are cold, as they are
between two calls of an episode an environment step apart (1.30–1.38 → 0.88–0.97 ms for a whole ALFWorld-sized
exchange on loopback; docs/fullsize.md, "The request skips the SDK's machinery"). Here the request goes straight
to the client's `httpx2.Client`, whose transport (`transport.py`) holds every bound: the deadline, no redirect to
another origin, the reply's byte cap. A redirect within the origin is followed by that client, as the SDK's would
be.

What reaches the caller is what the SDK would have raised: its status error classes (`RateLimitError`,
`AuthenticationError`…, built by the SDK from the response), `APITimeoutError` and `APIConnectionError`; a broken
bound (`CrossOriginRedirect`, `ReplyTooLarge`) as it is. `RemoteModel.generate` classifies them.

A chat call (`post_whole`) goes further: its request is written and its reply read straight on the transport's
kept connection (`wire.py`), without `httpx2`'s request, client and response objects (0.82 → 0.40 ms of CPU for an
ALFWorld-sized exchange with the caches cold; docs/fullsize.md, "A reply read whole goes over the wire"). A
streamed reply takes the same path: its events are read as they arrive and parsed once the body has ended. A
redirect, and a client with a proxy mounted on it, take `post_json`.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from pos_bench.models import wire
from pos_bench.models.transport import REDIRECTS, DeadlineTransport

logger = logging.getLogger("httpx2")
"""The HTTP client's logger: a request `post_whole` sends past the client is logged as the client would log it."""


@functools.lru_cache(maxsize=64)
def sdk_headers(client: Any) -> httpx2.Headers:
    """The headers the SDK client sends with every request: its HTTP client's (`Accept-Encoding`…), then its own
    (its identity, any it was given, the key), as the SDK merges them. Fixed for a client, so built once."""
    headers = httpx2.Headers(client._client.headers)
    sdk = {**client.default_headers, **client.auth_headers, "Content-Type": "application/json"}
    headers.update({name: value for name, value in sdk.items() if isinstance(value, str)})  # `Omit` drops one
    return headers


@functools.lru_cache(maxsize=64)
def endpoint_url(base: httpx2.URL, path: str) -> httpx2.URL:
    """`path` under the client's base URL (which the SDK keeps ending in `/`), as the SDK joins them."""
    return base.copy_with(raw_path=base.raw_path + path.lstrip("/").encode("ascii"))


@dataclass(frozen=True)
class Route:
    """Where a client's calls to one path go, and the header lines every one of them carries (`wire.py`)."""

    url: httpx2.URL
    target: bytes
    head: bytes
    direct: bool
    """The client sends to the URL through its own transport (`DeadlineTransport`), not through a proxy mounted on
    it by whoever built the client; only then does `post_whole` skip the client. The environment's proxies
    (`HTTPS_PROXY`…) are the transport's own business: it reads them and speaks to the proxy itself (a tunnel, or
    requests in absolute form, which `target` and `head` then are), so a client of `endpoint.py` stays direct."""


@functools.lru_cache(maxsize=64)
def route(client: Any, path: str) -> Route:
    url = endpoint_url(client.base_url, path)
    host = url.raw_host + (b":%d" % url.port if url.port else b"")
    headers = httpx2.Headers(sdk_headers(client))
    if url.username or url.password:  # credentials in the URL: Basic authorization, as the client sends it
        pair = f"{url.username}:{url.password}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
    http = client._client
    transport = http._transport
    direct = isinstance(transport, DeadlineTransport) and http._transport_for_url(url) is transport
    # to an http endpoint through the environment's proxy: the whole URL, and the proxy's credentials
    target, proxy_headers = transport.request_form(url) if direct else (url.raw_path, ())
    return Route(url, target, wire.header_block(host, [*headers.raw, *proxy_headers]), direct)


def json_bytes(body: Mapping[str, Any]) -> bytes:
    """`body` as the SDK writes a request body: UTF-8, no spaces, no NaN."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def post_whole(
    module: Any, client: Any, path: str, body: Mapping[str, Any], timeout: float, *, events: bool = False
) -> bytes:
    """POST `body` as JSON to `path` under the client's base URL and read the reply to its end, on the client's
    kept connection (`DeadlineTransport.send_whole`), each socket operation bounded by `timeout`; the reply's body.
    `events` for a reply streamed as server-sent events: it is read as it arrives, a few events at a time, and a
    silence longer than `timeout` ends it.

    What the caller meets is what `post_json` raises: the SDK's error for a status of 400 or more (with the
    response), its timeout and connection errors, a broken bound as it is. A redirect sends the request again
    through `post_json`, whose transport follows one within the origin and refuses any other."""
    where = route(client, path)
    if not where.direct:
        return read_whole(post_json(module, client, path, body, timeout))
    timeouts = {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
    data = json_bytes(body)
    try:
        whole = client._client._transport.send_whole(
            where.url, wire.request_bytes(b"POST", where.target, where.head, data), timeouts, events=events
        )
    except httpx2.TimeoutException as error:
        raise module.APITimeoutError(request=httpx2.Request("POST", where.url)) from error
    except (httpx2.RequestError, ssl.SSLError) as error:
        raise module.APIConnectionError(request=httpx2.Request("POST", where.url)) from error
    if not 200 <= whole.status < 300:  # as the client logs it (the lines of answered requests are left out)
        logger.info('HTTP Request: POST %s "%s %d %s"', where.url, whole.version, whole.status, whole.reason)
    if whole.status in REDIRECTS and whole.header(b"location") is not None:
        return read_whole(post_json(module, client, path, body, timeout))
    if whole.status < 400:  # as `post_json`'s caller reads it: the body, whatever the status
        return whole.body
    response = httpx2.Response(
        whole.status,
        headers=whole.headers,
        content=whole.body,
        request=httpx2.Request("POST", where.url, headers=sdk_headers(client), content=data),
    )
    raise client._make_status_error_from_response(response)


def read_whole(response: httpx2.Response) -> bytes:
    """The body of a `post_json` response, read to its end (the connection is kept) and closed."""
    try:
        return response.read()
    finally:
        response.close()


def post_json(
    module: Any, client: Any, path: str, body: Mapping[str, Any], timeout: float
) -> httpx2.Response:
    """POST `body` as JSON to `path` under the client's base URL, each socket operation bounded by `timeout`; the
    response, its body unread (the caller reads and closes it). A status of 400 or more is raised as the SDK's
    error for it, with the body read."""
    request = httpx2.Request(
        "POST",
        endpoint_url(client.base_url, path),
        headers=sdk_headers(client),
        content=json_bytes(body),
        extensions={"timeout": httpx2.Timeout(timeout).as_dict()},
    )
    try:
        response = client._client.send(request, stream=True)
    except httpx2.TimeoutException as error:
        raise module.APITimeoutError(request=request) from error
    except (httpx2.RequestError, ssl.SSLError) as error:
        raise module.APIConnectionError(request=request) from error
    if response.status_code >= 400:
        try:
            response.read()
        finally:
            response.close()
        raise client._make_status_error_from_response(response)
    return response
