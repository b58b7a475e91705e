"""The exchange of a reply read whole, on the wire: against a loopback server that writes exactly the bytes a test
gives it, every way HTTP/1.1 may frame a body (a length, chunks with trailers, the connection's end), the content
codings asked for, informational replies, and each malformed or endless reply ending in the error `http.client`
would raise, or in the byte bound, with memory flat. End to end through the OpenAI model, a chunked gzip reply and
a key that would break the header."""

from __future__ import annotations

import gzip
import http.client
import socket
import threading
import tracemalloc
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pos_bench.models import wire
from pos_bench.models.openai import OpenAIModel
from pos_bench.models.retry import TransientError
from pos_bench.types import Message, Prompt

COMPLETION = (
    b'{"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}], '
    b'"usage": {"prompt_tokens": 3, "completion_tokens": 1}}'
)


@contextmanager
def canned(*replies: bytes | Iterator[bytes]) -> Iterator[tuple[int, list[bytes]]]:
    """A loopback server that answers the requests of one connection with `replies` in turn (bytes, or the
    pieces of an endless reply), then closes it; yields its port and the requests it read."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    seen: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                break
            except TimeoutError:
                continue
        else:
            return
        conn.settimeout(None)
        with conn, conn.makefile("rb") as reader:
            for reply in replies:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                seen.append(head + reader.read(length))
                try:
                    for piece in [reply] if isinstance(reply, bytes) else reply:
                        conn.sendall(piece)
                except OSError:  # the client hung up
                    return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], seen
    finally:
        stop.set()
        thread.join(10)
        listener.close()


def exchange(port: int, limit: int = 1 << 20, requests: int = 1) -> list[wire.Whole]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        out = []
        for _ in range(requests):
            sock.sendall(wire.request_bytes(b"POST", b"/v1/x", wire.header_block(b"h", []), b"{}"))
            with sock.makefile("rb") as reader:
                out.append(wire.read_reply(reader, limit))
        return out


def test_a_body_framed_by_its_length_by_chunks_or_by_the_end_of_the_connection_is_read_whole():
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n"
    by_length = b"HTTP/1.1 201 Created\r\nContent-Length: 3\r\nX-A: 1\r\nx-a: 2\r\n\r\nabc"
    with canned(chunked, by_length) as (port, seen):
        first, second = exchange(port, requests=2)
    assert (first.version, first.status, first.body, first.keep) == ("HTTP/1.1", 200, b"hello world", True)
    assert (second.status, second.reason, second.body, second.header(b"x-a")) == (
        201,
        "Created",
        b"abc",
        b"2",
    )
    assert seen[0].startswith(b"POST /v1/x HTTP/1.1\r\nHost: h\r\n") and seen[0].endswith(
        b"Content-Length: 2\r\n\r\n{}"
    )
    with canned(b"HTTP/1.0 200 OK\r\n\r\nto the end") as (port, _):
        (whole,) = exchange(port)
    assert (whole.version, whole.body, whole.keep) == ("HTTP/1.0", b"to the end", False)


@pytest.mark.parametrize(
    ("head", "keep"),
    [
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n", False),
        (b"HTTP/1.0 200 OK\r\n", False),
        (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n", True),
        (b"HTTP/1.1 200 OK\r\n", True),
    ],
)
def test_whether_the_connection_carries_another_request_is_read_from_the_reply(head, keep):
    with canned(head + b"Content-Length: 2\r\n\r\nok") as (port, _):
        (whole,) = exchange(port)
    assert (whole.body, whole.keep) == (b"ok", keep)


def test_informational_replies_are_skipped_and_204_has_no_body():
    with canned(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n") as (port, _):
        (whole,) = exchange(port)
    assert (whole.status, whole.body) == (204, b"")


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        (b"gzip", gzip.compress),
        (b"deflate", zlib.compress),
        (b"deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some servers send it
    ],
)
def test_the_content_codings_asked_for_are_decoded(coding, encode):
    body = encode(COMPLETION)
    reply = b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n%s" % (
        coding,
        len(body),
        body,
    )
    with canned(reply) as (port, seen):
        (whole,) = exchange(port)
    assert whole.body == COMPLETION
    assert b"Accept-Encoding" not in seen[0]  # none was given to `header_block` here
    assert wire.header_block(b"h", [(b"Accept-Encoding", b"br, zstd")]).endswith(
        b"Accept-Encoding: gzip, deflate\r\n"
    )


@pytest.mark.parametrize(
    ("reply", "error", "words"),
    [
        (b"", http.client.RemoteDisconnected, "without response"),
        (b"SMTP ready\r\n\r\n", http.client.BadStatusLine, "SMTP"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70000 + b"\r\n\r\n", http.client.LineTooLong, "header line"),
        (
            b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * 101 + b"\r\n",
            http.client.HTTPException,
            "more than 100 headers",
        ),
        (b"HTTP/1.1 200 OK\r\nbroken\r\n\r\n", http.client.HTTPException, "without a colon"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", http.client.IncompleteRead, "5 bytes read"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            http.client.HTTPException,
            "two",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", http.client.HTTPException, "no length"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            http.client.HTTPException,
            "no number",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\nx",
            http.client.HTTPException,
            "not asked",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
            http.client.HTTPException,
            "decode",
        ),
    ],
)
def test_a_malformed_or_cut_short_reply_is_the_error_http_client_would_raise(reply, error, words):
    with canned(reply) as (port, _), pytest.raises(error) as raised:
        exchange(port)
    assert words in str(raised.value) or words in repr(raised.value)


def endless_chunks() -> Iterator[bytes]:
    yield b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    piece = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"
    for _ in range(4096):  # 64 MB at most, or until the client hangs up
        yield piece


@pytest.mark.parametrize(
    "reply",
    [
        endless_chunks(),
        iter([b"HTTP/1.0 200 OK\r\n\r\n"] + [b"y" * 65536] * 1024),
        iter([b"HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\nz"]),
        iter(
            [
                b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
                % len(bomb := gzip.compress(b"0" * (8 << 20))),
                bomb,
            ]
        ),
    ],
    ids=["chunked", "to-close", "said-length", "gzip-bomb"],
)
def test_a_reply_past_the_bound_is_cut_with_flat_memory(reply):
    limit = 1 << 20
    with canned(reply) as (port, _):
        tracemalloc.start()
        try:
            with pytest.raises(wire.ReplyTooLarge, match="passed 1,048,576 bytes"):
                exchange(port, limit)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 4 * limit


def test_a_header_http_forbids_is_refused_by_name_without_its_value():
    with pytest.raises(RuntimeError, match="'Authorization'") as raised:
        wire.header_block(b"h", [(b"Authorization", b"Bearer sk-abc\r\nX-Evil: 1")])
    assert "sk-abc" not in str(raised.value)
    with pytest.raises(RuntimeError, match="holds a character"):
        wire.header_block(b"h", [(b"Bad Name", b"v")])


def test_a_chunked_gzip_completion_reaches_the_model_and_the_connection_is_kept(monkeypatch):
    body = gzip.compress(COMPLETION)
    reply = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    )
    monkeypatch.setenv("WIRE_TEST_KEY", "sk-wire-test-0123456789")
    with canned(reply, reply) as (port, seen):
        model = OpenAIModel(
            "m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env="WIRE_TEST_KEY", timeout=10
        )
        prompt = Prompt(messages=(Message("user", "hello"),))
        texts = [model.generate(prompt).text for _ in range(2)]  # on one connection: the server takes one
    assert texts == ["hi", "hi"]
    assert b"Authorization: Bearer sk-wire-test-0123456789\r\n" in seen[0]
    assert b"Accept-Encoding: gzip, deflate\r\n" in seen[0]


def test_a_key_with_a_line_break_inside_is_refused_before_anything_is_sent(monkeypatch):
    monkeypatch.setenv("WIRE_TEST_KEY", "sk-wire\r\nX-Injected: 1")
    with canned(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") as (port, seen):
        model = OpenAIModel(
            "m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env="WIRE_TEST_KEY", timeout=10
        )
        with pytest.raises(RuntimeError, match="header 'Authorization' holds a character") as raised:
            model.generate(Prompt(messages=(Message("user", "hello"),)))
    assert seen == []  # nothing was sent
    assert not isinstance(raised.value, TransientError)  # a setting to fix, not a failure to retry
    assert "X-Injected" not in str(raised.value)
