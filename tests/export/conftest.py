"""The fixture runs and the headless browser, shared with tests/analysis and tests/report."""

from tests.analysis.fixture_runs import fixture_runs
from tests.report.test_browser import browser

__all__ = ["browser", "fixture_runs"]
