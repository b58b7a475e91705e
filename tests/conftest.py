"""Shared fixtures: where the staged benchmark data lives (../shared beside the repo, or $POS_BENCH_SHARED)."""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.proxies import NO_PROXY_VARIABLES, PROXY_VARIABLES

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    return Path(os.environ.get("POS_BENCH_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared() -> Path:
    path = shared_dir()
    if not (path / "benchmarks").is_dir():
        pytest.skip(f"staged benchmark data not found at {path} (set POS_BENCH_SHARED)")
    return path


@pytest.fixture(autouse=True)
def no_proxy_of_the_shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No proxy the shell names: the providers' transport honours them as httpx does, loopback included, and every
    server of the tests is on loopback. A test that wants a proxy names it itself.

    urllib's `urlopen` reads the proxies once, when the process first calls it, and keeps them: a test that named a
    proxy and opened a URL left every later `urlopen` of the session going to that proxy. So each test starts and
    ends with none built."""
    for name in (*PROXY_VARIABLES, *NO_PROXY_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    urllib.request.install_opener(None)
    yield
    urllib.request.install_opener(None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="re-record the golden transcripts in tests/golden/fixtures instead of comparing with them",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))
