"""The HTTP transport of the remote providers' SDK clients: a direct connection whose every socket operation
ends by the calling thread's deadline (`pos_bench.models.deadline`), so connect, TLS handshake, request write
and each read of the headers and body are bounded, and a server that drip-feeds its reply cannot hold a call.

It is what `httpx.HTTPTransport` does, on an httpcore connection pool whose network backend is wrapped
(`network_backend` is httpcore's public hook for this). The SDKs use the `httpx2` fork of httpx, imported
here only, when the first remote client is built.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpcore2
import httpx2

from pos_bench.models.deadline import bounded


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
    """A response body read from the pool (its stream releases the connection on `close`)."""

    def __init__(self, request: httpx2.Request, stream: Any):
        self.request = request
        self.stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with httpx_errors(self.request):
            yield from self.stream

    def close(self) -> None:
        self.stream.close()


class DeadlineTransport(httpx2.BaseTransport):
    """A direct connection (no proxy) on the deadline-bounded backend; `ssl_context` verifies https."""

    def __init__(self, ssl_context: Any):
        self.pool = httpcore2.ConnectionPool(ssl_context=ssl_context, network_backend=_Backend())

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
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(request, response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self.pool.close()
