"""The service model and its clock: speeds under load, queueing, and the bound computed from call chains."""

import pytest

from pos_bench.standin.service import CallCost, Clock, ServiceModel, service_bound

SLOW = ServiceModel(
    tokens_per_s=10, batch_tokens_per_s=20, prefill_tokens_per_s=100, first_token_s=0.5, max_batch=4
)


def test_a_request_alone_takes_its_latency_its_prompt_and_its_tokens_at_full_speed():
    assert service_bound([[CallCost(100, 0, 10)]], 1, SLOW) == pytest.approx(0.5 + 100 / 100 + 10 / 10)


def test_per_request_speed_falls_as_the_batch_grows_and_the_sum_approaches_the_batch_speed():
    model = ServiceModel(tokens_per_s=100, batch_tokens_per_s=3000)
    speeds = [model.per_request_tokens_per_s(n) for n in (1, 2, 16, 64, 1000)]
    assert speeds == sorted(speeds, reverse=True) and speeds[0] == pytest.approx(100)
    assert 1000 * speeds[-1] == pytest.approx(3000, rel=0.1)


def test_two_requests_decode_together_at_the_shared_speed():
    both = service_bound([[CallCost(0, 0, 10)], [CallCost(0, 0, 10)]], 2, SLOW)
    assert both == pytest.approx(0.5 + 10 * SLOW.step_seconds(2))


def test_cached_prompt_tokens_are_not_read_again():
    assert service_bound([[CallCost(100, 60, 10)]], 1, SLOW) == pytest.approx(0.5 + 40 / 100 + 1)


def test_an_episode_calls_one_after_another_and_a_slot_takes_the_next_episode():
    chains = [[CallCost(0, 0, 10)] * 3] * 5
    # two slots: episodes 1-2 then 3-4 side by side (3 calls of 0.5 + 10 steps of two), episode 5 alone
    pair, alone = 3 * (0.5 + 10 * SLOW.step_seconds(2)), 3 * (0.5 + 1.0)
    assert service_bound(chains, 2, SLOW) == pytest.approx(2 * pair + alone)


def test_requests_past_the_batch_size_wait_their_turn():
    model = ServiceModel(tokens_per_s=10, batch_tokens_per_s=10, first_token_s=0.0, max_batch=1)
    assert service_bound([[CallCost(0, 0, 10)]] * 3, 3, model) == pytest.approx(3.0)


def test_the_clock_reports_first_tokens_and_ends_and_the_tokens_produced_on_the_way():
    clock = Clock(SLOW)
    clock.admit("a", read_tokens=50, output_tokens=10, now=0.0)
    assert clock.advance(0.9).first_token == ()
    assert clock.advance(1.0).first_token == ("a",)
    clock.advance(1.5)
    assert clock.progress("a").produced == 5
    assert clock.advance(2.0).done == ("a",) and clock.progress("a").done_at == pytest.approx(2.0)


def test_a_released_request_gives_its_share_back():
    clock = Clock(SLOW)
    for key in "ab":
        clock.admit(key, read_tokens=0, output_tokens=10, now=0.0)
    clock.advance(0.5)
    clock.release("b")
    assert clock.next_event() == pytest.approx(1.5)  # "a" alone again: 10 tokens at 10 a second


@pytest.mark.parametrize(
    "field, value", [("tokens_per_s", 0), ("max_batch", 0), ("first_token_s", -1), ("batch_tokens_per_s", 1)]
)
def test_a_service_model_out_of_range_is_refused(field, value):
    with pytest.raises(ValueError, match=field):
        ServiceModel(**{field: value})
