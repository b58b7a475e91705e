"""Headless Chromium (Debian's `chromium` and `chromium-driver`) driven by selenium: what the report's and the docs
site's browser checks open pages with."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DRIVER = Path("/usr/bin/chromedriver")
MISSING = "headless Chromium not installed: apt-get install -y chromium chromium-driver (as .ci/run does)"


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
    `org.chromium.Chromium.*` folder (its singleton socket's) in the temporary directory at every start."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="pos_bench-chromium-", ignore_cleanup_errors=True) as scratch:
        options = webdriver.ChromeOptions()
        options.binary_location = str(chromium())
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", *flags):
            options.add_argument(flag)
        options.add_argument(f"--window-size={window}")
        options.add_argument(f"--user-data-dir={Path(scratch) / 'profile'}")
        driver = webdriver.Chrome(service=Service(str(DRIVER)), options=options)
        try:
            yield driver
        finally:
            driver.quit()
