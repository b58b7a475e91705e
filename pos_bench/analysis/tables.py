"""Paper tables side by side with this project's runs.

Our numbers come from each run's `summary.json` under a results root (`<bench>/<method>/<model>/`); the
paper's from `paper_results.csv` (Table 1 + Figure 3) and `paper_tokens.csv` (Table 2). A run on a
smoke-test model keeps its `smoke` label in every column name, so it is never mistaken for a reproduction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

DEFAULT_BACKBONES = {"qwen": "Qwen3.7-Plus", "kimi": "Kimi-K3", "glm": "GLM-5.3"}
"""Model config name → the paper backbone it stands for (override with --backbone name=Backbone)."""

BENCHMARK_ROLE_PREFIX = "benchmark_"


def load_paper(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path)
    expected = {"backbone", "benchmark", "method", "value", "metric", "n_cases"}
    if not expected <= set(frame.columns):
        raise ValueError(f"{path} lacks columns {sorted(expected - set(frame.columns))}")
    return frame


def load_runs(results_root: Path) -> pd.DataFrame:
    """One row per run directory that has a summary.json (`<bench>/<method>/<model>/<run>/`, one run folder
    per settings fingerprint; runs written before fingerprints sit directly in `<bench>/<method>/<model>/`)."""
    rows = []
    found = [*results_root.glob("*/*/*/summary.json"), *results_root.glob("*/*/*/*/summary.json")]
    for path in sorted(found):
        data = json.loads(path.read_text(encoding="utf-8"))
        bench, method, model = path.parent.relative_to(results_root).parts[:3]
        usage = data.get("usage", {})
        episodes = max(int(data.get("episodes", 0)), 1)
        row = {
            "benchmark": data["labels"].get("bench", bench),
            "method": data["labels"].get("method", method),
            "model": data["labels"].get("model", model),
            "label": data["labels"].get("label", "full"),
            "episodes": int(data.get("episodes", 0)),
            "errors": int(data.get("errors", 0)),
            "value": 100.0 * float(data.get("success_rate", 0.0)),
            "steps": float(data.get("mean_steps", 0.0)),
            "method_tokens_k": float(data.get("method_tokens_per_episode", 0.0)) / 1000.0,
        }
        for role, u in usage.items():
            row[f"tokens_k:{role}"] = (u["input_tokens"] + u["output_tokens"]) / episodes / 1000.0
        rows.append(row)
    return pd.DataFrame(rows)


def run_column(row: Mapping, backbones: Mapping[str, str]) -> str:
    backbone = backbones.get(row["model"], row["model"])
    return f"ours {backbone} [{row['label']}] (n={row['episodes']})"


def side_by_side(
    paper: pd.DataFrame, runs: pd.DataFrame, backbones: Mapping[str, str] = DEFAULT_BACKBONES
) -> pd.DataFrame:
    """Table 1: rows (benchmark, method), paper values per backbone, then our runs per model."""
    table = paper.pivot_table(
        index=["benchmark", "method"], columns="backbone", values="value", aggfunc="first"
    )
    table.columns = [f"paper {c}" for c in table.columns]
    if not runs.empty:
        ours = runs.assign(column=[run_column(r, backbones) for r in runs.to_dict("records")])
        mine = ours.pivot_table(
            index=["benchmark", "method"], columns="column", values="value", aggfunc="first"
        )
        table = table.join(mine, how="outer")
    return table.round(2)


def token_table(paper_tokens: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Table 2: mean tokens per episode (thousands) per role, ours beside the paper's totals."""
    paper = paper_tokens.set_index(["benchmark", "method"])[["agent_tokens_k", "total_tokens_k"]]
    paper.columns = [f"paper {c}" for c in paper.columns]
    if runs.empty:
        return paper
    role_columns = [c for c in runs.columns if c.startswith("tokens_k:")]
    mine = runs.set_index(["benchmark", "method"])[["model", "label", "method_tokens_k", *role_columns]]
    mine = mine.rename(columns={c: c.replace("tokens_k:", "ours k ") for c in role_columns})
    return paper.join(mine, how="outer").round(2)
