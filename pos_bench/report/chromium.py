"""Headless Chromium (Debian's `chromium` and `chromium-driver`) driven by selenium: what the report's and the docs
site's browser checks open pages with."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DRIVER = Path("/usr/bin/chromedriver")
MISSING = "headless Chromium not installed: apt-get install -y chromium chromium-driver (as .ci/run does)"
# What Chromium adds to TMPDIR for its singleton socket, a Unix socket whose path (sun_path) holds 107 bytes.
SOCKET = "/org.chromium.Chromium.XXXXXX/SingletonSocket"


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
    from selenium.webdriver.chrome.service import Service

    fits = len(os.fsencode(tempfile.gettempdir() + SOCKET)) <= 107
    with tempfile.TemporaryDirectory(
        prefix="pos_bench-chromium-", dir=None if fits else "/tmp", ignore_cleanup_errors=True
    ) as scratch:
        env = None if fits else {**os.environ, "TMPDIR": scratch}
        options = webdriver.ChromeOptions()
        options.binary_location = str(chromium())
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", *flags):
            options.add_argument(flag)
        options.add_argument(f"--window-size={window}")
        options.add_argument(f"--user-data-dir={Path(scratch) / 'profile'}")
        driver = webdriver.Chrome(service=Service(str(DRIVER), env=env), options=options)
        try:
            yield driver
        finally:
            driver.quit()
