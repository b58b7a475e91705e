"""The built documentation site in a real browser: `mkdocs build --strict` into a temporary folder, then headless
Chromium (Debian's `chromium` and `chromium-driver`, driven by selenium as tests/report/test_browser.py does) opens
the home page, a tutorial and the generated reference of `method=pos`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pos_bench.report import chromium

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not chromium.available(), reason=chromium.MISSING)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def browser():
    with chromium.headless("1300,900") as driver:
        yield driver


def opened(browser, page: Path):
    browser.get(page.as_uri())
    return browser


def test_the_home_page_leads_to_every_part(site, browser):
    page = opened(browser, site / "index.html")
    assert page.find_element("tag name", "h1").text == "pos_bench"
    nav = page.find_element("css selector", "nav.md-nav--primary").get_attribute("textContent")
    for part in ("Tutorials", "How-to guides", "Concepts", "Reference"):
        assert part in nav
    links = {a.get_attribute("href") for a in page.find_elements("css selector", "article a")}
    assert any(href.endswith("tutorials/own-endpoint/") for href in links)


def test_the_endpoint_tutorial_gives_the_command(site, browser):
    page = opened(browser, site / "tutorials" / "own-endpoint" / "index.html")
    assert page.find_element("tag name", "h1").text == "Tutorial: your own endpoint"
    commands = " ".join(
        c.get_attribute("textContent") for c in page.find_elements("css selector", "pre code")
    )
    assert "method=raw,pos bench=clindiag model=vllm" in commands


def test_the_generated_reference_of_method_pos(site, browser):
    page = opened(browser, site / "reference" / "config" / "method" / "index.html")
    heading = page.find_element("id", "pos")
    assert heading.text.startswith("pos")
    table = heading.find_element("xpath", "following::table[1]")  # Material wraps tables in divs
    rows = {
        r.find_elements("tag name", "td")[0].text: [c.text for c in r.find_elements("tag name", "td")]
        for r in table.find_elements("css selector", "tbody tr")
    }
    assert rows["trapping.health_threshold"][1:3] == ["0.25", "0.25"]
    assert "θ_H" in rows["trapping.health_threshold"][3]
    assert {"sentinel.global_audit_every_steps", "recovery.mode", "belief_max_tokens"} <= rows.keys()
