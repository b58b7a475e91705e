from pos_bench.runner.summary import ContextLoad, context_load
from pos_bench.types import Usage


def test_peak_is_the_largest_policy_input_and_dependency_follows_the_spec_formula():
    calls = [
        ("agent", Usage(1000, 100, 1)),
        ("belief", Usage(9000, 900, 1)),  # not a policy call
        ("agent", Usage(3000, 50, 1)),
    ]
    load = context_load(calls)
    assert load.peak_input_tokens == 3000
    expected = ((1000 + 2 * 100) * 100 / 2 + (3000 + 2 * 50) * 50 / 2) / 1e6
    assert abs(load.dependency_m - expected) < 1e-12


def test_an_episode_without_policy_calls_has_no_load():
    assert context_load([("belief", Usage(5, 5, 1))]) == ContextLoad()
