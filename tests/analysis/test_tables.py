"""Table 1 (n, intervals, flags, gains, ablation drops), the paired table and Table 2 on the fixture runs."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pos_bench.analysis.collect import collect, text
from pos_bench.analysis.paired import comparisons
from pos_bench.analysis.runs import load_runs
from pos_bench.analysis.stats import cluster_bootstrap, mcnemar_exact, wilson
from pos_bench.analysis.tables import gains, load_paper, ours, token_table
from pos_bench.transcript import episode_dir
from tests.conftest import REPO

PAPER = pd.DataFrame(
    [
        {
            "backbone": "Qwen3.7-Plus",
            "benchmark": "alfworld",
            "method": m,
            "value": v,
            "metric": "success_rate",
            "n_cases": 134,
        }
        for m, v in (("raw", 62.69), ("lh_harness", 72.39), ("pos", 88.81), ("pos_no_trapping", 73.13))
    ]
)


def root_of(fixture_runs) -> Path:
    return fixture_runs["toy_pos"].parents[2]


def outcomes(folder: Path) -> dict[str, bool]:
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    return {r["task_id"]: r["success"] for r in rows}


def test_table1_rows_carry_n_wilson_cluster_interval_and_flags(fixture_runs):
    table = ours(load_runs([root_of(fixture_runs)])).set_index(["benchmark", "method", "model"])
    wins = outcomes(fixture_runs["toy_pos"])
    row = table.loc[("toy", "pos", "scripted")]
    k, n = sum(wins.values()), len(wins)
    w = wilson(k, n)
    assert row["n"] == n and row["success %"] == pytest.approx(100 * k / n)
    assert row["wilson 95%"] == f"[{100 * w.low:.1f}, {100 * w.high:.1f}]" and row["flags"] == "stand-in"
    types = [
        json.loads(x)["task_meta"]["task_type"] for x in (fixture_runs["toy_pos"] / "results.jsonl").open()
    ]
    c = cluster_bootstrap([float(wins[t]) for t in wins], types)
    assert row["cluster"] == "task_type" and row["cluster 95%"] == f"[{100 * c.low:.1f}, {100 * c.high:.1f}]"
    assert table.loc[("toy", "raw", "scripted"), "flags"] == "stand-in, errors"
    assert table.loc[("toy", "raw", "scripted"), "errors"] == 1
    assert "interrupted" in table.loc[("toy", "pos", "scripted_killed"), "flags"]
    assert table.loc[("loca_mini", "pos", "scripted"), "cluster"] == "–"  # one family only: no clusters


def test_gain_over_the_strongest_baseline_absolute_and_relative(fixture_runs):
    table = ours(load_runs([root_of(fixture_runs)]))
    frame = gains(table, PAPER).set_index(["source", "benchmark"])
    pos = sum(outcomes(fixture_runs["toy_pos"]).values()) / 12 * 100
    raw = sum(outcomes(fixture_runs["toy_raw"]).values()) / 12 * 100
    toy = frame.loc[("ours scripted", "toy")]
    assert toy["strongest baseline"] == "raw" and toy["absolute"] == pytest.approx(pos - raw)
    assert toy["relative %"] == pytest.approx(100 * (pos - raw) / raw) and "stand-in" in toy["flags"]
    paper = frame.loc[("paper Qwen3.7-Plus", "alfworld")]
    assert paper["strongest baseline"] == "lh_harness" and paper["absolute"] == pytest.approx(16.42)
    assert paper["relative %"] == pytest.approx(100 * 16.42 / 72.39)


def test_paired_table_has_mcnemar_holm_and_mde(fixture_runs):
    table = comparisons(load_runs([root_of(fixture_runs)]))
    row = table[
        (table["benchmark"] == "toy") & (table["method"] == "pos") & (table["model"] == "scripted")
    ].iloc[0]
    a, b = outcomes(fixture_runs["toy_pos"]), outcomes(fixture_runs["toy_raw"])
    wins = sum(a[t] and not b[t] for t in a)
    losses = sum(b[t] and not a[t] for t in a)
    assert row["against"] == "raw" and row["n paired"] == 12 and row["wins/losses"] == f"{wins}/{losses}"
    assert row["McNemar p"] == pytest.approx(mcnemar_exact(wins, losses))
    assert row["Holm p"] >= row["McNemar p"] and row["Holm p"] <= 1.0
    assert row["MDE pts (80%)"] > 0
    assert set(table["benchmark"]) == {"toy", "loca_mini", "rca_synthetic"}


def test_token_table_has_roles_peak_and_dependency(fixture_runs):
    runs = load_runs([fixture_runs["toy_pos"]])
    table = token_table(runs).iloc[0]
    events = [
        json.loads(x) for x in (episode_dir(fixture_runs["toy_pos"], "toy/000") / "events.jsonl").open()
    ]
    assert table["belief k"] > 0 and table["sentinel_consistency k"] > 0 and table["peak"] > 0
    first_peak = max(
        e["usage"]["input_tokens"] for e in events if e["kind"] == "call" and e["role"] == "agent"
    )
    assert runs[0].episodes.set_index("task_id").loc["toy/000", "peak"] == first_peak


def test_tables_script_prints_every_table_with_labels(fixture_runs, tmp_path):
    spec = tmp_path / "spec"
    spec.mkdir()
    PAPER.to_csv(spec / "paper_results.csv", index=False)
    out = subprocess.run(
        [
            sys.executable,
            "scripts/tables.py",
            str(root_of(fixture_runs)),
            "--spec",
            str(spec),
            "--csv-dir",
            str(tmp_path / "csv"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for needle in (
        "wilson 95%",
        "cluster 95%",
        "strongest baseline",
        "relative %",
        "McNemar p",
        "Holm p",
        "MDE pts (80%)",
        "stand-in",
        "errors",
        "interrupted",
        "pos_no_trapping",
        "RuntimeError ×1",
    ):
        assert needle in out, needle
    assert (tmp_path / "csv" / "paired.csv").exists() and (tmp_path / "csv" / "table1.csv").exists()


def test_plots_script_writes_figure3_and_figure4(fixture_runs, tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "scripts/plots.py",
            str(root_of(fixture_runs)),
            "--spec",
            str(tmp_path),
            "--out",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in ("figure3_trapping.png", "figure4_lengths.png", "tokens_per_role.png", "ablations.png"):
        assert (tmp_path / name).stat().st_size > 5000, out


def test_smoke_and_rules_labels_come_from_run_metadata(fixture_runs, tmp_path):
    import shutil

    folder = tmp_path / "clindiag" / "raw" / "smollm2"
    shutil.copytree(fixture_runs["rca_raw"], folder)
    meta = json.loads((folder / "run.json").read_text())
    meta["labels"] = {"bench": "clindiag", "method": "raw", "model": "smollm2", "label": "smoke"}
    meta["config"]["bench"] = {"judge": "rules"}
    (folder / "run.json").write_text(json.dumps(meta))
    (run,) = load_runs([tmp_path])
    assert run.flags == ("smoke", "rules") and "smoke, rules" in text(collect([tmp_path], None))


def test_staged_paper_tables_load(shared):
    paper = load_paper(shared / "spec" / "paper_results.csv")
    counts = paper["value"] * paper["n_cases"] / 100
    assert len(paper) == 100 and (counts - counts.round()).abs().max() < 0.05
    tokens = token_table([], pd.read_csv(shared / "spec" / "paper_tokens.csv")).set_index("run")
    assert tokens.loc["paper Qwen3.7-Plus rca100/pos", "method k"] == 1800.13
