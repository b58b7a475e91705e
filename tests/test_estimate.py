"""`python -m pos_bench.estimate`: sweeps expanded as Hydra would, figures from recorded runs or the method's
structure, the paper's count when data is absent, no model called."""

from __future__ import annotations

import argparse
import json

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from pos_bench.estimate import (
    beyond_the_paper,
    combinations,
    estimate,
    estimate_combinations,
    format_estimates,
    main,
)
from pos_bench.runner import run
from tests.conftest import REPO

SCHEMA_REPLIES = "+model.default={_target_:pos_bench.models.scripted.schema_reply,_partial_:true}"


def options(**given) -> argparse.Namespace:
    base = {
        "seconds_per_call": None,
        "concurrency": None,
        "results": None,
        "input_per_mtok": None,
        "output_per_mtok": None,
        "probe_turns": 4,
        "probe_tasks": 1,
    }
    return argparse.Namespace(**{**base, **given})


def test_an_experiments_sweep_is_expanded_and_the_command_line_wins():
    combos = list(combinations(["+experiment=table1_alfworld", "model=vllm"]))
    methods = {next(o for o in c if o.startswith("method=")) for c in combos}
    assert len(combos) == 8 and len(methods) == 8
    assert all("model=vllm" in c for c in combos)
    assert len(list(combinations(["+experiment=table1_alfworld"]))) == 24  # 8 methods × 3 backbones
    assert len(list(combinations(["bench=toy", "method=raw,pos"]))) == 2


def record_toy_run(root, method: str, episodes: int, *settings: str) -> list[dict]:
    folder = root / "toy" / method / "scripted" / "run-1"
    overrides = [
        *settings,
        "bench=toy",
        f"method={method}",
        "model=scripted",
        SCHEMA_REPLIES,
        f"bench.limit={episodes}",
        "bench.max_turns=4",
        f"results_root={root}",
        "runner.progress=false",
        "runner.backend=threading",
        "cache.mode=off",
    ]
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    run(
        OmegaConf.to_container(cfg, resolve=True), folder, {"bench": "toy", "method": method, "label": "test"}
    )
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def test_a_recorded_run_gives_the_calls_per_episode(tmp_path):
    rows = record_toy_run(tmp_path, "pos", 2)
    recorded_calls = sum(sum(u["calls"] for u in r["usage"].values()) for r in rows) / len(rows)
    (est,) = estimate(
        ["bench=toy", "method=pos", "model=vllm", "bench.limit=3"], options(results=str(tmp_path))
    )
    calls = sum(r.calls for r in est.profile.roles.values())
    assert est.profile.source.startswith("recorded (2 episodes)")
    assert abs(calls - recorded_calls) <= 0.25 * recorded_calls
    assert est.episodes == 3 and est.calls == 3 * calls


def test_without_a_recorded_run_the_structure_bounds_a_real_run(tmp_path):
    (est,) = estimate(
        ["bench=toy", "method=pos", "model=vllm", "bench.max_turns=4", "bench.limit=2"],
        options(results=str(tmp_path / "none"), probe_turns=4),
    )
    rows = record_toy_run(tmp_path, "pos", 2)
    real = sum(sum(u["calls"] for u in r["usage"].values()) for r in rows) / len(rows)
    structural = sum(r.calls for r in est.profile.roles.values())
    assert est.profile.source.startswith("structure")
    assert real <= structural * 1.25 and structural <= real * 1.25
    assert {"agent", "belief"} <= set(est.profile.roles)


def test_hours_and_cost_follow_the_given_concurrency_and_prices(tmp_path):
    record_toy_run(tmp_path, "raw", 1)
    (est,) = estimate(
        ["bench=toy", "method=raw", "model=vllm", "bench.limit=4"],
        options(
            results=str(tmp_path),
            seconds_per_call=2.0,
            concurrency=4,
            input_per_mtok=1.0,
            output_per_mtok=3.0,
        ),
    )
    tin, tout = est.tokens
    assert est.hours == est.calls * 2.0 / 4 / 3600
    assert abs(est.cost - (tin * 1.0 + tout * 3.0) / 1e6) < 1e-9
    assert "cost" in format_estimates([est])


def test_a_benchmark_without_its_data_is_counted_from_the_paper(shared, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("POS_BENCH_SHARED", str(shared))
    monkeypatch.delenv("LOCA_BENCH_ROOT", raising=False)
    (est,) = estimate(["bench=loca", "method=raw", "model=vllm"], options(results=str(tmp_path)))
    assert est.episodes == 525 and est.episodes_source.startswith("paper")
    assert main(["bench=loca", "method=raw", "model=vllm", "--results", str(tmp_path)]) == 0
    assert "loca" in capsys.readouterr().out


def test_the_paper_tables_list_the_compaction_rows_as_a_block_of_their_own():
    lines = beyond_the_paper(["+experiment=table1_alfworld", "model=vllm"])
    combos = [combo for line in lines for combo in combinations(line)]
    methods = sorted(next(o for o in c if o.startswith("method=")) + " " + " ".join(c[-1:]) for c in combos)
    assert len(combos) == 5 and all("model=vllm" in c for c in combos), methods
    assert not beyond_the_paper(["bench=toy", "method=raw"])
    narrowed = beyond_the_paper(["+experiment=table1_alfworld", "method=raw,pos", "method.x=1", "model=vllm"])
    assert narrowed == lines  # the command line's methods stay out of the block's own lines


def test_a_compaction_row_counts_the_compactor_of_its_own_strategy_only(tmp_path):
    rows = record_toy_run(tmp_path, "compaction", 1, "method.strategy=summary")
    base = ["bench=toy", "method=compaction", "model=vllm", "bench.limit=1"]
    summary, edit = estimate_combinations(
        [[*base, "method.strategy=summary"], [*base, "method.strategy=edit"]],
        options(results=str(tmp_path), probe_turns=4),
    )
    assert summary.choices["method"] == "compaction@summary" and edit.choices["method"] == "compaction@edit"
    assert summary.profile.source.startswith("recorded (1 episodes)")
    assert summary.profile.roles["compactor"].calls == rows[0]["usage"]["compactor"]["calls"] > 0
    assert edit.profile.source.startswith("structure") and "compactor" not in edit.profile.roles
    assert "compaction@summary" in format_estimates([summary, edit])


def test_a_method_setting_its_config_lacks_is_probed_as_the_run_would_play_it(tmp_path):
    """`+method.tokenizer=chars4` adds a key ACON's config does not list; the probe plays with it (chars4
    counts characters / 4, so the threshold is crossed at another turn than with o200k_base)."""
    base = [
        "bench=toy",
        "method=acon",
        "model=vllm",
        "bench.max_turns=4",
        "bench.limit=1",
        "method.t_hist=10",
    ]
    chars4, bpe = estimate_combinations(
        [[*base, "+method.tokenizer=chars4"], base], options(results=str(tmp_path), probe_turns=None)
    )
    assert chars4.profile.source.startswith("structure") and bpe.profile.source.startswith("structure")
    assert chars4.profile.roles["compressor"].calls > 0


def test_input_tokens_extrapolate_with_the_history_a_turn_carries():
    from pos_bench.estimate import RoleCost, extrapolated

    def episode(turns, a=300.0, b=40.0):  # a turn's prompt: a fixed part and the history so far
        return turns, {"agent": RoleCost(turns, a * turns + b * turns * (turns + 1) / 2, 10.0 * turns)}

    (_, want) = episode(50)
    got = extrapolated(episode(6), episode(12), 50, 12)["agent"]
    assert got.calls == 50 and got.output_tokens == 500
    assert (
        abs(got.input_tokens - want["agent"].input_tokens) < 1e-6
    )  # a linear scaling would give ~0.45 of it
    flat = extrapolated(episode(6, b=0.0), episode(12, b=0.0), 50, 12)["agent"]
    assert flat.input_tokens == 300.0 * 50
    # over before the longer probe's 12 turns: 9 turns is the episode's length, whatever the budget
    assert extrapolated(episode(6), episode(9), 50, 12)["agent"].calls == 9


def test_a_bench_setting_reaches_the_probe_but_the_slice_and_budget_do_not():
    from pos_bench.estimate import bench_settings

    combo = [
        "bench=alfworld",
        "bench.split=valid_seen",
        "bench.limit=4",
        "+bench.start=2",
        "bench.max_turns=9",
    ]
    assert bench_settings(combo) == ["bench.split=valid_seen"]


def test_tasks_to_probe_are_spread_over_the_list_the_first_always_among_them():
    from pos_bench.estimate import spread

    assert spread(134, 1) == [0]
    assert spread(10, 3) == [0, 3, 6]
    assert spread(15, 15) == list(range(15))
    assert spread(2, 5) == [0, 1]


def test_the_whole_budget_probe_over_every_task_is_the_mean_of_a_run_of_them(tmp_path):
    """Played by the smallest schema-valid replies, as the stand-in answers, an episode's calls and tokens are
    what the estimate's probe counts: probing each of three tasks for the whole budget predicts the run exactly,
    where two short probes extrapolate."""
    settings = ("+model.tokenizer=o200k_base", "method.t_hist=10")  # ACON compresses within 4 turns
    rows = record_toy_run(tmp_path / "run", "acon", 3, *settings)
    measured = {
        role: sum(r["usage"][role]["input_tokens"] for r in rows) / len(rows) for role in rows[0]["usage"]
    }
    assert measured.get("compressor"), "the test needs a run in which ACON compressed"
    (est,) = estimate(
        ["bench=toy", "method=acon", "model=vllm", "bench.max_turns=4", "bench.limit=3", "method.t_hist=10"],
        options(results=str(tmp_path / "none"), probe_turns=None, probe_tasks=3),
    )
    assert est.profile.source.startswith("structure") and "3 tasks" in est.profile.source
    predicted = {role: cost.input_tokens for role, cost in est.profile.roles.items()}
    assert predicted == measured


def test_an_experiments_own_bench_settings_and_role_models_are_probed(shared, tmp_path, monkeypatch):
    # table1_clindiag sets `bench.provider: llm` in its file and names a provider model: each agent question
    # is then a provider call too, half of an episode's calls, which a probe of plain `bench=clindiag` missed
    monkeypatch.setenv("POS_BENCH_SHARED", str(shared))
    combo = ["+experiment=table1_clindiag", "method=raw", "model=vllm", "bench.max_turns=4"]
    (est,) = estimate(combo, options(results=str(tmp_path), probe_turns=None))
    roles = est.profile.roles
    assert roles["benchmark_provider"].calls == roles["agent"].calls == 4
    assert roles["benchmark_provider"].input_tokens > 0
