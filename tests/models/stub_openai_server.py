"""A loopback server speaking enough of the OpenAI chat-completions protocol to test the real SDK over HTTP.

Stdlib only (`http.server` on 127.0.0.1, port 0, in a thread). Each request may be answered after a fixed
`delay`, and faults are injected from a queue: `"429"` (with `Retry-After`), `"500"`, `"hang"` (sleep past
the client's timeout), `"malformed"` (a 200 whose body is not JSON), `"drip"` (a normal answer whose body
leaves one byte per `drip_interval` after prompt headers), `"drip_headers"` (the status line and headers
too, byte by byte), `"400"` (a request refused as such) and `"overflow"` (the 400 an OpenAI-compatible server
sends for a prompt longer than the context): each read of the client returns in time, only a deadline on the whole call stops them. The stub records what it received and the
highest number of requests it had in flight at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

PATIENT = 30.0
"""Client timeout (seconds) for tests that inject no hang: far above any loopback answer on a loaded machine."""
IMPATIENT = 1.0
"""Client timeout (seconds) for tests that inject a hang; a hang sleeps three times as long."""

Answer = Callable[[Mapping[str, Any]], str]
"""Computes the reply text from the decoded request body."""


def pick_listed_action(body: Mapping[str, Any]) -> str:
    """A deterministic policy for the toy household: an action chosen from the prompt's list by a hash of the
    prompt, so replies depend only on the request (what record/replay needs)."""
    text = json.dumps(body.get("messages", body), sort_keys=True)
    last = body["messages"][-1]["content"] if body.get("messages") else ""
    if isinstance(last, list):
        last = " ".join(part.get("text", "") for part in last)
    actions = re.findall(r"^- (.+)$", last, flags=re.MULTILINE)
    action = actions[int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(actions)] if actions else "look"
    return json.dumps({"thought": "stub step", "action": action})


def seeded_heads(name: str, seed: int) -> bool:
    """The stub's draw for one trial of one task: a fair coin seeded by the task's name and the trial's seed."""
    return random.Random(f"{name}#{seed}").random() < 0.5


def call_by_seeded_draw(body: Mapping[str, Any]) -> str:
    """A policy whose reply depends on a seeded draw per trial: the request's `seed` (absent: 0) and the task
    named in the prompt (`task <name>`) decide between the listed actions `heads` and `tails`."""
    text = " ".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
    name = re.search(r"task ([\w-]+)", text)
    call = "heads" if seeded_heads(name.group(1) if name else "", int(body.get("seed", 0))) else "tails"
    return json.dumps({"thought": "a seeded call", "action": call})


@dataclass
class Faults:
    """Faults to inject, consumed one per request in arrival order; `"ok"` answers normally. `rule`, when set,
    picks a fault from the request body first (a fault that follows one episode, whatever the thread order)."""

    queue: deque[str] = field(default_factory=deque)
    retry_after: str = "0"
    hang_seconds: float = 3 * IMPATIENT
    drip_interval: float = 1.0
    rule: Callable[[Mapping[str, Any]], str | None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def push(self, *faults: str) -> None:
        with self.lock:
            self.queue.extend(faults)

    def next(self, body: Mapping[str, Any]) -> str:
        chosen = self.rule(body) if self.rule else None
        if chosen:
            return chosen
        with self.lock:
            return self.queue.popleft() if self.queue else "ok"


class Listener(ThreadingHTTPServer):
    """A thread per connection, and a listen backlog as deep as real servers keep (uvicorn: 2048): with
    `socketserver`'s 5, a burst of new connections overflows it and the kernel drops their SYNs, which
    the clients resend only after a second, a delay no real endpoint adds."""

    daemon_threads = True
    request_queue_size = 1024


class TLSListener(Listener):
    """A `Listener` whose connections speak TLS (`tls`, a server-side context), each shaking hands in its own
    thread."""

    def __init__(self, address: tuple[str, int], handler: Any, tls: ssl.SSLContext):
        super().__init__(address, handler)
        self.tls = tls

    def finish_request(self, request: Any, client_address: Any) -> None:
        try:
            wrapped = self.tls.wrap_socket(request, server_side=True)
        except OSError:  # a client that does not trust the certificate, or hung up
            return
        with wrapped:
            super().finish_request(wrapped, client_address)


class StubServer:
    """A threaded loopback HTTP server; protocol subclasses implement `respond(path, body) -> (status, json)`."""

    def __init__(
        self,
        *,
        answer: Answer = pick_listed_action,
        delay: float = 0.0,
        model_id: str = "stub-model",
        tls: ssl.SSLContext | None = None,
    ):
        self.tls = tls
        """A server-side TLS context: the stub then speaks https (each connection's handshake in its own thread)."""
        self.answer = answer
        self.delay = delay
        self.model_id = model_id
        self.faults = Faults()
        self.fingerprint: str | None = None
        """Sent as `system_fingerprint` when set: the revision of the weights that answer."""
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.connections: set[tuple[str, int]] = set()
        """The client (host, port) of every connection a request came on."""
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start the stub first"
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    def start(self) -> StubServer:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do: no TCP handshake per request
            # Headers and body leave in two writes; with Nagle on, the body would wait for the client's
            # delayed ACK (tens of ms per reply), a latency no real server adds.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                stub._handle(self)

            def do_GET(self) -> None:  # `GET /v1/models`, the runner's endpoint check before a run
                if self.path.rstrip("/") == "/v1/models":
                    stub._send(
                        self, 200, {"object": "list", "data": [{"id": stub.model_id, "object": "model"}]}
                    )
                else:
                    stub._send(self, 404, stub.error_body(f"no route {self.path}"))

            def log_message(self, *args: Any) -> None:
                return None

        address = ("127.0.0.1", 0)
        server = Listener(address, Handler) if self.tls is None else TLSListener(address, Handler, self.tls)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        size = int(handler.headers.get("Content-Length", 0))
        body = json.loads(handler.rfile.read(size) or b"{}")
        fault = self.faults.next(body)
        with self._lock:
            self.requests.append(body)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            self.connections.add(handler.client_address[:2])
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        counted = True
        try:
            if self.delay:
                time.sleep(self.delay)
            if fault == "hang":
                time.sleep(self.faults.hang_seconds)
            # Uncounted before the answer leaves: once the client has read it, it may send its next request
            # before this thread would get to a later decrement, and the count would exceed what was in flight.
            with self._lock:
                self.in_flight -= 1
                counted = False
            if fault == "429":
                self._send(
                    handler, 429, self.error_body("rate limited"), {"Retry-After": self.faults.retry_after}
                )
            elif fault == "500":
                self._send(handler, 500, self.error_body("internal error"))
            elif fault == "400":
                self._send(handler, 400, self.error_body("unsupported parameter: tools"))
            elif fault == "overflow":
                overflow = {
                    "message": "This model's maximum context length is 8192 tokens. However, your messages "
                    "resulted in 9300 tokens. Please reduce the length of the messages.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
                self._send(handler, 400, {"error": overflow})
            elif fault == "malformed":
                self._send_raw(handler, 200, b'{"id": "x", "choices": [ {"trunc')
            elif fault in ("drip", "drip_headers"):
                status, payload = self.respond(handler.path, body)
                self._drip(handler, status, json.dumps(payload).encode(), headers_too=fault == "drip_headers")
            else:
                status, payload = self.respond(handler.path, body)
                self._send(handler, status, payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout) before we answered
        finally:
            if counted:
                with self._lock:
                    self.in_flight -= 1

    def _send(
        self, handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: Mapping[str, str] = {}
    ) -> None:
        self._send_raw(handler, status, json.dumps(payload).encode(), headers)

    @staticmethod
    def _send_raw(
        handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: Mapping[str, str] = {}
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _drip(self, handler: BaseHTTPRequestHandler, status: int, data: bytes, *, headers_too: bool) -> None:
        head = (
            f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        ).encode()
        if not headers_too:
            handler.wfile.write(head)
            handler.wfile.flush()
        for byte in [bytes([b]) for b in (head + data if headers_too else data)]:
            handler.wfile.write(byte)
            handler.wfile.flush()
            time.sleep(self.faults.drip_interval)

    def error_body(self, message: str) -> Any:
        return {"error": {"message": message, "type": "stub_error"}}

    def respond(self, path: str, body: Mapping[str, Any]) -> tuple[int, Any]:
        raise NotImplementedError


class StubOpenAI(StubServer):
    """`POST /v1/chat/completions` with usage counted as characters / 4. With `report_cached`, the usage also
    says how many prompt tokens a prefix cache would have served: the characters this request's messages share,
    from the start, with the previous request's, / 4 (as `prompt_tokens_details.cached_tokens`)."""

    report_cached: bool = False

    def respond(self, path: str, body: Mapping[str, Any]) -> tuple[int, Any]:
        if path != "/v1/chat/completions":
            return 404, self.error_body(f"no route {path}")
        text = self.answer(body)
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
        usage = {
            "prompt_tokens": prompt_chars // 4 + 1,
            "completion_tokens": len(text) // 4 + 1,
            "total_tokens": prompt_chars // 4 + len(text) // 4 + 2,
        }
        if self.report_cached:
            usage["prompt_tokens_details"] = {"cached_tokens": self.shared_prefix(body) // 4}
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", self.model_id),
            **({"system_fingerprint": self.fingerprint} if self.fingerprint else {}),
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
            ],
            "usage": usage,
        }

    def shared_prefix(self, body: Mapping[str, Any]) -> int:
        """Characters of this request's message contents that the previous request's also began with."""
        with self._lock:
            earlier = self.requests[-2] if len(self.requests) > 1 else {}
        now = "".join(str(m.get("content", "")) for m in body.get("messages", []))
        before = "".join(str(m.get("content", "")) for m in earlier.get("messages", []))
        return len(os.path.commonprefix([now, before]))
