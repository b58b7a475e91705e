"""The report in a real browser: headless Chromium from the Debian packages, driven by selenium (no browser
download). Checks the rendered DOM, clicks through to an episode, takes a screenshot that is not blank, and
proves that a model reply carrying `<script>` and `onerror=` is shown as text and never runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pos_bench.report import chromium
from pos_bench.report.page import render
from pos_bench.transcript import episode_dir
from tests.analysis.fixture_runs import XSS

pytestmark = pytest.mark.skipif(not chromium.available(), reason=chromium.MISSING)


@pytest.fixture(scope="module")
def browser():
    with chromium.headless("1400,1000") as driver:
        yield driver


@pytest.fixture(scope="module")
def page(browser, fixture_runs, tmp_path_factory):
    from selenium.webdriver.support.ui import WebDriverWait

    root = next(iter(fixture_runs.values())).parents[2]
    out = tmp_path_factory.mktemp("report") / "report.html"
    out.write_text(render([root], spec=None), encoding="utf-8")
    browser.get(out.as_uri())
    WebDriverWait(browser, 20).until(lambda d: d.find_element("tag name", "body").get_attribute("data-ready"))
    assert browser.find_element("tag name", "body").get_attribute("data-ready") == "1"
    return browser


def rows_of(driver, name: str):
    run = next(h for h in driver.find_elements("css selector", "h3.run") if h.text.startswith(name + " "))
    return driver.find_elements("css selector", f"tr.ep[data-run='{run.get_attribute('data-run')}']")


def open_episode(driver, row) -> None:
    """Click an episode's row and wait until both panes are drawn (an episode's steps inflate on demand)."""
    from selenium.webdriver.support.ui import WebDriverWait

    key = f"{row.get_attribute('data-run')}:{row.get_attribute('data-ep')}"
    row.click()
    shown = lambda pane: driver.find_element("id", pane).get_attribute("data-shown")
    WebDriverWait(driver, 20).until(lambda d: shown("pane-a") == key and shown("pane-b"))


def test_dom_lists_every_episode_with_its_labels(page, fixture_runs):
    toy_rows = rows_of(page, "toy/pos/scripted")
    assert len(toy_rows) == len((fixture_runs["toy_pos"] / "results.jsonl").read_text().splitlines())
    killed = rows_of(page, "toy/pos/scripted_killed")
    assert sum("interrupted" in r.text for r in killed) == 6 and len(killed) == 12
    assert not any("running" in r.text for r in killed)  # no writer holds it: never shown running
    headings = " ".join(h.text for h in page.find_elements("css selector", "h3.run"))
    assert "stand-in" in headings and "errors" in headings and "interrupted" in headings


def test_an_episode_shows_its_health_curve_audits_and_transcript(page, fixture_runs, tmp_path):
    import json

    open_episode(page, rows_of(page, "toy/pos/scripted")[0])
    pane = page.find_element("id", "pane-a")
    result = json.loads((episode_dir(fixture_runs["toy_pos"], "toy/000") / "result.json").read_text())
    healthy = len(result["report"]["belief_health_history"])
    assert healthy > 3 and len(pane.find_elements("css selector", "svg.health circle.hpoint")) == healthy
    points = pane.find_element("css selector", "svg.health polyline.series-health_score").get_attribute(
        "points"
    )
    assert len(points.split()) == healthy
    rejected = pane.find_elements("css selector", ".timeline-table span.audit.rejected")
    assert rejected, "the scripted episode has a rejected update"
    issue_cells = [
        r.find_elements("css selector", ".issue") for r in pane.find_elements("css selector", "tr.tl-row")
    ]
    assert any(
        "contradicts the observation" in p.get_attribute("textContent")
        for cells in issue_cells
        for p in cells
    )
    assert pane.find_elements("css selector", ".recovery") and pane.find_elements(
        "css selector", ".gap-change"
    )
    turns = pane.find_elements("css selector", "details.turn")
    assert len([t for t in turns if t.find_elements("css selector", "pre.action")]) == result["steps"]
    other = page.find_element("id", "pane-b").find_element("css selector", "h3").text
    assert other.startswith("toy/") and not other.startswith("toy/pos/"), "another method's run of the task"
    shot = tmp_path / "episode.png"
    page.save_screenshot(str(shot))
    assert_not_blank(shot)


def test_a_hostile_reply_is_text_and_never_runs(page):
    open_episode(page, rows_of(page, "toy/raw/scripted")[0])
    texts = lambda css: [p.get_attribute("textContent") for p in page.find_elements("css selector", css)]
    assert any(
        "<script>window.__pwned = 1</script>" in r and "onerror=" in r for r in texts("#pane-a pre.reply")
    )
    assert XSS in " ".join(texts("#pane-a pre.thought"))
    assert page.execute_script("return window.__pwned === undefined")
    assert not page.find_elements("css selector", "#pane-a img, #pane-a script")


def assert_not_blank(path: Path) -> None:
    from PIL import Image

    image = Image.open(path).convert("L")
    low, high = image.getextrema()
    colours = len(image.getcolors(maxcolors=1 << 16) or [])
    assert high - low > 100 and colours > 10, f"{path} looks blank ({low}..{high}, {colours} grey levels)"
    shutil.copy(path, path.with_name("last-report-screenshot.png"))
