"""A proxy the environment names, standing in for one that sees everything: a loopback listener that records the
first line of every connection made to it (`CONNECT host:443 …`, `GET http://…`) and closes it unanswered."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
"""Where an environment names a proxy, for every scheme, in both spellings."""
NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy")


def naming(proxy: str) -> dict[str, str]:
    """An environment's variables that send every scheme to `proxy`."""
    return dict.fromkeys(PROXY_VARIABLES, proxy)


@contextlib.contextmanager
def recording_proxy() -> Iterator[tuple[str, list[bytes]]]:
    """The proxy's URL and the first lines it has seen so far; it stops listening on exit."""
    seen: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def record() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    seen.append(conn.recv(4096).split(b"\r\n")[0])
                except OSError:
                    seen.append(b"(nothing sent)")

    threading.Thread(target=record, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", seen
    finally:
        listener.close()
