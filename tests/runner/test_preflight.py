"""Pre-flight config checks: every problem named with its key and what was expected."""

from pos_bench.models.cache import CacheConfig
from pos_bench.models.retry import RetryPolicy
from pos_bench.runner import RunnerConfig
from pos_bench.runner.preflight import config_problems
from pos_bench.runner.summary import Price

RECORDS = {"runner": RunnerConfig, "retry": RetryPolicy, "cache": CacheConfig, "prices": Price}
TOY = {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark"}
RAW = {"_target_": "baselines.raw.RawHistory", "_partial_": True}
SCRIPTED = {"_target_": "pos_bench.models.scripted.ScriptedModel"}


def problems(environ=None, **nodes):
    cfg = {"bench": TOY, "method": RAW, "model": SCRIPTED, **nodes}
    return config_problems(cfg, RECORDS, environ or {})


def test_a_good_config_has_no_problems():
    assert problems(runner={"n_jobs": 2}, retry={"max_attempts": 2}, cache={"mode": "off"}) == []


def test_unknown_keys_list_the_valid_ones_and_wrong_types_say_what_was_expected():
    found = problems(
        bench={**TOY, "limit": "abc", "n_tasks": 1.5},
        method={**RAW, "max_json_retry": 1},
        runner={"n_jobs": "many"},
        cache={"mode": "sometimes"},
        prices={"default": {"input_per_mtok": "cheap", "output_per_mtok": 1}},
    )
    assert (
        found[0].startswith("bench.limit='abc': Input should be a valid integer") and "int | None" in found[0]
    )
    assert found[1].startswith("bench.n_tasks=1.5: Input should be a valid integer")
    assert found[2].startswith(
        "method.max_json_retry: not a setting of RawHistory (its settings: max_json_retries"
    )
    assert found[3].startswith("runner.n_jobs='many'")
    assert found[4].startswith("cache.mode='sometimes'") and "read_write" in found[4]
    assert found[5].startswith("prices.default.input_per_mtok='cheap'")
    assert len(found) == 6


def test_ranges_are_checked_by_the_records_themselves():
    assert problems(runner={"n_jobs": 0}) == [
        "runner: runner.n_jobs must be a positive number or -1 (all cores), got 0"
    ]


def test_a_missing_key_variable_is_a_problem_unless_nothing_reaches_the_provider():
    openai = {"_target_": "pos_bench.models.openai.OpenAIModel", "model": "m", "api_key_env": "THE_KEY"}
    (found,) = problems(model=openai)
    assert found.startswith("model.api_key_env: the environment variable THE_KEY is unset or empty")
    assert problems({"THE_KEY": "sk-0123456789"}, model=openai) == []
    assert problems(model=openai, cache={"mode": "replay"}) == []
    assert problems(model={**openai, "api_key_env": None}) == []
    assert problems(roles={"belief": openai})[0].startswith("roles.belief.api_key_env")


def test_a_target_that_does_not_load_is_named():
    (found,) = problems(method={"_target_": "baselines.nope.Nope"})
    assert found.startswith("method._target_='baselines.nope.Nope' cannot be loaded")
