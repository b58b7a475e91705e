from tests.analysis.fixture_runs import fixture_runs  # noqa: F401  (session fixture)
