"""The HTTP transport of the remote providers' SDK clients: a direct connection whose every socket operation
ends by the calling thread's deadline (`pos_bench.models.deadline`), so connect, TLS handshake, request write
and each read of the headers and body are bounded, and a server that drip-feeds its reply cannot hold a call.

It plays `httpx.HTTPTransport`'s part under the SDKs (which use the `httpx2` fork of httpx, imported here only,
when the first remote client is built), on the standard library's `http.client`: one kept-alive HTTP/1.1
connection per origin, its socket wrapped so that each read and write first cuts its timeout to the time left.
A call's exchange costs about a fifth less CPU than on httpcore, the library under httpx (docs/fullsize.md,
"Slow servers", the transport).

Two more bounds hold for every request that goes through it (the SDKs' chat calls and the pre-flight check):
- a redirect to another origin (scheme, host or port) is refused before anything is sent there
  (`CrossOriginRedirect`): the key and the prompt only ever reach the configured origin; a redirect within it
  is followed by the client as usual;
- a reply body larger than `max_reply_bytes` is cut off with `ReplyTooLarge` as soon as it passes the bound, so a
  reply that never ends costs at most that much memory.

A streamed reply's events are read a few at a time rather than one wakeup per token (`STREAM_PACE`).

A call whose reply is read whole skips `httpx2` and `http.client` (`send_whole`): its request and reply go
straight over the same kept connection (`wire.py`), within the same bounds.
"""

from __future__ import annotations

import http.client
import io
import math
import select
import socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx2

from pos_bench.models import wire
from pos_bench.models.deadline import bounded, remaining
from pos_bench.models.wire import ReplyTooLarge, Whole

REDIRECTS = frozenset({301, 302, 303, 307, 308})
CHUNK = 65536
"""The most one read of a reply body asks for."""
STREAM_PACE = 0.05
"""The least time between two reads of the socket while a streamed reply (server-sent events) arrives.

A serving stack sends each token as an event of its own, and a client that wakes for each one pays a wakeup per
token: against a loopback server sending 1,000 one-token events 1 ms apart, about 70 µs of CPU per event, where the
same events read from the buffer cost 12 µs each. Waiting until this long after the last read that found nothing
more lets the events that came meanwhile be read at once (68–72 → 20–24 ms of CPU per call there); a reply ends at
most this much later, and a server's silence is seen after `timeout` plus this (docs/fullsize.md)."""


class CrossOriginRedirect(Exception):
    """The server redirected a request to another origin; nothing was sent there."""


def origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    """Scheme, host and port (the default one for the scheme when none is given)."""
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, port


class _Expired(TimeoutError):
    """The call's total deadline passed before a socket operation could start."""


class _BoundedSocket:
    """A connected (plain or TLS) socket whose every read and write takes the timeout of the request it carries
    (`timeouts`, set per request), cut to the time left before the thread's deadline. `http.client` reads it
    through `makefile`, as it would the socket itself."""

    def __init__(self, sock: socket.socket, timeouts: dict[str, Any]):
        self.sock, self.timeouts = sock, timeouts
        self.pace = 0.0
        """The least seconds between two reads that each found everything the server had sent (`STREAM_PACE`
        while a streamed reply is read, else 0); a read that filled its buffer is followed at once."""
        self._caught_up_at = -math.inf
        self._files = 0
        self._closed = False

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        if self.pace and (wait := self._caught_up_at + self.pace - time.monotonic()) > 0:
            time.sleep(max(0.0, min(wait, remaining())))
        self.sock.settimeout(bounded(self.timeouts.get("read"), _Expired))
        read = self.sock.recv_into(buffer, nbytes, flags)
        if read < (nbytes or len(buffer)):  # less than asked: nothing more had come
            self._caught_up_at = time.monotonic()
        return read

    def sendall(self, data: Any) -> None:
        self.sock.settimeout(bounded(self.timeouts.get("write"), _Expired))  # it bounds the whole `sendall`
        self.sock.sendall(data)

    def makefile(self, mode: str = "rb", buffering: int | None = None, **_: Any) -> io.BufferedReader:
        self._files += 1
        return io.BufferedReader(socket.SocketIO(self, "rb"), buffering or io.DEFAULT_BUFFER_SIZE)  # type: ignore[arg-type]

    def _decref_socketios(self) -> None:  # a file from `makefile` closed (what `socket.socket` counts too)
        self._files -= 1
        if self._closed and self._files <= 0:
            self.sock.close()

    def close(self) -> None:  # the socket itself closes when its last file does
        self._closed = True
        if self._files <= 0:
            self.sock.close()

    def setsockopt(self, *args: Any) -> None:
        self.sock.setsockopt(*args)

    def dropped(self) -> bool:
        """Whether the idle connection has something to read: the server closed it (or wrote out of turn), so
        it cannot carry the next request."""
        return bool(select.select([self.sock], [], [], 0)[0])


class _Connection(http.client.HTTPConnection):
    """One kept-alive connection to an origin; `connect` and the TLS handshake end by the deadline, and the
    socket it hands `http.client` bounds each read and write (`_BoundedSocket`)."""

    def __init__(self, scheme: str, host: str, port: int, ssl_context: Any):
        super().__init__(host, port)
        self.scheme, self.ssl_context = scheme, ssl_context
        self.timeouts: dict[str, Any] = {}
        """The per-operation timeouts of the request in flight (httpx's `timeout` extension); its socket reads
        them."""

    def connect(self) -> None:
        connect_s = bounded(self.timeouts.get("connect"), _Expired)
        sock = socket.create_connection((self.host, self.port), connect_s)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.scheme == "https":
                sock.settimeout(bounded(self.timeouts.get("connect"), _Expired))
                sock = self.ssl_context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        self.sock = _BoundedSocket(sock, self.timeouts)


@contextmanager
def httpx_errors(request: httpx2.Request | None, phase: str) -> Iterator[None]:
    """The standard library's failures as the httpx errors the SDKs classify (a timeout → the SDK's timeout
    error, a refused or broken connection → its connection error); `phase` is connect, write or read."""
    try:
        yield
    except TimeoutError as error:  # socket timeouts and a passed deadline (`_Expired`)
        kind = {"connect": httpx2.ConnectTimeout, "write": httpx2.WriteTimeout}.get(phase, httpx2.ReadTimeout)
        raise kind(str(error) or f"{phase} timed out", request=request) from error
    except http.client.HTTPException as error:  # a malformed status line or header, a reply cut short
        raise httpx2.RemoteProtocolError(f"{type(error).__name__}: {error}", request=request) from error
    except OSError as error:  # refused, reset, TLS verification failed
        kind = {"connect": httpx2.ConnectError, "write": httpx2.WriteError}.get(phase, httpx2.ReadError)
        raise kind(f"{type(error).__name__}: {error}", request=request) from error


def is_event_stream(reply: http.client.HTTPResponse) -> bool:
    return (reply.getheader("content-type") or "").startswith("text/event-stream")


class _Body(httpx2.SyncByteStream):
    """A reply body, at most `limit` bytes of it, read as it arrives (server-sent events at `STREAM_PACE`). Read
    to its end, its connection stays open for the next request; closed before, the connection is closed with it."""

    def __init__(
        self,
        request: httpx2.Request,
        reply: http.client.HTTPResponse,
        connection: _Connection,
        limit: int,
        sock: _BoundedSocket,
    ):
        self.request, self.reply, self.connection, self.limit = request, reply, connection, limit
        self.sock = sock
        """The socket the reply is read from (the connection's, which `http.client` lets go of once it knows the
        reply ends the connection)."""
        self.ended = False

    def __iter__(self) -> Iterator[bytes]:
        read = 0
        self.sock.pace = STREAM_PACE if is_event_stream(self.reply) else 0.0
        try:
            with httpx_errors(self.request, "read"):
                while chunk := self.reply.read1(CHUNK):
                    read += len(chunk)
                    if read > self.limit:
                        raise ReplyTooLarge(
                            f"the reply from {self.request.url.copy_with(query=None)} passed {self.limit:,} "
                            "bytes (model.max_reply_bytes); the rest was not read"
                        )
                    yield chunk
        finally:
            self.sock.pace = 0.0
        self.ended = True

    def close(self) -> None:
        if not self.ended:  # left before its end: what is left of it would be read as the next reply
            self.connection.close()
        self.reply.close()


class DeadlineTransport(httpx2.BaseTransport):
    """A direct connection (no proxy) per origin, bounded by the deadline; `ssl_context` verifies https."""

    def __init__(self, ssl_context: Any, max_reply_bytes: int):
        self.ssl_context = ssl_context
        self.max_reply_bytes = max_reply_bytes
        self.connections: dict[tuple[str, str, int | None], _Connection] = {}

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            connection = self.connection_for(request.url)
        except httpx2.UnsupportedProtocol as error:
            raise httpx2.UnsupportedProtocol(str(error), request=request) from None
        connection.timeouts.clear()  # the dict its socket reads: this request's timeouts, not the last one's
        connection.timeouts.update(request.extensions.get("timeout") or {})
        try:
            reply, sock = self._exchange(connection, request, request.read())
        except BaseException:
            connection.close()  # a request half sent or a reply half read: the connection cannot carry another
            raise
        headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in reply.getheaders()]
        response = httpx2.Response(
            status_code=reply.status,
            headers=headers,
            stream=_Body(request, reply, connection, self.max_reply_bytes, sock),
            extensions={
                "http_version": b"HTTP/1.0" if reply.version == 10 else b"HTTP/1.1",  # as the server said
                "reason_phrase": reply.reason.encode("latin-1", "replace"),
            },
        )
        if reply.status in REDIRECTS and "location" in response.headers:
            target = request.url.join(response.headers["location"])
            if origin(target) != origin(request.url):
                connection.close()
                reply.close()
                raise CrossOriginRedirect(
                    f"{request.url.copy_with(query=None, username=None, password=None)} redirected to another "
                    f"origin, {target.copy_with(query=None, username=None, password=None)}: not followed, "
                    "nothing (no key, no prompt) was sent there; point base_url at the server itself"
                )
        return response

    def connection_for(self, url: httpx2.URL) -> _Connection:
        """The kept connection to the origin of `url` (made, not yet connected, if there is none); one the server
        closed while it was idle is closed here, so a new one carries the next request, never the request sent
        twice."""
        scheme, host, port = key = origin(url)
        if scheme not in ("http", "https"):
            raise httpx2.UnsupportedProtocol(f"{scheme!r} is not http or https")
        connection = self.connections.get(key)
        if connection is None:
            connection = self.connections[key] = _Connection(scheme, host, port or 0, self.ssl_context)
        if connection.sock is not None and connection.sock.dropped():
            connection.close()
        return connection

    def send_whole(self, url: httpx2.URL, request: bytes, timeouts: Mapping[str, float | None]) -> Whole:
        """Send `request` (`wire.request_bytes`, to `url`'s origin) on the origin's kept connection and read the
        reply whole (`wire.read_reply`), each socket operation within `timeouts` and the thread's deadline, the
        body within `max_reply_bytes`. A connection whose reply was not read to its end, or that the reply
        ends, is closed. Failures are the httpx errors the SDKs classify (`httpx_errors`, without a request),
        and `ReplyTooLarge`; a redirect is returned as any reply (the caller sends the request again through
        `handle_request`, which refuses another origin)."""
        connection = self.connection_for(url)
        connection.timeouts.clear()
        connection.timeouts.update(timeouts)
        try:
            if connection.sock is None:
                with httpx_errors(None, "connect"):
                    connection.connect()
            sock = connection.sock
            with httpx_errors(None, "write"):
                sock.sendall(request)
            reader = sock.makefile("rb")
            try:
                with httpx_errors(None, "read"):
                    whole = wire.read_reply(reader, self.max_reply_bytes)
            finally:
                reader.close()
        except ReplyTooLarge as error:
            connection.close()
            raise ReplyTooLarge(f"the reply from {url.copy_with(query=None)} {error}") from None
        except BaseException:
            connection.close()  # a request half sent or a reply half read: the connection cannot carry another
            raise
        if not whole.keep:
            connection.close()
        return whole

    def _exchange(
        self, connection: _Connection, request: httpx2.Request, body: bytes
    ) -> tuple[http.client.HTTPResponse, _BoundedSocket]:
        """Send `request` on `connection` (connecting it first when it is not) and read the reply's head; the
        reply and the socket it is read from."""
        if connection.sock is None:
            with httpx_errors(request, "connect"):
                connection.connect()
        sock = connection.sock
        with httpx_errors(request, "write"):
            connection.putrequest(
                request.method,
                request.url.raw_path.decode("ascii"),
                skip_host=True,
                skip_accept_encoding=True,
            )
            for name, value in request.headers.raw:
                connection.putheader(name, value)
            connection.endheaders(body or None)
        with httpx_errors(request, "read"):
            return connection.getresponse(), sock

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()
