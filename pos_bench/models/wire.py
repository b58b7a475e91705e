"""HTTP/1.1 on the wire for the exchange of every call whose reply is read whole: the request written in one
send, the reply's status line, headers and body read straight off the connection, within the same bounds as
every other read (the deadline, `max_reply_bytes`, and the standard library's limits on a line and on the
number of headers).

`http.client` and `httpx2` do the same with more generality: a header parsed by the `email` package, a request
and a response object each built and checked field by field. Between two calls of an episode an environment
step evicts all of that code and data from the CPU's caches, so each call paid for it afresh: 0.82 ms of CPU for
an ALFWorld-sized exchange on loopback with the caches cold, against 0.40 ms here (`scripts/bench_shortcuts.py
--cold 64`; docs/fullsize.md, "A reply read whole goes over the wire"). A streamed reply, a redirect and the
pre-flight check still go through `httpx2` (`transport.py`).

Failures are the standard library's (`http.client.HTTPException` and its subclasses for a malformed or cut-short
reply, `OSError` for the socket), as `http.client` would raise them, so callers classify both paths alike.
"""

from __future__ import annotations

import http.client
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

MAX_LINE = 65536
"""The longest status, header or chunk-size line read (`http.client`'s own limit)."""
MAX_HEADERS = 100
"""The most header lines one reply may have (`http.client`'s own limit)."""
ACCEPT_ENCODING = b"gzip, deflate"
"""The content codings asked for: the ones `decoded` reads."""

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FORBIDDEN_IN_VALUE = re.compile(rb"[\r\n\x00]")


class ReplyTooLarge(Exception):
    """A reply body passed `max_reply_bytes`; the rest was not read."""


@dataclass(frozen=True)
class Whole:
    """A reply read to its end."""

    status: int
    reason: str
    headers: list[tuple[bytes, bytes]]
    """As received, in order."""
    body: bytes
    """Decoded (`Content-Encoding`)."""
    keep: bool
    """The connection can carry another request."""
    version: str
    """The HTTP version the server's status line named (`HTTP/1.0`, `HTTP/1.1`)."""

    def header(self, name: bytes) -> bytes | None:
        """The last value of header `name` (lower case), or None."""
        found = None
        for key, value in self.headers:
            if key.lower() == name:
                found = value
        return found


def header_block(host: bytes, headers: Iterable[tuple[bytes, bytes]]) -> bytes:
    """The header lines of every request to `host` (`Host` first; no `Content-Length`, which each request adds;
    `Accept-Encoding` set to the codings read here), checked once: a name that is no HTTP token, or a value with a
    line break or NUL, is refused with the header's name, never its value (it may be the key)."""
    lines = [b"Host: " + host + b"\r\n"]
    for name, value in headers:
        lowered = name.lower()
        if lowered in (b"host", b"content-length", b"transfer-encoding"):
            continue
        if not _TOKEN.fullmatch(name) or _FORBIDDEN_IN_VALUE.search(value):
            raise RuntimeError(
                f"the request header {name.decode('latin-1')!r} holds a character HTTP does not allow there "
                "(a line break in an API key, say): nothing was sent"
            )
        lines.append(name + b": " + (ACCEPT_ENCODING if lowered == b"accept-encoding" else value) + b"\r\n")
    return b"".join(lines)


def request_bytes(method: bytes, target: bytes, head: bytes, body: bytes) -> bytes:
    """One whole request: the request line, `head` (`header_block`), the body's length, the body."""
    return b"%s %s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s" % (method, target, head, len(body), body)


def _line(reader: BinaryIO) -> bytes:
    line = reader.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise http.client.LineTooLong("header line")
    return line


def _status(reader: BinaryIO) -> tuple[bytes, int, str]:
    line = _line(reader)
    if not line:
        raise http.client.RemoteDisconnected("Remote end closed connection without response")
    parts = line.rstrip(b"\r\n").split(None, 2)
    if (
        len(parts) < 2
        or not parts[0].startswith(b"HTTP/1.")
        or not (parts[1].isdigit() and len(parts[1]) == 3)
    ):
        raise http.client.BadStatusLine(repr(line[:200]))
    return parts[0], int(parts[1]), (parts[2] if len(parts) > 2 else b"").decode("latin-1", "replace")


def _headers(reader: BinaryIO) -> list[tuple[bytes, bytes]]:
    headers: list[tuple[bytes, bytes]] = []
    while True:
        line = _line(reader)
        if line in (b"\r\n", b"\n", b""):
            return headers
        if len(headers) >= MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
        name, colon, value = line.partition(b":")
        if not colon:
            raise http.client.HTTPException(f"a header line without a colon: {line[:200]!r}")
        headers.append((name.strip(), value.strip()))


def _read_exactly(reader: BinaryIO, size: int) -> bytes:
    data = reader.read(size)
    if len(data) < size:
        raise http.client.IncompleteRead(data, size - len(data))
    return data


def _too_large(limit: int) -> ReplyTooLarge:
    return ReplyTooLarge(f"passed {limit:,} bytes (model.max_reply_bytes); the rest was not read")


def _chunked(reader: BinaryIO, limit: int) -> bytes:
    parts, total = [], 0
    while True:
        size_text = _line(reader).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise http.client.HTTPException(f"a chunk size that is no number: {size_text[:50]!r}") from None
        if size == 0:
            break
        total += size
        if total > limit:
            raise _too_large(limit)
        parts.append(_read_exactly(reader, size))
        _read_exactly(reader, 2)  # the chunk's closing CRLF
    for _ in range(MAX_HEADERS + 1):  # trailers, up to the blank line
        if _line(reader) in (b"\r\n", b"\n", b""):
            return b"".join(parts)
    raise http.client.HTTPException(f"got more than {MAX_HEADERS} trailers")


def _to_close(reader: BinaryIO, limit: int) -> bytes:
    parts, total = [], 0
    while chunk := reader.read1(65536):
        total += len(chunk)
        if total > limit:
            raise _too_large(limit)
        parts.append(chunk)
    return b"".join(parts)


def decoded(body: bytes, coding: bytes | None, limit: int) -> bytes:
    """`body` without its content coding (gzip or deflate, as asked for), at most `limit` bytes of it."""
    coding = (coding or b"identity").strip().lower()
    if coding in (b"identity", b""):
        return body
    if coding in (b"gzip", b"x-gzip"):
        inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
    elif coding == b"deflate":  # zlib-wrapped, as the standard says, or raw, as some servers send it
        inflate = zlib.decompressobj(zlib.MAX_WBITS if body[:1] == b"\x78" else -zlib.MAX_WBITS)
    else:
        raise http.client.HTTPException(f"a content coding that was not asked for: {coding[:50]!r}")
    try:
        out = inflate.decompress(body, limit + 1)
    except zlib.error as error:
        raise http.client.HTTPException(
            f"a {coding.decode('latin-1')} body that does not decode: {error}"
        ) from None
    if len(out) > limit:
        raise _too_large(limit)
    return out


def read_head(reader: BinaryIO) -> tuple[bytes, int, str, list[tuple[bytes, bytes]]]:
    """The HTTP version, status, reason and headers of a reply (informational 1xx replies skipped), read from
    `reader` up to the blank line that ends them, nothing past it."""
    version, status, reason = _status(reader)
    while 100 <= status < 200 and status != 101:
        _headers(reader)
        version, status, reason = _status(reader)
    return version, status, reason, _headers(reader)


def read_reply(reader: BinaryIO, limit: int, *, head_only: bool = False) -> Whole:
    """The reply to one request, read to its end from `reader` (informational 1xx replies skipped), its body at
    most `limit` bytes; `head_only` for a reply that has no body (to HEAD)."""
    version, status, reason, headers = read_head(reader)
    fields: dict[bytes, bytes] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered == b"content-length" and lowered in fields and fields[lowered] != value:
            raise http.client.HTTPException("two different Content-Length headers")
        fields[lowered] = value
    connection = fields.get(b"connection", b"").lower()
    keep = b"close" not in connection if version != b"HTTP/1.0" else b"keep-alive" in connection
    encoding = fields.get(b"transfer-encoding", b"").lower()
    if head_only or status in (101, 204, 304):
        body = b""
    elif encoding.rsplit(b",", 1)[-1].strip() == b"chunked":
        body = _chunked(reader, limit)
    elif b"content-length" in fields:
        text = fields[b"content-length"]
        if not text.isdigit():
            raise http.client.HTTPException(f"a Content-Length that is no length: {text[:50]!r}")
        if int(text) > limit:
            raise _too_large(limit)
        body = _read_exactly(reader, int(text))
    else:  # the body ends with the connection
        body, keep = _to_close(reader, limit), False
    body = decoded(body, fields.get(b"content-encoding"), limit)
    return Whole(status, reason, headers, body, keep, version.decode("latin-1"))
