"""Headless Chromium (Debian's `chromium` and `chromium-driver`) driven by selenium: what the report's and the docs
site's browser checks open pages with."""

from __future__ import annotations

import shutil
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


def headless(window: str = "1400,1000", *flags: str) -> Any:
    """A selenium driver of a headless Chromium with a `window` of that size (and any further `flags`); the
    caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium())
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", *flags):
        options.add_argument(flag)
    options.add_argument(f"--window-size={window}")
    return webdriver.Chrome(service=Service(str(DRIVER)), options=options)
