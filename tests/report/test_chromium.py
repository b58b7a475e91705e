import tempfile
from pathlib import Path

import pytest

from pos_bench.report import chromium

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
