"""A JSON POST on the SDK client's own HTTP client, or on its connection with the reply read whole: the request the
SDK would send, the errors it would raise, the log line its client would write. Through a real proxy on loopback:
a call keeps the client's path when the client has the proxy mounted; the environment's proxies (`HTTP_PROXY`,
`HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`) are honoured by the transport itself, a CONNECT tunnel to an https endpoint
(on a loopback TLS server with a certificate made here), the whole URL to an http one, the proxy's credentials in
`Proxy-Authorization` only, every bound kept."""

from __future__ import annotations

import base64
import datetime
import http.client
import ipaddress
import json
import logging
import select
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from pos_bench.models import endpoint
from pos_bench.models.deadline import deadline
from pos_bench.models.direct import post_json, post_whole, route
from pos_bench.models.endpoint import tls_for
from pos_bench.models.openai import OpenAIModel
from pos_bench.models.retry import TransientError
from pos_bench.models.transport import DeadlineTransport, UnsupportedProxy
from pos_bench.runner.endpoints import Endpoint, problem
from pos_bench.types import Message, Prompt
from tests.models.stub_openai_server import IMPATIENT, PATIENT, Listener, StubOpenAI
from tests.models.test_wire import canned

KEY = "sk-direct-test-0123456789"
BODY = {
    "model": "stub-model",
    "messages": [{"role": "user", "content": "Pick one, café ☕ 𝄞:\n- look\n- open fridge 1"}],
    "max_tokens": 16,
    "temperature": 0.0,
}
PROMPT = Prompt(messages=(Message("user", "Pick one:\n- look\n- open fridge 1"),))
PER_REQUEST = {"x-stainless-retry-count", "x-stainless-read-timeout", "x-stainless-raw-response"}
"""Headers the SDK's `post` adds for its own retry loop and raw-read mode, about the request rather than the
client."""


@pytest.fixture
def stub():
    with StubOpenAI() as server:
        yield server


def model_at(url: str, monkeypatch) -> OpenAIModel:
    monkeypatch.setenv("DIRECT_TEST_KEY", KEY)
    return OpenAIModel("stub-model", base_url=f"{url}/v1", api_key_env="DIRECT_TEST_KEY", timeout=PATIENT)


def client_of(stub: StubOpenAI, monkeypatch) -> openai.OpenAI:
    return model_at(stub.url, monkeypatch).client[1]


def answer(response: httpx2.Response) -> str:
    """The reply's text, its body read to the end (which keeps the connection)."""
    try:
        return json.loads(response.read())["choices"][0]["message"]["content"]
    finally:
        response.close()


def test_the_request_is_the_one_the_sdk_would_send(stub, monkeypatch):
    client = client_of(stub, monkeypatch)
    by_sdk = client.post(
        "/chat/completions",
        cast_to=httpx2.Response,
        body=BODY,
        options={"headers": {"X-Stainless-Raw-Response": "stream"}},
    )
    assert answer(by_sdk) == answer(post_json(openai, client, "chat/completions", BODY, PATIENT))
    whole = json.loads(post_whole(openai, client, "chat/completions", BODY, PATIENT))
    assert whole["choices"][0]["message"]["content"] == answer(by_sdk)
    by_sdk, direct, on_the_wire = stub.headers
    assert (
        stub.requests[0] == stub.requests[1] == stub.requests[2] == BODY
    )  # the non-ASCII text arrives as it was
    assert {k: v for k, v in by_sdk.items() if k not in PER_REQUEST} == direct == on_the_wire
    assert direct["authorization"] == f"Bearer {KEY}"
    assert direct["user-agent"].startswith("OpenAI/Python")
    assert direct["content-type"] == "application/json"
    assert len(stub.connections) == 1  # one kept connection for all three


@pytest.mark.parametrize(
    ("fault", "error"),
    [("429", openai.RateLimitError), ("500", openai.InternalServerError), ("400", openai.BadRequestError)],
)
@pytest.mark.parametrize("post", [post_json, post_whole])
def test_a_failed_status_raises_the_sdks_error_with_the_response(stub, monkeypatch, fault, error, post):
    client = client_of(stub, monkeypatch)
    stub.faults.retry_after = "3"
    stub.faults.push(fault)
    with pytest.raises(error) as raised:
        post(openai, client, "chat/completions", BODY, PATIENT)
    assert raised.value.status_code == int(fault)
    assert isinstance(raised.value.body, dict)  # the body was read, as the SDK reads it
    if fault == "429":
        assert raised.value.response.headers["retry-after"] == "3"
    assert answer(post_json(openai, client, "chat/completions", BODY, PATIENT))  # the connection serves on


@pytest.mark.parametrize("post", [post_json, post_whole])
def test_no_answer_in_time_is_the_sdks_timeout_and_no_server_its_connection_error(stub, monkeypatch, post):
    client = client_of(stub, monkeypatch)
    stub.faults.hang_seconds = 3.0
    stub.faults.push("hang")
    with pytest.raises(openai.APITimeoutError):
        post(openai, client, "chat/completions", BODY, 0.5)
    stub.stop()
    with pytest.raises(openai.APIConnectionError) as raised:
        post(openai, client, "chat/completions", BODY, 0.5)
    assert not isinstance(raised.value, openai.APITimeoutError)


@pytest.mark.parametrize("post", [post_json, post_whole])
def test_a_failed_status_is_logged_with_the_http_version_the_server_answered_in(monkeypatch, caplog, post):
    error = b'{"error": {"message": "overloaded", "type": "stub_error"}}'
    reply = (
        b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
    )
    caplog.set_level(logging.INFO, logger="httpx2")
    with canned(reply % (len(error), error)) as (port, seen):
        client = model_at(f"http://127.0.0.1:{port}", monkeypatch).client[1]
        with pytest.raises(openai.InternalServerError) as raised:
            post(openai, client, "chat/completions", BODY, PATIENT)
    assert len(seen) == 1 and raised.value.status_code == 503
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    assert f'HTTP Request: POST {url} "HTTP/1.0 503 Service Unavailable"' in caplog.messages
    assert not any("HTTP/1.1" in line for line in caplog.messages)


HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "transfer-encoding",
    "te",
}
"""Headers of one connection, which a proxy does not pass on."""


@dataclass
class ProxyLog:
    """What a loopback proxy took (`forward_proxy`)."""

    url: str
    lines: list[str] = field(default_factory=list)
    """The request lines, CONNECTs included."""
    headers: list[dict[str, str]] = field(default_factory=list)
    """The headers of each request, lower-cased names."""
    tunnelled: bytearray = field(default_factory=bytearray)
    """The bytes the client sent through its tunnels."""
    peers: set[tuple[str, int]] = field(default_factory=set)
    """The client (host, port) of every connection a request came on."""

    def with_credentials(self) -> str:
        return self.url.replace("http://", f"http://{PROXY_USER}:{PROXY_PASSWORD}@")


PROXY_USER, PROXY_PASSWORD = "proxy-user", "proxy-pass-s3cret"
PROXY_AUTHORIZATION = "Basic " + base64.b64encode(f"{PROXY_USER}:{PROXY_PASSWORD}".encode()).decode()


@contextmanager
def forward_proxy(connect: int | None = 200) -> Iterator[ProxyLog]:
    """A loopback HTTP proxy: it takes a request in absolute form (`POST http://host:port/path HTTP/1.1`), passes it
    to that origin and its reply back, and answers a `CONNECT host:port` with `connect`: 200 and a tunnel to that
    origin, another status and no tunnel, or (None) nothing at all."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def took(self) -> None:
            log.lines.append(self.requestline)
            log.headers.append({k.lower(): v for k, v in self.headers.items()})
            log.peers.add(self.client_address[:2])

        def do_POST(self) -> None:
            self.took()
            target = urllib.parse.urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=PATIENT)
            try:
                upstream.request(
                    "POST", target.path + (f"?{target.query}" if target.query else ""), body, headers
                )
                reply = upstream.getresponse()
                data = reply.read()
            finally:
                upstream.close()
            self.send_response(reply.status, reply.reason)
            for name, value in reply.getheaders():
                if name.lower() not in HOP_BY_HOP | {"content-length"}:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_CONNECT(self) -> None:
            self.took()
            if connect is None:
                stop.wait(PATIENT)  # the connection accepted, the CONNECT never answered
                self.close_connection = True
                return
            if connect != 200:
                self.send_response(connect)
                self.send_header("Proxy-Authenticate", 'Basic realm="stub"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            host, _, port = self.path.rpartition(":")
            with socket.create_connection((host, int(port)), PATIENT) as upstream:
                self.send_response(200, "Connection established")
                self.end_headers()
                self.carry(upstream)
            self.close_connection = True

        def carry(self, upstream: socket.socket) -> None:
            """Pass bytes both ways until either side closes (or the proxy stops)."""
            ends = [self.connection, upstream]
            while not stop.is_set():
                for sock in select.select(ends, [], [], 0.1)[0]:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is self.connection:
                        log.tunnelled.extend(data)
                    (upstream if sock is self.connection else self.connection).sendall(data)

        def log_message(self, *args: Any) -> None:
            return None

    with Listener(("127.0.0.1", 0), Handler) as server:
        log = ProxyLog(f"http://127.0.0.1:{server.server_address[1]}")
        thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        try:
            yield log
        finally:
            stop.set()
            server.shutdown()


def test_a_call_through_a_proxy_mounted_on_the_client_takes_the_clients_path(stub, monkeypatch):
    model = model_at(stub.url, monkeypatch)
    with forward_proxy() as proxy:
        # as `endpoint.py` builds the client, with a proxy mounted for every URL (what httpx2 mounts for the
        # environment's proxies when it builds its own transport)
        transport = DeadlineTransport(tls_for(model.base_url), model.max_reply_bytes)
        with model.make_client(
            openai, KEY, openai.DefaultHttpxClient(transport=transport, proxy=proxy.url)
        ) as client:
            assert not route(client, "chat/completions").direct
            whole = json.loads(post_whole(openai, client, "chat/completions", BODY, PATIENT))
            stub.faults.retry_after = "3"
            stub.faults.push("429")
            with pytest.raises(openai.RateLimitError) as raised:
                post_whole(openai, client, "chat/completions", BODY, PATIENT)
    assert whole["choices"][0]["message"]["content"]
    assert raised.value.status_code == 429 and isinstance(raised.value.body, dict)
    assert raised.value.response.headers["retry-after"] == "3"
    assert proxy.lines == [f"POST {stub.url}/v1/chat/completions HTTP/1.1"] * 2  # absolute form, to the proxy
    assert stub.requests == [BODY, BODY]
    assert all(headers["authorization"] == f"Bearer {KEY}" for headers in stub.headers)
    assert transport.connections == {}  # nothing went over the transport's own connection


def every_text(error: BaseException) -> str:
    """The type and message of `error` and of everything it was raised from."""
    texts, seen = [], error
    while seen is not None:
        texts.append(f"{type(seen).__name__}: {seen}")
        seen = seen.__cause__ or seen.__context__
    return "\n".join(texts)


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY", "http_proxy"])
def test_a_proxy_the_environment_names_carries_both_paths_of_a_client_built_on_its_own_transport(
    stub, monkeypatch, variable
):
    # httpx2 mounts the environment's proxies only on a client built without a transport; `DeadlineTransport`
    # reads them itself, so the client keeps its whole-read path and the proxy gets the whole URL on both
    with forward_proxy() as proxy:
        monkeypatch.setenv(variable, proxy.url)
        client = client_of(stub, monkeypatch)
        assert route(client, "chat/completions").direct
        whole = json.loads(post_whole(openai, client, "chat/completions", BODY, PATIENT))
        streamed = answer(post_json(openai, client, "chat/completions", BODY, PATIENT))
    assert whole["choices"][0]["message"]["content"] == streamed
    assert proxy.lines == [f"POST {stub.url}/v1/chat/completions HTTP/1.1"] * 2  # the absolute form
    assert len(proxy.peers) == 1  # one kept connection to the proxy for both
    assert stub.requests == [BODY, BODY]
    assert all(headers["authorization"] == f"Bearer {KEY}" for headers in stub.headers)


def test_a_proxys_credentials_go_into_proxy_authorization_and_into_no_log_line_or_error(
    stub, monkeypatch, caplog
):
    caplog.set_level(logging.DEBUG)
    # the requests' own lines too: inspect_ai sets the httpx2 logger to WARNING when it sets up its logging
    caplog.set_level(logging.DEBUG, logger="httpx2")
    errors = []
    with forward_proxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.with_credentials())
        model = model_at(stub.url, monkeypatch)
        client = model.client[1]
        assert json.loads(post_whole(openai, client, "chat/completions", BODY, PATIENT))["choices"]
        assert answer(post_json(openai, client, "chat/completions", BODY, PATIENT))
        for post in (post_whole, post_json):
            stub.faults.push("500")
            with pytest.raises(openai.InternalServerError) as raised:
                post(openai, client, "chat/completions", BODY, PATIENT)
            errors.append(every_text(raised.value) + repr(raised.value.response.request.headers))
        stub.faults.push("500")
        with pytest.raises(TransientError) as transient:
            model.generate(PROMPT)
        errors.append(every_text(transient.value))
    assert [headers.get("proxy-authorization") for headers in proxy.headers] == [PROXY_AUTHORIZATION] * 5
    assert not any("proxy-authorization" in headers for headers in stub.headers)  # the proxy's alone
    assert len(stub.requests) == 5 and "HTTP/1.1 500" in caplog.text  # the failed calls were logged
    for text in [caplog.text, *errors]:
        assert PROXY_PASSWORD not in text and PROXY_USER not in text
        assert PROXY_AUTHORIZATION.split()[1] not in text


@pytest.fixture
def tls_stub(tmp_path, monkeypatch):
    """An OpenAI stub on https://127.0.0.1 with a self-signed certificate that the clients built here trust."""
    pem = loopback_certificate(tmp_path)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pem)
    trusting = ssl.create_default_context(cafile=str(pem))
    monkeypatch.setattr(endpoint, "tls_for", lambda url: trusting)
    with StubOpenAI(tls=server) as stub:
        yield stub


def loopback_certificate(folder: Path) -> Path:
    """A PEM file holding a new key and a self-signed certificate for 127.0.0.1 and localhost, made with the
    `cryptography` package or else the `openssl` command."""
    pem = folder / "loopback.pem"
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        if shutil.which("openssl") is None:
            pytest.skip(
                "no certificate for a TLS endpoint: neither `cryptography` nor `openssl` is installed"
            )
        key, cert = folder / "key.pem", folder / "cert.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
            + ["-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
            + ["-keyout", str(key), "-out", str(cert)],
            check=True,
            capture_output=True,
        )
        pem.write_bytes(key.read_bytes() + cert.read_bytes())
        return pem
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        + cert.public_bytes(serialization.Encoding.PEM)
    )
    return pem


def test_an_https_endpoint_is_reached_through_a_connect_tunnel_the_proxy_cannot_read(tls_stub, monkeypatch):
    with forward_proxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.with_credentials())
        client = client_of(tls_stub, monkeypatch)
        assert route(client, "chat/completions").direct
        whole = json.loads(post_whole(openai, client, "chat/completions", BODY, PATIENT))
        streamed = answer(post_json(openai, client, "chat/completions", BODY, PATIENT))
    assert whole["choices"][0]["message"]["content"] == streamed
    origin = tls_stub.url.removeprefix("https://")
    assert proxy.lines == [f"CONNECT {origin} HTTP/1.1"]  # one tunnel, kept, for both calls
    assert proxy.headers[0]["host"] == origin
    assert proxy.headers[0]["proxy-authorization"] == PROXY_AUTHORIZATION
    assert tls_stub.requests == [BODY, BODY]
    assert not any("proxy-authorization" in headers for headers in tls_stub.headers)
    assert len(proxy.tunnelled) > 1000  # the handshake and both requests, encrypted:
    assert b"chat/completions" not in proxy.tunnelled and KEY.encode() not in proxy.tunnelled
    assert b"Pick one" not in proxy.tunnelled


def test_a_proxy_that_refuses_the_tunnel_is_a_connection_error_naming_its_status_not_its_credentials(
    tls_stub, monkeypatch, caplog
):
    caplog.set_level(logging.DEBUG)
    # the requests' own lines too: inspect_ai sets the httpx2 logger to WARNING when it sets up its logging
    caplog.set_level(logging.DEBUG, logger="httpx2")
    errors = []
    with forward_proxy(connect=407) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.with_credentials())
        model = model_at(tls_stub.url, monkeypatch)
        for post in (post_whole, post_json):
            with pytest.raises(openai.APIConnectionError) as raised:
                post(openai, model.client[1], "chat/completions", BODY, PATIENT)
            assert not isinstance(raised.value, openai.APITimeoutError)
            errors.append(every_text(raised.value))
        with pytest.raises(TransientError) as transient:
            model.generate(PROMPT)
        errors.append(str(transient.value))  # what the run's log says of the episode's attempt
        errors.append(problem(Endpoint("agent", model.base_url, "stub-model", "openai", "DIRECT_TEST_KEY")))
    assert proxy.lines == [f"CONNECT {tls_stub.url.removeprefix('https://')} HTTP/1.1"] * 4
    for text in errors:
        assert f"the proxy {proxy.url.removeprefix('http://')} answered CONNECT" in text
        assert "407 Proxy Authentication Required" in text
        assert PROXY_PASSWORD not in text and PROXY_USER not in text
    assert PROXY_PASSWORD not in caplog.text and PROXY_USER not in caplog.text
    assert tls_stub.requests == []


@pytest.mark.parametrize("bound", ["timeout", "deadline"])
@pytest.mark.parametrize("post", [post_whole, post_json])
def test_a_proxy_that_never_answers_the_connect_fails_the_call_in_time(tls_stub, monkeypatch, post, bound):
    with forward_proxy(connect=None) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        client = client_of(tls_stub, monkeypatch)
        began = time.monotonic()
        with pytest.raises(openai.APITimeoutError), deadline(IMPATIENT if bound == "deadline" else PATIENT):
            post(openai, client, "chat/completions", BODY, IMPATIENT if bound == "timeout" else PATIENT)
        took = time.monotonic() - began
    assert proxy.lines == [f"CONNECT {tls_stub.url.removeprefix('https://')} HTTP/1.1"]
    assert IMPATIENT * 0.9 < took < 5.0
    assert tls_stub.requests == []


@pytest.mark.parametrize(
    ("no_proxy", "through_proxy"),
    [
        ("127.0.0.1", False),
        ("example.com, 127.0.0.1", False),
        ("127.0.0.0/8", False),
        ("*", False),
        ("localhost", True),  # a name, not an address: httpx matches the URL's host, it resolves nothing
        ("example.com", True),
    ],
)
@pytest.mark.parametrize("variable", ["NO_PROXY", "no_proxy"])
def test_no_proxy_exempts_the_hosts_it_names_as_httpx_matches_them(
    stub, monkeypatch, variable, no_proxy, through_proxy
):
    with forward_proxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("ALL_PROXY", proxy.url)
        monkeypatch.setenv(variable, no_proxy)
        client = client_of(stub, monkeypatch)
        assert json.loads(post_whole(openai, client, "chat/completions", BODY, PATIENT))["choices"]
        assert answer(post_json(openai, client, "chat/completions", BODY, PATIENT))
    assert len(proxy.lines) == (2 if through_proxy else 0)
    assert stub.requests == [BODY, BODY]


@pytest.mark.parametrize(
    ("variable", "url", "shown"),
    [
        ("ALL_PROXY", "socks5://{}@127.0.0.1:1080", "socks5://127.0.0.1:1080"),
        ("http_proxy", "socks5h://{}@proxy.example:1080", "socks5h://proxy.example:1080"),
        ("HTTP_PROXY", "https://{}@proxy.example:3128", "https://proxy.example:3128"),
    ],
)
def test_a_proxy_that_is_not_http_stops_the_call_when_the_client_is_built(
    stub, monkeypatch, variable, url, shown
):
    monkeypatch.setenv(variable, url.format(f"{PROXY_USER}:{PROXY_PASSWORD}"))
    model = model_at(stub.url, monkeypatch)
    with pytest.raises(UnsupportedProxy) as raised:
        model.generate(PROMPT)
    found = problem(Endpoint("agent", model.base_url, "stub-model", "openai", "DIRECT_TEST_KEY"))
    for text in (str(raised.value), found):
        assert f"{variable} names the proxy {shown}: only http:// proxies are supported" in text
        assert PROXY_PASSWORD not in text and PROXY_USER not in text
    assert stub.requests == []


def test_a_proxy_for_other_endpoints_only_is_no_obstacle(stub, monkeypatch):
    # an https:// proxy for https endpoints, a socks one for hosts this endpoint is not: neither is used, so
    # neither stops a call to the plain-http loopback endpoint
    monkeypatch.setenv("HTTPS_PROXY", "https://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:9")
    assert model_at(stub.url, monkeypatch).generate(PROMPT).text
    assert len(stub.requests) == 1
