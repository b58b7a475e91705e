import json
import tempfile
import time
from pathlib import Path

import pytest

from pos_bench.report import chromium
from tests.proxies import naming, recording_proxy

pytestmark = pytest.mark.skipif(not chromium.available(), reason=chromium.MISSING)


def page_opened_under(scratch: Path, tmp_path: Path, monkeypatch) -> Path:
    """Open a page in headless Chromium with `scratch` as the temporary directory; the folder of its own that the
    session used (its profile's parent), which existed while it ran."""
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    page = tmp_path / "page.html"
    page.write_text("<title>hello</title>", encoding="utf-8")
    with chromium.headless("800,600") as driver:
        driver.get(page.as_uri())
        assert driver.title == "hello"
        own = Path(driver.capabilities["chrome"]["userDataDir"]).parent
        assert own.is_dir()
    return own


def test_a_headless_session_leaves_nothing_in_the_temporary_directory(
    tmp_path, tmp_path_factory, monkeypatch
):
    scratch = tmp_path_factory.mktemp("t")  # a short path: Chromium's socket path must fit 107 bytes
    own = page_opened_under(scratch, tmp_path, monkeypatch)
    assert own.parent == scratch  # its profile was made there
    assert list(scratch.iterdir()) == []


def test_a_long_temporary_directory_still_starts_chromium_and_is_left_empty(
    tmp_path, tmp_path_factory, monkeypatch
):
    # Chromium's singleton socket path under it would pass the 107 bytes a Unix socket's path may have
    scratch = tmp_path_factory.mktemp("t") / ("x" * 100)
    scratch.mkdir()
    assert len(str(scratch)) > 100
    own = page_opened_under(scratch, tmp_path, monkeypatch)
    assert list(scratch.iterdir()) == []
    assert not own.exists()  # the folder of its own, wherever it was made, is gone too


def network_log(path: Path) -> list[tuple[str, dict]]:
    """Chromium's network log (`--log-net-log`) as (event type, parameters); a log cut short by the browser's
    exit lacks its closing brackets."""
    text = path.read_text(encoding="utf-8")
    try:
        log = json.loads(text)
    except ValueError:
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    names = {number: name for name, number in log["constants"]["logEventTypes"].items()}
    return [(names.get(e["type"], str(e["type"])), e.get("params") or {}) for e in log["events"]]


def test_a_session_reaches_nothing_beyond_this_machine_even_where_a_proxy_is_named(tmp_path, monkeypatch):
    page, log = tmp_path / "page.html", tmp_path / "net.json"
    page.write_text("<title>local</title>", encoding="utf-8")
    with recording_proxy() as (proxy, seen):
        for name, value in naming(proxy).items():
            monkeypatch.setenv(name, value)
        # selenium reaches its driver, and asks it to stop, without the proxy
        with chromium.headless("800,600", f"--log-net-log={log}") as driver:
            driver.get(page.as_uri())
            assert driver.title == "local"
            time.sleep(5)  # Chromium's own requests at start come within the first second
    events = network_log(log)
    assert any(kind == "URL_REQUEST_START_JOB" for kind, _ in events)  # the log saw Chromium's requests
    assert seen == []
    assert [params for kind, params in events if kind in ("DNS_TRANSACTION", "TCP_CONNECT_ATTEMPT")] == []


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_pages_on_loopback_still_open(host, tmp_path):
    """The inspect viewer and the docs' server are pages on loopback, named by address or as `localhost`."""
    import functools
    import http.server
    import socket
    import threading

    (tmp_path / "index.html").write_text("<title>served</title>", encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    kind = type("Server", (http.server.ThreadingHTTPServer,), {"address_family": socket.AF_INET6})
    server = (kind if ":" in host else http.server.ThreadingHTTPServer)((host, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    netloc = f"[{host}]" if ":" in host else host
    try:
        with chromium.headless("800,600") as driver:
            driver.get(f"http://{netloc}:{server.server_address[1]}/")
            assert driver.title == "served"
    finally:
        server.shutdown()
        server.server_close()
