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
"""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import Mapping
from typing import Any

import httpx2


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
        # as the SDK writes a body: UTF-8, no spaces, no NaN
        content=json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(),
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
