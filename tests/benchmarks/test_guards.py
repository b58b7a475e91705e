from pos_bench.benchmarks.guards import cap, mentions_any


def test_cap_keeps_short_text_and_marks_a_cut():
    assert cap("abc", 5, hint="h") == "abc"
    cut = cap("abcdefgh", 3, hint="Ask less.")
    assert cut.startswith("abc\n[") and "first 3 of 8 characters" in cut and cut.endswith("Ask less.]")


def test_mentions_any_looks_through_keys_values_and_nesting_in_any_case():
    assert mentions_any({"q": ["x", {"deep": "see ANSWER_KEY/t001"}]}, ("answer_key",))
    assert mentions_any({"Answer_Key": 1}, ("answer_key",))
    assert mentions_any("../etc", ("../",))
    assert not mentions_any({"question": "fever?", "n": 3}, ("answer_key", "../"))
