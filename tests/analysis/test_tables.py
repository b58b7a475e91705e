from pathlib import Path

import pandas as pd

from pos_bench.analysis.plots import ablation_plot, tokens_plot
from pos_bench.analysis.tables import load_paper, load_runs, side_by_side, token_table
from pos_bench.runner import run

SPEC = Path(__file__).resolve().parents[2].parent / "shared" / "spec"


def toy_run(root: Path, method: str, model: str) -> None:
    cfg = {
        "bench": {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": 2, "max_turns": 10},
        "method": {"_target_": f"baselines.{method}", "_partial_": True},
        "model": {"_target_": "pos_bench.models.scripted.ScriptedModel"},
        "runner": {"backend": "threading", "progress": False},
        "expert": method == "expert.Expert",
    }
    name = method.split(".")[0]
    run(
        cfg,
        root / "alfworld" / name / model,
        {"bench": "alfworld", "method": name, "model": model, "label": "smoke"},
    )


def paper_rows() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "backbone": "Qwen3.7-Plus",
                "benchmark": "alfworld",
                "method": "raw",
                "value": 62.69,
                "metric": "success_rate",
                "n_cases": 134,
            },
            {
                "backbone": "Qwen3.7-Plus",
                "benchmark": "alfworld",
                "method": "pos",
                "value": 88.81,
                "metric": "success_rate",
                "n_cases": 134,
            },
        ]
    )


def test_our_runs_sit_beside_the_paper_with_their_label(tmp_path):
    toy_run(tmp_path, "raw.RawHistory", "smollm2")
    toy_run(tmp_path, "expert.Expert", "smollm2")
    runs = load_runs(tmp_path)
    assert set(runs["method"]) == {"raw", "expert"}
    table = side_by_side(paper_rows(), runs)
    column = "ours smollm2 [smoke] (n=2)"
    assert table.loc[("alfworld", "expert"), column] == 100.0
    assert table.loc[("alfworld", "raw"), "paper Qwen3.7-Plus"] == 62.69
    assert table.loc[("alfworld", "raw"), column] == 0.0
    assert runs.loc[runs["method"] == "raw", "tokens_k:agent"].iloc[0] > 0


def test_figures_are_written(tmp_path):
    toy_run(tmp_path, "raw.RawHistory", "scripted")
    runs = load_runs(tmp_path)
    assert tokens_plot(runs, tmp_path / "t.png").stat().st_size > 1000
    assert ablation_plot(paper_rows(), runs, tmp_path / "a.png").stat().st_size > 1000


def test_staged_paper_tables_load(shared):
    paper = load_paper(shared / "spec" / "paper_results.csv")
    assert (
        len(paper) == 100
        and (paper["value"] * paper["n_cases"] / 100)
        .sub((paper["value"] * paper["n_cases"] / 100).round())
        .abs()
        .max()
        < 0.05
    )
    tokens = token_table(pd.read_csv(shared / "spec" / "paper_tokens.csv"), pd.DataFrame())
    assert tokens.loc[("rca100", "pos"), "paper total_tokens_k"] == 1800.13
