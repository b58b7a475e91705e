"""The stand-in's HTTP side: `GET /v1/models`, `POST /v1/chat/completions` (whole or streamed as server-sent
events), `GET /standin/stats`, on 127.0.0.1.

A thread per connection (the standard library's threading server, as the project's loopback test stubs use),
each asleep on an event while its request is served: a hundred requests in flight cost threads, not CPU. One
more thread keeps the service clock (`service.py`), sleeping until the next phase change or a new request.
Usage counts come from the o200k_base tokenizer (`bpe-openai`, a core dependency) over a plain chat template;
`usage.prompt_tokens_details.cached_tokens` comes from the prefix cache (`prefix.py`).
"""

from __future__ import annotations

import itertools
import json
import random
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from pos_bench.standin.prefix import PrefixCache
from pos_bench.standin.replies import reply_text
from pos_bench.standin.service import Changes, Clock, ServiceModel
from pos_bench.standin.wire import Answer, chat_template, chunk, completion, error_body, usage

TOKENIZER = "o200k_base"


@dataclass(frozen=True)
class Faults:
    """Requests refused at once, drawn in arrival order from a seeded generator."""

    rate_429: float = 0.0
    """Share answered `429 Too Many Requests` (with `Retry-After`)."""
    rate_5xx: float = 0.0
    """Share answered `500 Internal Server Error`."""
    retry_after_s: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not (0 <= self.rate_429 <= 1 and 0 <= self.rate_5xx <= 1 and self.rate_429 + self.rate_5xx <= 1):
            raise ValueError(
                f"fault rates must be in [0, 1] and sum to ≤ 1, got {self.rate_429}, {self.rate_5xx}"
            )


@dataclass(frozen=True)
class Settings:
    service: ServiceModel = field(default_factory=ServiceModel)
    faults: Faults = field(default_factory=Faults)
    served_name: str = "standin"
    """The model id `/v1/models` lists (completions answer whatever model a request names)."""
    cache_tokens: int = 400_000
    """Prefix-cache room in tokens: the KV cache an 8B model leaves free on an 80 GB GPU (docs/fullsize.md)."""
    chunk_seconds: float = 0.1
    """How often a streamed reply sends the tokens decoded since its last chunk."""
    reply_tokens: int = 0
    """The fewest output tokens a reply has: a shorter schema-valid reply is followed by spaces, one per token
    missing (counted so, not tokenised), up to the request's `max_tokens`; so a slow stand-in can be made to
    write replies as long as a real model's (the 15 tokens/s check of docs/fullsize.md)."""

    def __post_init__(self) -> None:
        if self.reply_tokens < 0:
            raise ValueError(f"reply_tokens must be ≥ 0, got {self.reply_tokens}")
        if not self.chunk_seconds > 0:
            raise ValueError(f"chunk_seconds must be > 0, got {self.chunk_seconds}")


@dataclass(frozen=True)
class Stats:
    """What the stand-in served since it started (`GET /standin/stats`)."""

    requests: int = 0
    answered: int = 0
    streamed: int = 0
    """Of the answered requests, those sent as server-sent events (`stream: true`)."""
    refused_429: int = 0
    failed_5xx: int = 0
    client_gone: int = 0
    """Requests whose client closed the connection before the reply was sent."""
    in_flight: int = 0
    max_in_flight: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    cpu_seconds: float = 0.0
    """The stand-in process's CPU time since it started (all its threads)."""


class Listener(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
    """A backlog as deep as real servers keep: with the default 5, a burst of connections loses SYNs, which
    clients resend only after a second, a delay no real endpoint adds."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that closed its kept-alive connection (a worker that ended) is no error; others are."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class StandinServer:
    def __init__(self, settings: Settings = Settings(), *, port: int = 0):
        import bpe_openai  # a core dependency; imported here so that importing the package stays light

        self.settings = settings
        self.port = port
        self._encoding = bpe_openai.get_encoding(TOKENIZER)
        self._clock = Clock(settings.service)
        self._cache = PrefixCache(settings.cache_tokens)
        self._draws = random.Random(settings.faults.seed)
        self._keys = itertools.count()
        self._events: dict[int, tuple[threading.Event, threading.Event]] = {}
        self._counts: dict[str, int] = dict.fromkeys(
            ("requests", "answered", "streamed", "refused_429", "failed_5xx", "client_gone", "max_in_flight",
             "prompt_tokens", "cached_tokens", "output_tokens"), 0
        )  # fmt: skip
        self._lock = threading.Condition()
        self._started = time.monotonic()
        self._cpu = time.process_time()
        self._running = False
        self._server: Listener | None = None
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        """The OpenAI base URL (`…/v1`)."""
        if self._server is None:
            raise RuntimeError("start the stand-in first")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> Self:
        self._server = Listener(("127.0.0.1", self.port), _handler(self))
        self._running = True
        self._threads = [
            threading.Thread(target=self._keep_time, name="standin-clock", daemon=True),
            threading.Thread(target=self._server.serve_forever, name="standin-http", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        with self._lock:
            self._running = False
            self._lock.notify_all()
        self._server.shutdown()
        self._server.server_close()
        self._server = None
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> Stats:
        with self._lock:
            return Stats(
                **self._counts,
                in_flight=self._clock.in_flight,
                cpu_seconds=round(time.process_time() - self._cpu, 3),
            )

    def _now(self) -> float:
        return time.monotonic() - self._started

    def _keep_time(self) -> None:
        with self._lock:
            while self._running:
                self._signal(self._clock.advance(self._now()))
                when = self._clock.next_event()
                self._lock.wait(None if when is None else max(when - self._now(), 0.0))

    def _signal(self, changes: Changes) -> None:
        for key in changes.first_token:
            self._events[key][0].set()
        for key in changes.done:
            self._events[key][0].set()
            self._events[key][1].set()

    def fault(self) -> str | None:
        """This request's injected fault, if any: `429` or `5xx`."""
        faults = self.settings.faults
        with self._lock:
            self._counts["requests"] += 1
            draw = self._draws.random()
            kind = (
                "429"
                if draw < faults.rate_429
                else "5xx"
                if draw < faults.rate_429 + faults.rate_5xx
                else None
            )
            if kind:
                self._counts["refused_429" if kind == "429" else "failed_5xx"] += 1
            return kind

    def admit(self, body: Mapping[str, Any]) -> Answer:
        """Make the reply, count its tokens, and put it in the service clock."""
        text = reply_text(body)
        prompt = self._encoding.encode_ordinary(chat_template(body.get("messages") or ()))
        output = self._encoding.encode_ordinary(text)
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        limit = limit if isinstance(limit, int) and limit > 0 else None
        finish = "stop"
        if limit is not None and limit < len(output):
            output, finish = output[:limit], "length"
            text = self._encoding.decode(output)
        written = len(output)
        padding = min(self.settings.reply_tokens, limit or self.settings.reply_tokens) - written
        if padding > 0:
            text, written = text + " " * padding, written + padding
        with self._lock:
            cached = self._cache.read(prompt)
            key = next(self._keys)
            self._events[key] = (threading.Event(), threading.Event())
            changes = self._clock.admit(
                key, read_tokens=len(prompt) - cached, output_tokens=written, now=self._now()
            )
            self._signal(changes)
            self._counts["max_in_flight"] = max(self._counts["max_in_flight"], self._clock.in_flight)
            self._lock.notify_all()
        return Answer(key, text, len(prompt), cached, written, finish)

    def wait_first_token(self, answer: Answer) -> None:
        self._events[answer.key][0].wait()

    def wait_done(self, answer: Answer, timeout: float | None = None) -> bool:
        return self._events[answer.key][1].wait(timeout)

    def produced(self, answer: Answer) -> int:
        with self._lock:
            self._signal(self._clock.advance(self._now()))
            return self._clock.progress(answer.key).produced

    def release(self, answer: Answer, *, sent: bool, streamed: bool = False) -> None:
        """The request is over: answered (`sent`, as a stream or whole), or its client left before that."""
        with self._lock:
            self._clock.release(answer.key)
            del self._events[answer.key]
            if sent:
                self._counts["answered"] += 1
                self._counts["streamed"] += streamed
                self._counts["prompt_tokens"] += answer.prompt_tokens
                self._counts["cached_tokens"] += answer.cached_tokens
                self._counts["output_tokens"] += answer.output_tokens
            else:
                self._counts["client_gone"] += 1
            self._lock.notify_all()


def _handler(server: StandinServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
        disable_nagle_algorithm = True  # headers and body leave in two writes; Nagle would hold the body back

        def log_message(self, *args: Any) -> None:
            return None

        def do_GET(self) -> None:
            path = self.path.rstrip("/")
            if path == "/v1/models":
                listing = {"object": "list", "data": [{"id": server.settings.served_name, "object": "model"}]}
                self.send_json(200, listing)
            elif path == "/health":
                self.send_json(200, {"status": "ok"})
            elif path == "/standin/stats":
                self.send_json(200, asdict(server.stats()))
            else:
                self.send_json(404, error_body(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") != "/v1/chat/completions":
                self.send_json(404, error_body(f"no route {self.path}", "not_found"))
                return
            try:
                request = json.loads(body or b"{}")
            except ValueError as error:
                self.send_json(400, error_body(f"the body is not JSON: {error}", "invalid_request_error"))
                return
            fault = server.fault()
            if fault == "429":
                after = {"Retry-After": f"{server.settings.faults.retry_after_s:g}"}
                self.send_json(429, error_body("stand-in rate limit", "rate_limit_error"), after)
                return
            if fault == "5xx":
                self.send_json(500, error_body("stand-in internal error", "server_error"))
                return
            try:
                answer = server.admit(request)
            except ValueError as error:
                self.send_json(400, error_body(str(error), "invalid_request_error"))
                return
            sent = False
            try:
                if request.get("stream"):
                    self.stream(request, answer)
                else:
                    server.wait_done(answer)
                    self.send_json(200, completion(request, answer))
                sent = True
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout); the request is dropped as a server drops it
            finally:
                server.release(answer, sent=sent, streamed=bool(request.get("stream")))

        def stream(self, request: Mapping[str, Any], answer: Answer) -> None:
            server.wait_first_token(answer)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.event(chunk(request, answer, {"role": "assistant", "content": ""}, None))
            shown, total = 0, max(answer.output_tokens, 1)
            done = False
            while not done:
                done = server.wait_done(answer, server.settings.chunk_seconds)
                upto = len(answer.text) if done else len(answer.text) * server.produced(answer) // total
                if upto > shown:
                    self.event(chunk(request, answer, {"content": answer.text[shown:upto]}, None))
                    shown = upto
            self.event(chunk(request, answer, {}, answer.finish_reason))
            if (request.get("stream_options") or {}).get("include_usage"):
                self.event({**chunk(request, answer, {}, None), "choices": [], "usage": usage(answer)})
            self.write_chunk(b"data: [DONE]\n\n")
            self.write_chunk(b"")

        def event(self, payload: Mapping[str, Any]) -> None:
            self.write_chunk(f"data: {json.dumps(payload)}\n\n".encode())

        def write_chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler
