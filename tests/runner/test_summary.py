from pos_bench.runner.summary import format_table, summarize
from pos_bench.types import EpisodeResult, Usage
from tests.conftest import REPO


def result(task, *, success=False, status="done", steps=3, usage=None, extras=None, meta=None):
    return EpisodeResult(
        task_id=task,
        status=status,
        success=success,
        score=float(success),
        steps=steps,
        turns=steps,
        usage=usage or {},
        extras=extras or {},
        task_meta=meta or {},
    )


def test_errors_count_as_failures_and_are_reported():
    summary = summarize([result("a", success=True), result("b", status="error", steps=0)], {"method": "raw"})
    assert (summary.episodes, summary.errors, summary.successes, summary.success_rate) == (2, 1, 1, 0.5)


def test_benchmark_roles_stay_out_of_method_tokens():
    usage = {"agent": Usage(100, 10, 1), "belief": Usage(50, 5, 1), "benchmark_judge": Usage(1000, 100, 1)}
    summary = summarize([result("a", usage=usage)], {})
    assert summary.method_tokens_per_episode == 165
    assert summary.usage["benchmark_judge"] == Usage(1000, 100, 1)


def test_extras_are_averaged_and_success_grouped_by_task_meta():
    results = [
        result("a", success=True, extras={"differential_hit": True, "note": "x"}, meta={"subset": "rare"}),
        result("b", extras={"differential_hit": False}, meta={"subset": "rare"}),
        result("c", success=True, extras={"differential_hit": True}, meta={"subset": "challenging"}),
    ]
    summary = summarize(results, {"bench": "clindiag"})
    assert summary.extras == {"differential_hit": 2 / 3}
    assert summary.by_group == {"subset": {"challenging": 1.0, "rare": 0.5}}
    table = format_table([summary])
    assert "66.7%" in table and "differential_hit" in table and "clindiag" in table


def test_empty_run():
    summary = summarize([], {})
    assert summary.episodes == 0 and summary.success_rate == 0.0


def test_an_errored_episode_counts_as_a_miss_in_the_extras_it_applies_to():
    results = [
        result("r1", success=True, extras={"accuracy_rare": True, "hit": True}, meta={"subset": "rare"}),
        result("r2", status="error", meta={"subset": "rare"}),
        result("c1", success=True, extras={"accuracy_challenging": True, "hit": True}, meta={"subset": "challenging"}),
    ]  # fmt: skip
    summary = summarize(results, {})
    assert summary.extras == {"accuracy_rare": 0.5, "accuracy_challenging": 1.0, "hit": 2 / 3}
    assert summary.success_rate == 2 / 3


def test_error_causes_are_counted_most_common_first_with_an_example():
    results = [
        EpisodeResult("a", "error", error="AuthenticationError: 401 bad key\nbody…"),
        EpisodeResult("b", "error", error="AuthenticationError: 401 bad key\nother body"),
        EpisodeResult("c", "error", error="TimeoutError: slow"),
    ]
    summary = summarize(results, {"model": "openai"})
    assert [(c.cause, c.count, c.example) for c in summary.error_causes] == [
        ("AuthenticationError: 401 bad key", 2, "a"),
        ("TimeoutError: slow", 1, "c"),
    ]


def test_a_run_that_never_called_a_model_is_not_labelled_with_one():
    assert summarize([result("a", success=True)], {"model": "smollm2"}).labels == {"model": "none"}
    used = {"agent": Usage(1, 1, 1)}
    assert summarize([result("a", usage=used)], {"model": "smollm2"}).labels == {"model": "smollm2"}
    # every episode failed before its first call: the model is not known to be unused
    assert summarize([result("a", status="error")], {"model": "smollm2"}).labels == {"model": "smollm2"}


def test_grouping_leaves_out_episodes_without_the_key_and_orders_numbers_by_value():
    results = [
        result("a", success=True, meta={"length": 16, "family": "mail"}),
        result("b", success=False, meta={"length": 8, "family": None}),
        result("c", success=True, meta={"length": 8}),
    ]
    grouped = summarize(results, {}).by_group
    assert grouped == {"length": {"8": 0.5, "16": 1.0}, "family": {"mail": 1.0}}
    assert list(grouped["length"]) == ["8", "16"]


def test_the_table_aligns_its_columns_and_marks_a_missing_cell():
    from pos_bench.runner.summary import plain_table

    table = plain_table([{"run": "toy/raw", "success": "50.0%"}, {"run": "toy/pos", "extra": 0.25}])
    assert table.splitlines() == [
        "    run success extra",
        "toy/raw   50.0%   NaN",
        "toy/pos     NaN  0.25",
    ]


def test_summarising_and_printing_a_run_leave_pandas_out_of_the_driver():
    import subprocess
    import sys

    code = (
        "import sys; from pos_bench.runner.summary import summarize; from pos_bench.types import EpisodeResult;"
        "s = summarize([EpisodeResult(task_id='t', status='done', success=True, score=1.0, steps=1, turns=1,"
        " usage={}, extras={}, task_meta={'g': 'x'})], {});"
        "from pos_bench.runner.summary import format_table; format_table([s]);"
        "print('pandas' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"  # ~90 MB more in a sweep's driver after its first run otherwise
