"""Table 1 and Table 2 of the paper beside this project's runs, with n, 95% intervals, gains and ablation drops.

The paper's numbers come from `paper_results.csv` (Table 1 + Figure 3) and `paper_tokens.csv` (Table 2); ours
from run folders (`analysis.runs`). Every row of ours carries the run's flags (`smoke`, `rules`, `stand-in`,
`errors`, `in progress`, `interrupted`), so no number is mistaken for a reproduction.

Gain over the strongest baseline (per benchmark and backbone): absolute = PoS − best baseline, in points;
relative = absolute / best baseline × 100, in percent of the baseline's score. The specs do not pin the
paper's wording of "relative gain"; this is the usual definition, applied the same way to the paper's rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from pos_bench.analysis.runs import Run, cluster_key
from pos_bench.analysis.stats import cluster_bootstrap, wilson

DEFAULT_BACKBONES = {"qwen": "Qwen3.7-Plus", "kimi": "Kimi-K3", "glm": "GLM-5.3"}
"""Model config name → the paper backbone it stands for (override with --backbone name=Backbone)."""

BASELINES = ("raw", "acon", "pace", "hiagent", "lh_harness", "stateact", "reflact")
"""Context-management baselines (the paper's five, then the optional two); the strongest is chosen from these."""
POS = "pos"
ABLATIONS = ("pos_no_consistency", "pos_no_trapping", "pos_generic_recovery")


def load_paper(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path)
    expected = {"backbone", "benchmark", "method", "value", "metric", "n_cases"}
    if not expected <= set(frame.columns):
        raise ValueError(f"{path} lacks columns {sorted(expected - set(frame.columns))}")
    return frame


def unplayed(run: Run, label: str) -> int:
    e = run.episodes
    return int((e["unplayed"] == label).sum()) if "unplayed" in e else 0


def rate_row(run: Run, backbones: Mapping[str, str]) -> dict:
    """One run's success rate (%) with n, the Wilson interval and, where cases cluster, the cluster bootstrap.

    With repeated trials the rate is pass@1 (every trial counted), n counts episodes, the Wilson interval (which
    would treat trials as independent cases) is left out, and the bootstrap clusters trials by task (or by the
    task family, which holds whole tasks)."""
    done = run.finished
    n, k = len(done), int(done["success"].sum()) if len(done) else 0
    trials = int(done["trial"].max()) + 1 if n else 1
    w = wilson(k, n)
    key = cluster_key(done) or ("task_id" if trials > 1 else None)
    row = {
        "benchmark": run.bench,
        "method": run.method,
        "model": run.model,
        "backbone": backbones.get(run.model),
        "flags": ", ".join(run.flags) or "–",
        "n": n,
        "errors": int((done["status"] == "error").sum()) if n else 0,
        # episodes the model never got to act in: outside n and the rate, shown apart (a serving problem)
        "refused": unplayed(run, "refused"),
        "overflow": unplayed(run, "overflow"),
        "success %": 100.0 * k / n if n else float("nan"),
        # counted as failures in the rate above; shows where an offline judge's score is unsure
        "undecided": int(done["undecided"].sum()) if n and "undecided" in done else 0,
        "trials": trials,
        "wilson 95%": f"[{100 * w.low:.1f}, {100 * w.high:.1f}]" if trials == 1 else "–",
        "cluster": key.removeprefix("meta.").removesuffix("_id") if key else "–",
        "cluster 95%": "–",
    }
    if key:
        c = cluster_bootstrap(done["success"].astype(float).tolist(), done[key].tolist())
        row["cluster 95%"] = f"[{100 * c.low:.1f}, {100 * c.high:.1f}]"
    return row


def ours(runs: Iterable[Run], backbones: Mapping[str, str] = DEFAULT_BACKBONES) -> pd.DataFrame:
    """Table 1, our side: one row per run, with the paper's value for the same benchmark, method and backbone."""
    return pd.DataFrame([rate_row(r, backbones) for r in runs])


def with_paper(table: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    if table.empty:
        return table
    values = paper.set_index(["benchmark", "method", "backbone"])["value"]
    table = table.copy()
    table["paper %"] = [
        values.get((b, m, bb), float("nan"))
        for b, m, bb in zip(table["benchmark"], table["method"], table["backbone"])
    ]
    return table


def side_by_side(paper: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """The paper's layout: rows (benchmark, method), paper values per backbone, then one column per run of ours
    named with its model and flags (n is in `ours`)."""
    wide = paper.pivot_table(
        index=["benchmark", "method"], columns="backbone", values="value", aggfunc="first"
    )
    wide.columns = [f"paper {c}" for c in wide.columns]
    if not table.empty:
        column = "ours " + table["model"] + " [" + table["flags"] + "]"
        mine = table.assign(column=column).pivot_table(
            index=["benchmark", "method"], columns="column", values="success %", aggfunc="first"
        )
        wide = wide.join(mine, how="outer")
    return wide.round(2)


def _best_baseline(values: Mapping[str, float]) -> tuple[str, float] | None:
    present = [(m, v) for m, v in values.items() if m in BASELINES and pd.notna(v)]
    return max(present, key=lambda mv: mv[1]) if present else None


def _gain(pos: float | None, best: tuple[str, float] | None) -> dict:
    if pos is None or best is None:
        return {
            "strongest baseline": best[0] if best else "–",
            "absolute": float("nan"),
            "relative %": float("nan"),
        }
    absolute = pos - best[1]
    return {
        "strongest baseline": best[0],
        "baseline %": best[1],
        "PoS %": pos,
        "absolute": absolute,
        "relative %": 100.0 * absolute / best[1] if best[1] else float("nan"),
    }


def gains(table: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Gain of PoS over the strongest baseline per (benchmark, model) of ours, beside the paper's for that
    benchmark and the model's backbone (every backbone when the model stands for none)."""
    rows = []
    for (bench, model), group in table.groupby(["benchmark", "model"]) if not table.empty else []:
        values = dict(zip(group["method"], group["success %"]))
        flags = ", ".join(sorted({f for fl in group["flags"] for f in fl.split(", ") if f != "–"})) or "–"
        rows.append(
            {
                "source": f"ours {model}",
                "benchmark": bench,
                "flags": flags,
                **_gain(values.get(POS), _best_baseline(values)),
            }
        )
    for (bench, backbone), group in paper.groupby(["benchmark", "backbone"]):
        values = dict(zip(group["method"], group["value"]))
        rows.append(
            {
                "source": f"paper {backbone}",
                "benchmark": bench,
                "flags": "–",
                **_gain(values.get(POS), _best_baseline(values)),
            }
        )
    return pd.DataFrame(rows)


def ablation_drops(table: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """PoS − each ablation, in points, ours per (benchmark, model) beside the paper's per backbone."""
    rows = []
    sources = [
        (f"ours {m}", b, g.set_index("method")["success %"])
        for (b, m), g in (table.groupby(["benchmark", "model"]) if not table.empty else [])
    ]
    sources += [
        (f"paper {bb}", b, g.set_index("method")["value"])
        for (b, bb), g in paper.groupby(["benchmark", "backbone"])
    ]
    for source, bench, values in sources:
        if POS not in values:
            continue
        for variant in ABLATIONS:
            if variant in values:
                rows.append(
                    {
                        "source": source,
                        "benchmark": bench,
                        "ablation": variant,
                        "PoS %": values[POS],
                        "ablation %": values[variant],
                        "drop": values[POS] - values[variant],
                    }
                )
    return pd.DataFrame(rows)


def token_table(runs: Sequence[Run], paper_tokens: pd.DataFrame | None = None) -> pd.DataFrame:
    """Table 2: mean tokens per episode (thousands) per role, Peak (max policy input tokens, mean over
    episodes) and Dependency (×10⁶, mean) where recorded; the paper's rows (agent and total) below ours."""
    rows = []
    for run in runs:
        done = run.finished
        row = {"run": run.name, "flags": ", ".join(run.flags) or "–", "n": len(done)}
        for column in sorted(c for c in done.columns if c.startswith("tokens.")):
            row[f"{column.removeprefix('tokens.')} k"] = done[column].fillna(0).mean() / 1000
        row["method k"] = (
            done["method_tokens"].mean() / 1000 if "method_tokens" in done and len(done) else None
        )
        for key in ("peak", "dependency"):
            values = done[key].dropna() if key in done else pd.Series(dtype=float)
            row[key] = values.mean() if len(values) else None
        rows.append(row)
    if paper_tokens is not None:
        for p in paper_tokens.to_dict("records"):
            rows.append(
                {
                    "run": f"paper {p['backbone']} {p['benchmark']}/{p['method']}",
                    "flags": "–",
                    "n": p["n_cases"],
                    "agent k": p["agent_tokens_k"],
                    "method k": p["total_tokens_k"],
                }
            )
    return pd.DataFrame(rows).round(3)
