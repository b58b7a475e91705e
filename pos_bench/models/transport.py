"""The HTTP transport of the remote providers' SDK clients: a connection whose every socket operation ends by the
calling thread's deadline (`pos_bench.models.deadline`), so connect, TLS handshake, request write and each read
of the headers and body are bounded, and a server that drip-feeds its reply cannot hold a call.

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

A chat call skips `httpx2` and `http.client` (`send_whole`): its request and reply, read whole or streamed, go
straight over the same kept connection (`wire.py`), within the same bounds.

The environment's proxies are honoured as httpx honours them for a client it builds itself (which it does not
for one given a transport, as the SDKs' clients here are): `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and
`NO_PROXY` (lower-case forms too), read once when the transport is built, matched as httpx2 matches them
(`environment_proxies`). Only `http://` proxies: one of another scheme (`https://`, `socks5://`) named for an
endpoint stops its client when it is built (`UnsupportedProxy`), rather than being passed by. An https endpoint
is reached through a `CONNECT` tunnel, whose answer's head is read within the connect timeout and the deadline
(anything but 2xx is `ProxyRefused`, a connection error naming the proxy by host and port), then TLS to the
endpoint's own host name; an http endpoint through requests in absolute form (`POST http://host:port/path`) on a
kept connection to the proxy, which `send_whole`'s caller writes too (`request_form`). A proxy's credentials go
only into `Proxy-Authorization`, never into a message. Every bound above holds through a proxy; a redirect is
judged by the endpoint's origins, never the proxy's.
"""

from __future__ import annotations

import base64
import http.client
import io
import math
import os
import select
import socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
from httpx2._utils import URLPattern, get_environment_proxies

from pos_bench.models import wire
from pos_bench.models.deadline import bounded, remaining
from pos_bench.models.wire import ReplyTooLarge, Whole
from pos_bench.redact import escaped

REDIRECTS = frozenset({301, 302, 303, 307, 308})
CHUNK = 65536
"""The most one read of a reply body asks for."""
STREAM_PACE = 0.05
"""The least time between two reads of the socket while a streamed reply (server-sent events) arrives, while
its events come closer together than this.

A serving stack sends each token as an event of its own, and a client that wakes for each one pays a wakeup per
token: against a loopback server sending 1,000 one-token events 1 ms apart, about 70 µs of CPU per event, where the
same events read from the buffer cost 12 µs each. Waiting until this long after the last read that found nothing
more lets the events that came meanwhile be read at once (68–72 → 20–24 ms of CPU per call there); a reply ends at
most this much later, and a server's silence is seen after `timeout` plus this (docs/fullsize.md).

A server whose events come further apart than this (one every 0.1 s, the tokens decoded meanwhile together) is
read as they come: a sleep before each read would gather nothing and cost a second wakeup per event
(`_BoundedSocket.recv_into`)."""
CLOSE_READS = 2
"""Reads in a row, each less than `STREAM_PACE` after the one before, from which the pace's sleep comes first."""
CAUGHT_UP_AT_ONCE = 0.002
"""A read after the pace's sleep that waited less than this found its data there: the sleep gathered events."""


class CrossOriginRedirect(Exception):
    """The server redirected a request to another origin; nothing was sent there."""


def origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    """Scheme, host and port (the default one for the scheme when none is given)."""
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, port


class ProxyRefused(ConnectionError):
    """The proxy answered a CONNECT with something other than 2xx: there is no tunnel, and nothing was sent to
    the endpoint."""


class UnsupportedProxy(RuntimeError):
    """The environment names a proxy this transport cannot use (one whose URL is not `http://`) for an endpoint."""


@dataclass(frozen=True)
class Proxy:
    """A proxy the environment names (`environment_proxies`)."""

    host: str
    """IDNA-encoded, without brackets."""
    port: int
    authorization: bytes | None = field(default=None, repr=False)
    """The `Proxy-Authorization` value (Basic) when the proxy's URL carries credentials; never in a message."""
    unsupported: str = ""
    """Why the proxy cannot be used (its URL is not `http://`), for `UnsupportedProxy`; empty when it can."""

    @property
    def shown(self) -> str:
        """The proxy as messages name it: its host and port, never its credentials."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def proxy_variable(key: str) -> str:
    """The variable that named the proxy of `key` (`http://`, `https://`, `all://`): the lower-case one when it
    is set, as the standard library reads them, else the upper-case one."""
    name = key.partition(":")[0] + "_proxy"
    if os.environ.get(name):
        return name
    if os.environ.get(name.upper()):
        return name.upper()
    return f"{name.upper()} (here the system's settings)"  # macOS, Windows: read when no variable is set


def http_proxy(text: str, variable: str) -> Proxy:
    """The proxy `variable` names in `text`, `unsupported` unless it is an `http://` URL with a host. The reason
    names the proxy by scheme, host and port at most, never its credentials."""
    try:
        url = httpx2.URL(text)
    except (httpx2.InvalidURL, ValueError):
        url = None
    if url is None or url.scheme != "http" or not url.host:
        if url is None:
            named = "something that is not a URL (not shown: it may hold credentials)"
        else:
            named = f"{url.scheme}://{url.netloc.decode('ascii')}" if url.host else f"a {url.scheme}: URL"
        why = (
            f"{variable} names the proxy {named}: only http:// proxies are supported (an https endpoint is "
            f"reached through a CONNECT tunnel in one); set {variable} to one, or name the endpoint's host in "
            "NO_PROXY"
        )
        return Proxy("", 0, unsupported=why)
    auth = httpx2.Proxy(url).raw_auth  # the credentials percent-decoded, as httpx sends them
    return Proxy(
        url.raw_host.decode("ascii"),
        url.port or 80,
        None if auth is None else b"Basic " + base64.b64encode(b"%s:%s" % auth),
    )


def environment_proxies() -> list[tuple[URLPattern, Proxy | None]]:
    """The proxies the environment names, read as httpx2 reads them for a client built without a transport
    (`httpx2`'s `get_environment_proxies`: `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY`, the lower-case
    form of each winning; a proxy without a scheme is http://; `NO_PROXY=*` turns them all off; loopback is not
    exempt unless `NO_PROXY` names it), each under the pattern httpx2 mounts it on, the most specific first: a URL
    goes through the first pattern that matches it, and straight to its origin when that one's proxy is None
    (`NO_PROXY`) or none matches."""
    mounts = [
        (URLPattern(key), None if url is None else http_proxy(url, proxy_variable(key)))
        for key, url in get_environment_proxies().items()
    ]
    return sorted(mounts, key=lambda mount: mount[0])


NO_PROXY_NAMES = ("no_proxy", "NO_PROXY")


def reached_directly(host: str) -> None:
    """Name `host` in `NO_PROXY` (in each of its two spellings that is set; the lower-case one wins), for this
    process and those it starts: for a server of our own on loopback (the full-size check's stand-in, the
    reliability campaign's servers), which a proxy the environment names for the user's endpoints (`HTTPS_PROXY`…,
    honoured here and by urllib) cannot reach. Loopback is not exempt by itself, as with httpx."""
    names = [name for name in NO_PROXY_NAMES if os.environ.get(name)] or ["NO_PROXY"]
    for name in names:
        os.environ[name] = ",".join(part for part in (os.environ.get(name, ""), host) if part)


def authority(url: httpx2.URL) -> bytes:
    """`host:port` of `url` (the port always, an IPv6 host in brackets): a CONNECT's target."""
    host = url.raw_host
    if b":" in host:
        host = b"[" + host + b"]"
    return b"%s:%d" % (host, origin(url)[2] or 0)


def request_form(url: httpx2.URL, proxy: Proxy | None) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
    """How a request to `url` is written on a connection that goes through `proxy`: its target and the headers
    the proxy needs. To an http endpoint through a proxy, the whole URL (absolute form) and `Proxy-Authorization`
    when the proxy has credentials; otherwise the path and query, and nothing more (through a CONNECT tunnel the
    endpoint reads the request, not the proxy)."""
    if proxy is None or url.scheme != "http":
        return url.raw_path, ()
    target = url.raw_scheme + b"://" + url.netloc + url.raw_path
    return target, (() if proxy.authorization is None else ((b"Proxy-Authorization", proxy.authorization),))


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
        self._close_reads = 0
        """How many reads in a row came less than the pace after the one before (a read after the pace's sleep
        that found its data there counts as enough): from two on, the pace's sleep comes before the next read.
        One close pair is not enough: a server writes a reply's head and first event, or its last events, a
        moment apart."""
        self._files = 0
        self._closed = False

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        slept = False
        gathering = self._close_reads >= CLOSE_READS
        if self.pace and gathering and (wait := self._caught_up_at + self.pace - time.monotonic()) > 0:
            time.sleep(max(0.0, min(wait, remaining())))
            slept = True
        self.sock.settimeout(bounded(self.timeouts.get("read"), _Expired))
        started = time.monotonic()
        read = self.sock.recv_into(buffer, nbytes, flags)
        now = time.monotonic()
        if self.pace:  # sleep before the next read only while that gathers events (`STREAM_PACE`)
            if slept:
                self._close_reads = CLOSE_READS if now - started < CAUGHT_UP_AT_ONCE else 0
            else:
                self._close_reads = self._close_reads + 1 if now - self._caught_up_at < self.pace else 0
        if read < (nbytes or len(buffer)):  # less than asked: nothing more had come
            self._caught_up_at = now
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
    """One kept-alive connection to an origin, straight or through `proxy`; `connect` (to the proxy, its CONNECT
    and the answer to it included) and the TLS handshake end by the deadline, and the socket it hands
    `http.client` bounds each read and write (`_BoundedSocket`)."""

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int,
        ssl_context: Any,
        proxy: Proxy | None = None,
        target: bytes = b"",
    ):
        super().__init__(host, port)
        self.scheme, self.ssl_context = scheme, ssl_context
        self.proxy = proxy
        """The proxy the connection goes through: a CONNECT tunnel to an https origin, the requests themselves
        (in absolute form, `request_form`) to an http one."""
        self.target = target
        """The origin's `host:port` (`authority`), what a CONNECT asks for."""
        self.timeouts: dict[str, Any] = {}
        """The per-operation timeouts of the request in flight (httpx's `timeout` extension); its socket reads
        them."""

    def connect(self) -> None:
        connect_s = bounded(self.timeouts.get("connect"), _Expired)
        to = (self.host, self.port) if self.proxy is None else (self.proxy.host, self.proxy.port)
        sock = socket.create_connection(to, connect_s)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.scheme == "https":
                if self.proxy is not None:
                    self._open_tunnel(sock, self.proxy)
                sock.settimeout(bounded(self.timeouts.get("connect"), _Expired))
                sock = self.ssl_context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        self.sock = _BoundedSocket(sock, self.timeouts)

    def _open_tunnel(self, sock: socket.socket, proxy: Proxy) -> None:
        """Ask `proxy` for a tunnel to the origin (`CONNECT host:port`) and read the head of its answer, each
        socket operation within the connect timeout and the deadline; anything but 2xx is `ProxyRefused`. The
        answer is read a byte at a time, so nothing past its head is taken from what the tunnel carries."""
        request = b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n" % (self.target, self.target)
        if proxy.authorization is not None:
            request += b"Proxy-Authorization: " + proxy.authorization + b"\r\n"
        connect_s = self.timeouts.get("connect")
        bounded_sock = _BoundedSocket(sock, {"read": connect_s, "write": connect_s})
        bounded_sock.sendall(request + b"\r\n")
        with bounded_sock.makefile("rb", 1) as reader:
            _, status, reason, _ = wire.read_head(reader)
        if not 200 <= status < 300:
            raise ProxyRefused(
                f"the proxy {proxy.shown} answered CONNECT {self.target.decode('latin-1')} with {status} "
                f"{escaped(reason)[:200]}: no tunnel, nothing was sent to the endpoint"
            )


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
    """One connection per origin, bounded by the deadline, straight to the origin or through the proxy the
    environment names for it (read once, here: `environment_proxies`); `ssl_context` verifies https, the
    endpoint's certificate and host name through a tunnel too."""

    def __init__(self, ssl_context: Any, max_reply_bytes: int):
        self.ssl_context = ssl_context
        self.max_reply_bytes = max_reply_bytes
        self.connections: dict[tuple[str, str, int | None], _Connection] = {}
        self.proxies = environment_proxies()

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
            connection = self.connections[key] = _Connection(
                scheme, host, port or 0, self.ssl_context, self.proxy_for(url), authority(url)
            )
        if connection.sock is not None and connection.sock.dropped():
            connection.close()
        return connection

    def proxy_for(self, url: httpx2.URL) -> Proxy | None:
        """The proxy a request to `url` goes through (None: straight to its origin), as httpx2 picks its mount;
        `UnsupportedProxy` when the environment names one that is not http:// (`endpoint.py` asks for the
        endpoint's when it builds the client, so the error comes then)."""
        for pattern, proxy in self.proxies:
            if pattern.matches(url):
                if proxy is not None and proxy.unsupported:
                    raise UnsupportedProxy(proxy.unsupported)
                return proxy
        return None

    def request_form(self, url: httpx2.URL) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
        """The target and the proxy's headers of a request to `url` on this transport (`request_form`): what
        `send_whole`'s caller writes into the request (`direct.route`)."""
        return request_form(url, self.proxy_for(url))

    def send_whole(
        self, url: httpx2.URL, request: bytes, timeouts: Mapping[str, float | None], *, events: bool = False
    ) -> Whole:
        """Send `request` (`wire.request_bytes`, to `url`'s origin, in the form `request_form` gives) on the
        origin's kept connection and read the reply whole (`wire.read_reply`), each socket operation within
        `timeouts` and the thread's deadline, the body within `max_reply_bytes`; `events` for a reply that comes
        as server-sent events, read at `STREAM_PACE` as it arrives. A connection whose reply was not
        read to its end, or that the reply ends, is closed. Failures are the httpx errors the SDKs classify
        (`httpx_errors`, without a request), and `ReplyTooLarge`; a redirect is returned as any reply (the caller
        sends the request again through `handle_request`, which refuses another origin)."""
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
            sock.pace = STREAM_PACE if events else 0.0
            try:
                with httpx_errors(None, "read"):
                    whole = wire.read_reply(reader, self.max_reply_bytes)
            finally:
                sock.pace = 0.0
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
        target, proxy_headers = request_form(request.url, connection.proxy)
        with httpx_errors(request, "write"):
            connection.putrequest(
                request.method,
                target.decode("ascii"),
                skip_host=True,
                skip_accept_encoding=True,
            )
            for name, value in (*request.headers.raw, *proxy_headers):
                connection.putheader(name, value)
            connection.endheaders(body or None)
        with httpx_errors(request, "read"):
            return connection.getresponse(), sock

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()
