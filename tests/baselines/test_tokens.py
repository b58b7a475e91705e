"""Token counts of the baselines' thresholds: the compiled o200k_base tokenizer counts and cuts as bpe-openai's own
wrapper does, without importing the wrapper's package."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.tokens import TokenCounter

bpe_openai = pytest.importorskip("bpe_openai")
REFERENCE = bpe_openai.get_encoding("o200k_base")

TEXTS = st.lists(
    st.one_of(
        st.text(st.characters(codec="utf-8"), max_size=8),
        st.sampled_from(["日本語", "🎉", "é", " ", "\n", "{", '"', "°C", "µg", "\ud800", "take apple 1"]),
    ),
    max_size=24,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_a_count_is_the_length_of_the_wrappers_encoding(text):
    assert TokenCounter("o200k_base").count(text) == len(REFERENCE.encode_ordinary(text))


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.integers(min_value=0, max_value=40))
def test_a_cut_keeps_the_first_tokens_as_the_wrapper_decodes_them(text, limit):
    tokens = REFERENCE.encode_ordinary(text)
    want = text if len(tokens) <= limit else REFERENCE.decode(tokens[:limit])
    assert TokenCounter("o200k_base").truncate(text, limit) == want


def test_a_cut_inside_a_character_ends_in_a_replacement_character():
    text = "héllo wörld 日本語のテキスト 🎉🎉 done"
    tokens = REFERENCE.encode_ordinary(text)
    cut = next(k for k in range(1, len(tokens)) if "\ufffd" in REFERENCE.decode(tokens[:k]))
    assert TokenCounter("o200k_base").truncate(text, cut).endswith("\ufffd")


def test_chars4_counts_characters_by_four():
    counter = TokenCounter("chars4")
    assert (counter.count(""), counter.count("abcde"), counter.truncate("abcdefghij", 2)) == (
        0,
        2,
        "abcdefgh",
    )


def test_counting_leaves_the_wrappers_package_unimported():
    """The package's import builds tables for three encodings (0.7 CPU-s); a worker that only counts skips it."""
    code = (
        "import sys; from baselines.tokens import TokenCounter; "
        "assert TokenCounter('o200k_base').count('hello world') == 2; "
        "print('bpe_openai' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_an_unknown_encoding_is_refused_by_name():
    with pytest.raises(ValueError, match="tokenizer must be one of"):
        TokenCounter("cl200k")
