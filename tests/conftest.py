"""Shared fixtures: where the staged benchmark data lives (../shared beside the repo, or $POS_BENCH_SHARED)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    return Path(os.environ.get("POS_BENCH_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared() -> Path:
    path = shared_dir()
    if not (path / "benchmarks").is_dir():
        pytest.skip(f"staged benchmark data not found at {path} (set POS_BENCH_SHARED)")
    return path


PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_of_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy the shell names: the providers' transport honours them as httpx does, loopback included, and every
    server of the tests is on loopback. A test that wants a proxy names it itself."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="re-record the golden transcripts in tests/golden/fixtures instead of comparing with them",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))
