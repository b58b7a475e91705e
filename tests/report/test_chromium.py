import tempfile

import pytest

from pos_bench.report import chromium

pytestmark = pytest.mark.skipif(not chromium.available(), reason=chromium.MISSING)


def test_a_headless_session_leaves_nothing_in_the_temporary_directory(
    tmp_path, tmp_path_factory, monkeypatch
):
    scratch = tmp_path_factory.mktemp("t")  # a short path: Chromium's socket path must fit 107 bytes
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    page = tmp_path / "page.html"
    page.write_text("<title>hello</title>", encoding="utf-8")
    with chromium.headless("800,600") as driver:
        driver.get(page.as_uri())
        assert driver.title == "hello"
        assert list(scratch.iterdir())  # its profile, while it runs
    assert list(scratch.iterdir()) == []
