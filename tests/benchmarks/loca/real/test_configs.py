"""LOCA-Bench task configurations and case ids on the staged configuration files (no checkout needed)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from pos_bench.benchmarks.loca.real.benchmark import LocaBenchmark
from pos_bench.benchmarks.loca.real.configs import (
    CLONE_URL,
    KNOWN_GOOD_COMMIT,
    LENGTHS,
    missing_checkout,
    read_cases,
    select,
)

FAMILIES = {
    "ABTesting", "AcademicWarning", "ApplyPhDEmail", "CanvasArrangeExam", "CanvasListTest", "CourseAssistant",
    "ExcelMarketResearch", "FilterLowSellingProducts", "MachineOperating", "NhlB2bAnalysis",
    "PayableInvoiceChecker", "SetConfCrDdl", "UpdateMaterialInventory", "WoocommerceNewWelcome",
    "WoocommerceStockAlert",
}  # fmt: skip


@pytest.fixture
def configs(shared):
    return shared / "benchmarks" / "loca" / "task-configs"


@pytest.mark.parametrize("length", LENGTHS)
def test_every_length_has_15_families_by_5_seeds_with_claim_done(configs, length):
    cases = read_cases(configs, length)
    assert len(cases) == 75 and len({c.case_id for c in cases}) == 75
    assert set(Counter(c.family for c in cases).values()) == {5} and {c.family for c in cases} == FAMILIES
    assert {c.seed for c in cases} == {42, 123, 456, 789, 2024}
    assert all(c.case_id == f"{length}/{c.family}/seed_{c.seed}" for c in cases)
    assert all(any(s.type == "claim_done" for s in c.servers) for c in cases)
    assert all(c.env_class.endswith(f".{c.family}S2LEnv") for c in cases)


def test_cases_keep_the_file_order_and_drop_disabled_servers(configs, tmp_path):
    raw = json.loads((configs / "final_8k_set_config.json").read_text())["configurations"]
    assert [c.family for c in read_cases(configs, "8k")] == [e["name"].removesuffix("S2LEnv") for e in raw]
    raw[0]["mcp_servers"]["memory"]["enabled"] = False
    (tmp_path / "final_8k_set_config.json").write_text(json.dumps({"configurations": raw}))
    first = read_cases(tmp_path, "8k")[0]
    assert "memory" not in [s.name for s in first.servers] and "canvas" in [s.name for s in first.servers]


def test_selection_by_length_family_and_seed_keeps_order(configs):
    chosen = select(configs, ["16k", "8k"], families=["CanvasListTest", "ABTesting"], seeds=[2024, 42])
    ids = [c.case_id for c in chosen]
    assert ids[0].startswith("16k/") and ids[-1].startswith("8k/") and len(ids) == 8
    order = [c.family for c in read_cases(configs, "8k")]
    assert [c.family for c in chosen[4:]] == sorted((c.family for c in chosen[4:]), key=order.index)
    with pytest.raises(ValueError, match="bench.families"):
        select(configs, ["8k"], families=["NoSuchFamily"])
    with pytest.raises(ValueError, match="bench.seeds"):
        select(configs, ["8k"], seeds=[7])
    with pytest.raises(ValueError, match="length"):
        select(configs, ["300k"])


def test_benchmark_tasks_slice_and_carry_length_for_figure_4(configs):
    bench = LocaBenchmark(configs=str(configs), lengths=["8k", "256k"], start=73, limit=4)
    tasks = bench.tasks()
    assert [t.id for t in tasks] == [
        "8k/PayableInvoiceChecker/seed_789", "8k/PayableInvoiceChecker/seed_2024",
        "256k/CanvasArrangeExam/seed_42", "256k/CanvasArrangeExam/seed_123",
    ]  # fmt: skip
    assert [t.meta["length"] for t in tasks] == ["8k", "8k", "256k", "256k"]
    with pytest.raises(ValueError, match="keep_workspaces"):
        LocaBenchmark(configs=str(configs), keep_workspaces="some")


def test_without_a_checkout_one_message_says_how_to_get_it(tmp_path):
    bench = LocaBenchmark(root=None)
    with pytest.raises(FileNotFoundError) as missing:
        bench.tasks()
    message = str(missing.value)
    for needed in (
        "LOCA_BENCH_ROOT",
        CLONE_URL,
        KNOWN_GOOD_COMMIT,
        "pip install 'pos_bench[loca]'",
        "npm install",
    ):
        assert needed in message
    with pytest.raises(FileNotFoundError, match="not a LOCA-bench checkout"):
        LocaBenchmark(root=str(tmp_path)).make_env(None)
    assert "missing gem/tools/mcp_server/config_loader.py" in missing_checkout(tmp_path)
