"""Exported runs in inspect_ai's own viewer: `inspect view` serves the exported folder on a loopback port and
headless Chromium (Debian packages, driven by selenium as in tests/report/test_browser.py) lists the logs and
every sample with its goal, and shows a hostile model reply as text without running it (the viewer's default
content mode, rich rendering, is the one tested: `--no-trust-content` leaves list cells blank in inspect-ai 0.3.285)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from pos_bench.report import chromium
from tests.analysis.fixture_runs import XSS
from tests.report.test_browser import assert_not_blank

pytestmark = pytest.mark.skipif(not chromium.available(), reason=chromium.MISSING)
pytest.importorskip("inspect_ai", reason="the `inspect` extra (inspect-ai) is not installed")

from pos_bench.analysis.runs import read_jsonl
from pos_bench.export.inspect_log import write_inspect_log
from pos_bench.transcript import episode_dir

STARTUP_SECONDS = 90
"""How long the viewer may take to listen (it imports inspect_ai, slow on a loaded machine)."""
RENDER_SECONDS = 60


@pytest.fixture(scope="module")
def logs(fixture_runs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("logs")
    for name in ("toy_pos", "toy_raw"):
        write_inspect_log(fixture_runs[name], out / f"{name}.eval")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def viewer(logs, tmp_path_factory):
    """The URL of `inspect view` serving `logs`; the server is stopped when the module's tests are done."""
    port, home = free_port(), tmp_path_factory.mktemp("home")
    output = home / "view.log"
    with output.open("w") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "inspect_ai", "view", "--log-dir", str(logs)]
            + ["--host", "127.0.0.1", "--port", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HOME": str(home)},
        )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            assert server.poll() is None, f"inspect view exited: {output.read_text()}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"inspect view not listening after {STARTUP_SECONDS}s"
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def shown(driver, texts: list[str]) -> bool:
    body = driver.find_element("tag name", "body").text
    return all(t in body for t in texts)


def test_the_viewer_lists_every_log_and_every_sample(browser, viewer, fixture_runs, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(viewer + "/")
    WebDriverWait(browser, RENDER_SECONDS).until(lambda d: shown(d, ["2 items", "stand-in"]))
    tasks = read_jsonl(fixture_runs["toy_pos"] / "results.jsonl")
    ids = [r["task_id"] for r in tasks]
    browser.get(viewer + "/#/tasks/toy_pos.eval")
    WebDriverWait(browser, RENDER_SECONDS).until(lambda d: shown(d, [*ids, f"{len(ids)} Samples"]))
    first = next(r for r in read_jsonl(episode_dir(fixture_runs["toy_pos"], "toy/000") / "events.jsonl"))
    WebDriverWait(browser, RENDER_SECONDS).until(lambda d: shown(d, [first["observation"]["goal"]]))
    listed = [i for i in ids if browser.find_elements("xpath", f"//*[normalize-space(text())='{i}']")]
    assert listed == ids
    badges = [
        e.text
        for e in browser.find_elements(
            "xpath", "//*[normalize-space(text())='true' or normalize-space(text())='false']"
        )
    ]
    assert badges.count("true") == sum(r["success"] for r in tasks) and len(badges) == len(tasks)
    shot = tmp_path / "inspect-view.png"
    browser.save_screenshot(str(shot))
    assert_not_blank(shot)


def test_a_hostile_reply_is_shown_as_text_and_never_runs(browser, viewer):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(viewer + f"/#/tasks/toy_raw.eval/samples/sample/{quote('toy/000', safe='')}/1/")
    WebDriverWait(browser, RENDER_SECONDS).until(
        lambda d: shown(d, ["toy/000", "<script>window.__pwned = 1"])
    )
    assert XSS.split(" onerror")[0] in browser.find_element("tag name", "body").text
    assert browser.execute_script("return window.__pwned === undefined")
