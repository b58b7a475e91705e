"""The full-size check's browser check: the sweep's report opened in headless Chromium (the Debian package,
driven by selenium, as tests/report/test_browser.py does), its index decoded and one episode view drawn."""

from __future__ import annotations

import time
from pathlib import Path

from pos_bench.report import chromium

WAIT_S = 120.0


def browser_check(report: Path) -> str:
    """One line: how long the report took to open and to show its first episode, or why it was not checked."""
    try:
        from selenium.webdriver.support.ui import WebDriverWait
    except ImportError:
        return "browser check skipped: selenium is not installed"
    if not chromium.available():
        return f"browser check skipped: {chromium.MISSING}"
    with chromium.headless() as driver:
        try:
            started = time.perf_counter()
            driver.get(report.resolve().as_uri())
            ready = lambda d: d.find_element("tag name", "body").get_attribute("data-ready")
            WebDriverWait(driver, WAIT_S).until(ready)
            opened = time.perf_counter() - started
            if ready(driver) != "1":
                return f"browser check FAILED: the report's data did not load ({ready(driver)})"
            rows = driver.find_elements("css selector", "tr.ep")
            if not rows:
                return f"browser: opened in {opened:.1f} s; no episode to show"
            key = f"{rows[-1].get_attribute('data-run')}:{rows[-1].get_attribute('data-ep')}"
            started = time.perf_counter()
            driver.execute_script("arguments[0].click();", rows[-1])
            shown = lambda d: d.find_element("id", "pane-a").get_attribute("data-shown") == key
            WebDriverWait(driver, WAIT_S).until(shown)
            turns = len(driver.find_element("id", "pane-a").find_elements("css selector", "details.turn"))
            return (
                f"browser (headless Chromium): report opened in {opened:.1f} s, the last of {len(rows)} episodes "
                f"shown in {time.perf_counter() - started:.1f} s ({turns} turn groups)"
            )
        except Exception as error:  # noqa: BLE001 - any failure is the check's finding, printed
            return f"browser check FAILED: {type(error).__name__}: {str(error)[:200]}"
