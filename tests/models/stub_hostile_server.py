"""A loopback HTTP server that misbehaves on purpose, for the bounds every remote call must hold: it redirects
to another origin (or within its own), streams a reply that never ends (bounded: at most 64 MB, or until the
client hangs up), answers a models listing of the wrong shape, nested too deep or carrying terminal escapes, sends
usage values that are no token counts, or echoes the caller's key as the served model's name. With `keep_alive`
(HTTP/1.1, connections kept open between requests) it can also close a connection after a reply without saying so
(`drop`) or send 2 MB of reply (`large`). It records every request it got (method, path, lower-cased headers)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def completion(prompt_tokens: str = "3", served: str = "m") -> bytes:
    body = (
        f'{{"id": "c", "object": "chat.completion", "created": 0, "model": "{served}", "choices": [{{"index": 0, '
        '"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}], '
        f'"usage": {{"prompt_tokens": {prompt_tokens}, "completion_tokens": 1, "total_tokens": 4}}}}'
    )
    return body.encode()


class Server:
    """A loopback HTTP server whose answer to every request is chosen by `mode`; it records what it got."""

    def __init__(self, mode: str = "ok", elsewhere: str = "", *, keep_alive: bool = False):
        self.mode, self.elsewhere, self.seen = mode, elsewhere, []
        self.peers: list[int] = []
        """The client port of each request: one port for the requests of one connection."""
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                outer.answer(self)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length") or 0))
                outer.answer(self)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_port}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def answer(self, h: BaseHTTPRequestHandler) -> None:
        self.seen.append((h.command, h.path, {k.lower(): v for k, v in h.headers.items()}))
        self.peers.append(h.client_address[1])
        mode = self.mode
        if mode.startswith("redirect:"):  # another status or target: redirect:<status>:<url prefix>
            _, status, prefix = mode.split(":", 2)
            h.send_response(int(status))
            h.send_header("Location", prefix + h.path)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        if mode == "redirect" or (mode == "same-origin" and not h.path.startswith("/moved")):
            target = self.elsewhere + h.path if mode == "redirect" else "/moved" + h.path
            h.send_response(307)
            h.send_header("Location", target)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        if mode == "endless":  # bounded here: at most 64 MB, or until the client hangs up
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.end_headers()
            try:
                h.wfile.write(b'{"data": [')
                for _ in range(1024):
                    h.wfile.write(b'{"id": "m"},' * 5461)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        if h.command == "GET":
            body = {
                "deep": b"[" * 50_000 + b"]" * 50_000,
                "shape": b'{"data": 5}',
                "escape": b'{"data": [{"id": "evil\\u001b[2J"}]}',
            }.get(mode, b'{"data": [{"id": "m"}]}')
        elif mode == "large":  # 2 MB of a reply whose length is said, on a connection that is kept
            body = b" " * (2 << 20)
        elif mode == "echo":  # the served model's name is the caller's key
            body = completion(served=h.headers.get("authorization", "").removeprefix("Bearer "))
        else:
            body = completion(mode.removeprefix("usage:") if mode.startswith("usage:") else "3")
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        try:
            h.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # a client that stopped reading (`large`)
            return
        if mode == "drop":
            h.close_connection = True  # closed once the reply is written, with no `Connection: close` said

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@contextmanager
def servers(mode: str) -> Iterator[tuple[Server, Server]]:
    other = Server()
    first = Server(mode, elsewhere=other.url)
    try:
        yield first, other
    finally:
        first.close()
        other.close()
