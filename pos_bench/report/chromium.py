"""Headless Chromium (Debian's `chromium` and `chromium-driver`) driven by selenium: what the report's and the docs
site's browser checks open pages with."""

from __future__ import annotations

import contextlib
import functools
import http.client
import os
import shutil
import tempfile
import time
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DRIVER = Path("/usr/bin/chromedriver")
MISSING = "headless Chromium not installed: apt-get install -y chromium chromium-driver (as .ci/run does)"
# What Chromium adds to TMPDIR for its singleton socket, a Unix socket whose path (sun_path) holds 107 bytes.
SOCKET = "/org.chromium.Chromium.XXXXXX/SingletonSocket"
HEADLESS = ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu")
OFFLINE = (
    "--no-proxy-server",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1 , EXCLUDE ::1",
)
"""Chromium reaches nothing beyond this machine: no proxy the environment names, and no host resolves but
`localhost`, `127.0.0.1` and `::1` (the rule maps addresses written out too; what it opens here are local files and
pages on loopback). Without them, a session that only opened a local file asked, within 30 s, Google's time and
component-update servers, its account and model servers, and the default search engine (Debian's: DuckDuckGo), 54
DNS queries in all, through the environment's proxy when one was named (`tests/report/test_chromium.py` reads
Chromium's own network log)."""


def chromium() -> Path | None:
    """The Chromium binary: Debian's, else the first on PATH; None when there is none."""
    found = Path("/usr/bin/chromium")
    if found.exists():
        return found
    on_path = shutil.which("chromium")
    return Path(on_path) if on_path else None


def available() -> bool:
    """Whether Chromium and its driver are installed."""
    return chromium() is not None and DRIVER.exists()


@contextlib.contextmanager
def headless(window: str = "1400,1000", *flags: str) -> Iterator[Any]:
    """A selenium driver of a headless Chromium with a `window` of that size (and any further `flags`), quit on
    exit. Its profile is a folder of its own, removed on exit: with the driver's default profile, Chromium left an
    `org.chromium.Chromium.*` folder (its singleton socket's) in the temporary directory at every start.

    Chromium makes that socket at `$TMPDIR` + `SOCKET`, 45 bytes more, and would not start ("Socket path too long")
    once TMPDIR passed 62 bytes; the profile's and chromedriver's own paths may be long. With such a TMPDIR, the
    folder of its own is made under /tmp instead and is the driver's (so Chromium's) TMPDIR, and every file they
    make there goes with it on exit. A short TMPDIR is used as before."""
    from selenium import webdriver

    fits = len(os.fsencode(tempfile.gettempdir() + SOCKET)) <= 107
    with tempfile.TemporaryDirectory(
        prefix="pos_bench-chromium-", dir=None if fits else "/tmp", ignore_cleanup_errors=True
    ) as scratch:
        env = None if fits else {**os.environ, "TMPDIR": scratch}
        options = webdriver.ChromeOptions()
        options.binary_location = str(chromium())
        for flag in (*HEADLESS, *OFFLINE, *flags):
            options.add_argument(flag)
        options.add_argument(f"--window-size={window}")
        options.add_argument(f"--user-data-dir={Path(scratch) / 'profile'}")
        # the driver is on loopback, never behind a proxy (deprecated for a client config, which `Chrome` does not take)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            options.ignore_local_proxy_environment_variables()
        driver = webdriver.Chrome(service=direct_service()(str(DRIVER), env=env), options=options)
        try:
            yield driver
        finally:
            driver.quit()


@functools.cache
def direct_service() -> type:
    """selenium's chromedriver `Service`, asking the driver to stop without a proxy: selenium sends that request
    through urllib, which takes any proxy the environment names, for loopback too (a proxy's error ended it
    silently; a proxy that dropped the connection raised from `driver.quit()`)."""
    from selenium.webdriver.chrome.service import Service

    class DirectService(Service):
        def send_remote_shutdown_command(self) -> None:
            direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with contextlib.suppress(OSError, http.client.HTTPException):
                direct.open(f"{self.service_url}/shutdown", timeout=10).close()
            for _ in range(30):
                if not self.is_connectable():
                    return
                time.sleep(1)

    return DirectService
