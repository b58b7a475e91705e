"""Figures: ablations (paper Table 1 beside ours), tokens per role, Figure 3 (trapping incidence and the pattern ×
dimension mix) and Figure 4 (success per LOCA length with Wilson intervals). Every series of ours is named with
its run flags, so a stand-in or smoke run is labelled in the figure itself."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from pos_bench.analysis.runs import Run
from pos_bench.analysis.stats import wilson
from pos_bench.analysis.tables import ABLATIONS, POS

LENGTH_KEYS = ("meta.length", "meta.scale")
"""Task-meta keys holding a case's context length (8k … 256k): LOCA-Bench's `length`, mini-LOCA's `scale`."""


def _bars(value: pd.Series, low: pd.Series, high: pd.Series) -> list[pd.Series]:
    """Error-bar lengths below and above; clipped at 0 (a Wilson bound can sit a rounding error past 0 or 100%)."""
    return [(value - low).clip(lower=0), (high - value).clip(lower=0)]


def _save(fig, out: Path) -> Path:
    fig.tight_layout()
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


def ablation_plot(paper: pd.DataFrame, table: pd.DataFrame, out: Path) -> Path:
    """One panel per benchmark: bars per PoS variant, one series per paper backbone and per run of ours."""
    keep = (POS, *ABLATIONS)
    series = paper[paper["method"].isin(keep)].assign(series=lambda f: "paper " + f["backbone"])
    series = series[["benchmark", "method", "value", "series"]]
    if not table.empty:
        mine = table[table["method"].isin(keep)]
        mine = mine.assign(
            series="ours " + mine["model"] + " [" + mine["flags"] + "]", value=mine["success %"]
        )
        series = pd.concat([series, mine[["benchmark", "method", "value", "series"]]], ignore_index=True)
    benchmarks = sorted(series["benchmark"].unique())
    fig, axes = plt.subplots(
        1, max(len(benchmarks), 1), figsize=(4.5 * max(len(benchmarks), 1), 4), squeeze=False
    )
    for ax, bench in zip(axes[0], benchmarks):
        frame = series[series["benchmark"] == bench].pivot_table(
            index="method", columns="series", values="value", aggfunc="first"
        )
        frame.reindex([m for m in keep if m in frame.index]).plot.bar(ax=ax, rot=30, legend=False)
        ax.set_title(bench)
        ax.set_ylabel("success / accuracy (%)")
        ax.set_xlabel("")
    if benchmarks:
        handles, labels = axes[0][0].get_legend_handles_labels()
        for ax in axes[0][1:]:
            more = ax.get_legend_handles_labels()
            handles += [h for h, lab in zip(*more) if lab not in labels]
            labels += [lab for lab in more[1] if lab not in labels]
        axes[0][-1].legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(fig, out)


def tokens_plot(tokens: pd.DataFrame, out: Path) -> Path:
    """Stacked bars: mean thousand tokens per episode by role, one bar per run (the token table's rows of ours)."""
    mine = tokens[~tokens["run"].str.startswith("paper ")]
    roles = [c for c in mine.columns if c.endswith(" k") and c != "method k"]
    if mine.empty or not roles:
        raise ValueError("no runs with token usage to plot")
    frame = mine.assign(run=mine["run"] + " [" + mine["flags"] + "]").set_index("run")[roles].fillna(0.0)
    frame.columns = [c.removesuffix(" k") for c in roles]
    ax = frame.plot.barh(stacked=True, figsize=(8, 0.5 * len(frame) + 2))
    ax.set_xlabel("thousand tokens per episode")
    return _save(ax.figure, out)


def figure3(incidence: pd.DataFrame, distribution: pd.DataFrame, out: Path) -> Path:
    """Left: share of episodes trapped at least once (Wilson 95% bars). Right: trapping onsets by pattern ×
    dimension, as a share of each run's onsets."""
    if incidence.empty:
        raise ValueError("no PoS episodes with health records: nothing for Figure 3")
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.55 * len(incidence) + 3))
    names = incidence["run"] + " [" + incidence["flags"] + "]"
    errors = _bars(incidence["incidence %"], incidence["low %"], incidence["high %"])
    left.barh(names, incidence["incidence %"], xerr=errors, capsize=3, color="#4c72b0")
    left.set_xlim(0, 100)
    left.set_xlabel("episodes trapped at least once (%)")
    left.set_title("Trapping incidence")
    if not distribution.empty:
        tags = dict(zip(incidence["run"], names))
        mix = distribution.assign(
            kind=distribution["pattern"] + " × " + distribution["dimension"],
            run=distribution["run"].map(tags),
        )
        share = mix.pivot_table(index="run", columns="kind", values="onsets", aggfunc="sum").fillna(0)
        share = share.div(share.sum(axis=1), axis=0) * 100
        share.plot.barh(stacked=True, ax=right, colormap="tab20")
        right.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    right.set_xlabel("share of trapping onsets (%)")
    right.set_title("Pattern (Static / Cycle / Drift) × gap dimension")
    return _save(fig, out)


def scale_value(scale: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*[kK]", str(scale))
    return float(match.group(1)) if match else float("inf")


def per_length(runs: Sequence[Run]) -> pd.DataFrame:
    """Success per context length for every run whose tasks record one, with Wilson 95% intervals (%)."""
    rows = []
    for run in runs:
        done = run.finished
        key = next((k for k in LENGTH_KEYS if k in done), None)
        if key is None:
            continue
        for scale, group in done.groupby(key):
            k, n = int(group["success"].sum()), len(group)
            w = wilson(k, n)
            rows.append(
                {
                    "run": run.name,
                    "flags": ", ".join(run.flags) or "–",
                    "length": str(scale),
                    "n": n,
                    "success %": 100 * k / n,
                    "low %": 100 * w.low,
                    "high %": 100 * w.high,
                }
            )
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values(
            ["run", "length"], key=lambda c: c.map(scale_value) if c.name == "length" else c
        )
    return frame


def figure4(lengths: pd.DataFrame, out: Path) -> Path:
    if lengths.empty:
        raise ValueError(
            "no run records a context length (task meta `length` or `scale`): nothing for Figure 4"
        )
    order = sorted(lengths["length"].unique(), key=scale_value)
    fig, ax = plt.subplots(figsize=(7, 4))
    series = list(lengths.groupby(["run", "flags"]))
    for i, ((run, flags), group) in enumerate(series):
        dodge = (i - (len(series) - 1) / 2) * 0.06  # overlapping series stay visible
        x = [order.index(s) + dodge for s in group["length"]]
        err = _bars(group["success %"], group["low %"], group["high %"])
        ax.errorbar(x, group["success %"], yerr=err, marker="o", capsize=3, label=f"{run} [{flags}]")
    ax.set_xticks(range(len(order)), order)
    ax.set_ylim(-5, 105)
    ax.set_xlabel("context length")
    ax.set_ylabel("success (%)")
    ax.set_title("Success per LOCA length (Wilson 95%)")
    ax.legend(fontsize=7)
    return _save(fig, out)


def belief_plot(per_step: pd.DataFrame, out: Path) -> Path:
    """Belief precision per step (facts true / facts scored, pooled over a run's episodes), one line per run
    that recorded truth and claims (`analysis.belief`); a marker's size grows with the facts scored."""
    if per_step.empty:
        raise ValueError("no run has a claim scored against its truth")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for run, frame in per_step.groupby("run", sort=True):
        ax.plot(frame["step"], frame["precision"], label=run, linewidth=1)
        ax.scatter(frame["step"], frame["precision"], s=4 + 40 * frame["scored"] / per_step["scored"].max())
    ax.set_xlabel("step (-1: after the reset)")
    ax.set_ylabel("belief precision")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize="small")
    return _save(fig, out)
