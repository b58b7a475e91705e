"""The prefix cache: whole shared blocks are reused, the rest is read; the oldest blocks go first."""

from pos_bench.standin.prefix import PrefixCache


def test_a_prompt_that_extends_an_earlier_one_reuses_its_whole_blocks():
    cache = PrefixCache(block_tokens=4)
    assert cache.read(list(range(10))) == 0
    assert cache.read(list(range(10)) + [99, 98, 97]) == 8


def test_a_changed_token_ends_the_reuse_at_its_block():
    cache = PrefixCache(block_tokens=4)
    cache.read(list(range(16)))
    assert cache.read([0, 1, 2, 3, 4, 5, 77, 7, *range(8, 16)]) == 4


def test_the_last_token_is_always_read_again():
    cache = PrefixCache(block_tokens=4)
    cache.read(list(range(8)))
    assert cache.read(list(range(8))) == 4


def test_blocks_past_the_capacity_are_dropped_least_recently_used_first():
    cache = PrefixCache(capacity_tokens=8, block_tokens=4)
    cache.read([1, 1, 1, 1, 9])
    cache.read([2, 2, 2, 2, 9])
    cache.read([1, 1, 1, 1, 9])  # used again: now the most recent
    cache.read([3, 3, 3, 3, 9])  # evicts [2, 2, 2, 2]
    assert cache.read([1, 1, 1, 1, 9]) == 4 and cache.read([2, 2, 2, 2, 9]) == 0
    assert cache.held_tokens <= 8
