"""The HTTP transport of the remote providers' SDK clients: a direct connection whose every socket operation
ends by the calling thread's deadline (`pos_bench.models.deadline`), so connect, TLS handshake, request write
and each read of the headers and body are bounded, and a server that drip-feeds its reply cannot hold a call.

It is what `httpx.HTTPTransport` does, on an httpcore connection pool whose network backend is wrapped
(`network_backend` is httpcore's public hook for this). The SDKs use the `httpx2` fork of httpx, imported
here only, when the first remote client is built.

Two more bounds hold for every request that goes through it (the SDKs' chat calls and the pre-flight check):
- a redirect to another origin (scheme, host or port) is refused before anything is sent there
  (`CrossOriginRedirect`): the key and the prompt only ever reach the configured origin; a redirect within it
  is followed by the client as usual;
- a reply body larger than `max_reply_bytes` is cut off with `ReplyTooLarge` as soon as it passes the bound, so a
  reply that never ends costs at most that much memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpcore2
import httpx2

from pos_bench.models.deadline import bounded

REDIRECTS = frozenset({301, 302, 303, 307, 308})


class CrossOriginRedirect(Exception):
    """The server redirected a request to another origin; nothing was sent there."""


class ReplyTooLarge(Exception):
    """A reply body passed `max_reply_bytes`; the rest was not read."""


def origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    """Scheme, host and port (the default one for the scheme when none is given)."""
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, port


class _Stream(httpcore2.NetworkStream):
    """A network stream whose reads and writes end by the deadline."""

    def __init__(self, inner: httpcore2.NetworkStream):
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, bounded(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, bounded(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None):
        bound = bounded(timeout, httpcore2.ConnectTimeout)
        return _Stream(self.inner.start_tls(ssl_context, server_hostname, bound))

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _Backend(httpcore2.NetworkBackend):
    """httpcore's synchronous backend, its connections bounded by the deadline."""

    def __init__(self) -> None:
        self.inner = httpcore2.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, **options: Any) -> _Stream:
        bound = bounded(timeout, httpcore2.ConnectTimeout)
        return _Stream(self.inner.connect_tcp(host, port, bound, **options))

    def connect_unix_socket(self, path: str, timeout: float | None = None, **options: Any) -> _Stream:
        bound = bounded(timeout, httpcore2.ConnectTimeout)
        return _Stream(self.inner.connect_unix_socket(path, bound, **options))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


@contextmanager
def httpx_errors(request: httpx2.Request) -> Iterator[None]:
    """httpcore's errors as the httpx errors of the same name, which the SDKs classify (a timeout → the
    SDK's timeout error)."""
    try:
        yield
    except httpcore2.TimeoutException as error:  # ConnectTimeout, ReadTimeout, WriteTimeout, PoolTimeout
        kind = getattr(httpx2, type(error).__name__, httpx2.TimeoutException)
        raise kind(str(error), request=request) from error
    except httpcore2.NetworkError as error:  # ConnectError, ReadError, WriteError
        kind = getattr(httpx2, type(error).__name__, httpx2.NetworkError)
        raise kind(str(error), request=request) from error
    except httpcore2.ProtocolError as error:  # RemoteProtocolError, LocalProtocolError
        kind = getattr(httpx2, type(error).__name__, httpx2.ProtocolError)
        raise kind(str(error), request=request) from error


class _Body(httpx2.SyncByteStream):
    """A response body read from the pool (its stream releases the connection on `close`), at most `limit`
    bytes of it."""

    def __init__(self, request: httpx2.Request, stream: Any, limit: int):
        self.request = request
        self.stream = stream
        self.limit = limit

    def __iter__(self) -> Iterator[bytes]:
        read = 0
        with httpx_errors(self.request):
            for chunk in self.stream:
                read += len(chunk)
                if read > self.limit:
                    raise ReplyTooLarge(
                        f"the reply from {self.request.url.copy_with(query=None)} passed {self.limit:,} bytes "
                        "(model.max_reply_bytes); the rest was not read"
                    )
                yield chunk

    def close(self) -> None:
        self.stream.close()


class DeadlineTransport(httpx2.BaseTransport):
    """A direct connection (no proxy) on the deadline-bounded backend; `ssl_context` verifies https."""

    def __init__(self, ssl_context: Any, max_reply_bytes: int):
        self.pool = httpcore2.ConnectionPool(ssl_context=ssl_context, network_backend=_Backend())
        self.max_reply_bytes = max_reply_bytes

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        core = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with httpx_errors(request):
            response = self.pool.handle_request(core)
        reply = httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(request, response.stream, self.max_reply_bytes),
            extensions=response.extensions,
        )
        if response.status in REDIRECTS and "location" in reply.headers:
            target = request.url.join(reply.headers["location"])
            if origin(target) != origin(request.url):
                response.stream.close()
                raise CrossOriginRedirect(
                    f"{request.url.copy_with(query=None, username=None, password=None)} redirected to another "
                    f"origin, {target.copy_with(query=None, username=None, password=None)}: not followed, "
                    "nothing (no key, no prompt) was sent there; point base_url at the server itself"
                )
        return reply

    def close(self) -> None:
        self.pool.close()
