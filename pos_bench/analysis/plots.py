"""Figures: the PoS ablations (paper Table 1 + Figure 3 against our runs) and tokens per role per method."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from pos_bench.analysis.tables import DEFAULT_BACKBONES, run_column

ABLATIONS = ("pos", "pos_no_consistency", "pos_no_trapping", "pos_generic_recovery")


def ablation_plot(
    paper: pd.DataFrame, runs: pd.DataFrame, out: Path, backbones: Mapping[str, str] = DEFAULT_BACKBONES
) -> Path:
    """One panel per benchmark: bars per PoS variant, one series per paper backbone and per run of ours."""
    series = paper[paper["method"].isin(ABLATIONS)].assign(series=lambda f: "paper " + f["backbone"])
    if not runs.empty:
        mine = runs[runs["method"].isin(ABLATIONS)]
        mine = mine.assign(series=[run_column(r, backbones) for r in mine.to_dict("records")])
        series = pd.concat([series, mine[["benchmark", "method", "value", "series"]]], ignore_index=True)
    benchmarks = sorted(series["benchmark"].unique())
    fig, axes = plt.subplots(1, len(benchmarks), figsize=(4.5 * len(benchmarks), 4), squeeze=False)
    for ax, bench in zip(axes[0], benchmarks):
        table = series[series["benchmark"] == bench].pivot_table(
            index="method", columns="series", values="value", aggfunc="first"
        )
        table = table.reindex([m for m in ABLATIONS if m in table.index])
        table.plot.bar(ax=ax, rot=30, legend=bench == benchmarks[-1])
        ax.set_title(bench)
        ax.set_ylabel("success / accuracy (%)")
        ax.set_xlabel("")
    if benchmarks:
        axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return out


def tokens_plot(runs: pd.DataFrame, out: Path) -> Path:
    """Stacked bars: mean tokens per episode by role, one bar per (benchmark, method, model) run."""
    role_columns = [c for c in runs.columns if c.startswith("tokens_k:")]
    if runs.empty or not role_columns:
        raise ValueError("no runs with token usage to plot")
    frame = runs.assign(
        run=runs["benchmark"] + "/" + runs["method"] + "/" + runs["model"] + " [" + runs["label"] + "]"
    )
    frame = frame.set_index("run")[role_columns].fillna(0.0)
    frame.columns = [c.split(":", 1)[1] for c in role_columns]
    ax = frame.plot.barh(stacked=True, figsize=(8, 0.5 * len(frame) + 2))
    ax.set_xlabel("thousand tokens per episode")
    ax.figure.tight_layout()
    ax.figure.savefig(out, dpi=120)
    plt.close(ax.figure)
    return out
