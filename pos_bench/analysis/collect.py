"""Every table of one analysis, computed once from run folders and the paper's CSVs, for the scripts and the
HTML report alike."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd

from pos_bench.analysis.belief import belief_accuracy
from pos_bench.analysis.paired import comparisons
from pos_bench.analysis.plots import ablation_plot, belief_plot, figure3, figure4, per_length, tokens_plot
from pos_bench.analysis.runs import Run, load_runs, runs_index
from pos_bench.analysis.tables import (
    DEFAULT_BACKBONES,
    ablation_drops,
    gains,
    load_paper,
    ours,
    side_by_side,
    token_table,
    with_paper,
)
from pos_bench.analysis.trapping import trapping
from pos_bench.analysis.trials import trials_table

PAPER_COLUMNS = ["backbone", "benchmark", "method", "value", "metric", "n_cases"]


@dataclass(frozen=True)
class Tables:
    runs: list[Run]
    index: pd.DataFrame
    table1: pd.DataFrame
    """One row per run of ours: n, success, Wilson and cluster intervals, flags, the paper's value."""
    paper_layout: pd.DataFrame
    gains: pd.DataFrame
    ablations: pd.DataFrame
    paired: pd.DataFrame
    trials: pd.DataFrame
    """One row per run: pass@1, pass@k and pass^k per k, flip rate and noise floor (`runner.trials`)."""
    tokens: pd.DataFrame
    incidence: pd.DataFrame
    patterns: pd.DataFrame
    lengths: pd.DataFrame
    belief: pd.DataFrame
    """One row per run that recorded truth: belief precision, recall, staleness, invented entities, audit."""
    belief_steps: pd.DataFrame
    paper: pd.DataFrame

    def frames(self) -> dict[str, pd.DataFrame]:
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if isinstance(getattr(self, f.name), pd.DataFrame)
        }


def collect(
    paths: Iterable[Path],
    spec: Path | None,
    backbones: Mapping[str, str] | None = None,
    *,
    trials: int | None = None,
) -> Tables:
    """`paths` are run folders or roots above them; `spec` holds paper_results.csv / paper_tokens.csv (optional);
    `trials` reads only the first K trials of each task (None: all)."""
    backbones = {**DEFAULT_BACKBONES, **(backbones or {})}
    runs = load_runs(paths, trials=trials)
    paper_csv = spec / "paper_results.csv" if spec else None
    paper = load_paper(paper_csv) if paper_csv and paper_csv.exists() else pd.DataFrame(columns=PAPER_COLUMNS)
    tokens_csv = spec / "paper_tokens.csv" if spec else None
    table1 = with_paper(ours(runs, backbones), paper)
    incidence, patterns = trapping(runs)
    belief, belief_steps = belief_accuracy(runs)
    return Tables(
        runs=runs,
        index=runs_index(runs),
        table1=table1,
        paper_layout=side_by_side(paper, table1),
        gains=gains(table1, paper),
        ablations=ablation_drops(table1, paper),
        paired=comparisons(runs),
        trials=trials_table(runs),
        tokens=token_table(runs, pd.read_csv(tokens_csv) if tokens_csv and tokens_csv.exists() else None),
        incidence=incidence,
        patterns=patterns,
        lengths=per_length(runs),
        belief=belief,
        belief_steps=belief_steps,
        paper=paper,
    )


SECTIONS = (
    ("index", "Runs"),
    ("table1", "Table 1, ours: success (%) with n, Wilson 95% and cluster-bootstrap 95% intervals"),
    ("paper_layout", "Table 1 in the paper's layout (paper per backbone, ours per run)"),
    ("gains", "Gain of PoS over the strongest baseline (absolute points; relative % of the baseline)"),
    ("ablations", "Ablation drops: PoS − variant (points)"),
    (
        "paired",
        (
            "Paired comparisons on shared tasks (exact McNemar p, Holm-adjusted across this table; a gain only past "
            "the noise floor, else within noise)"
        ),
    ),
    ("trials", "Repeated trials: pass@k, pass^k, flip rate and noise floor per run"),
    ("tokens", "Table 2: tokens per episode (thousands) per role, Peak and Dependency (×10⁶)"),
    ("incidence", "Figure 3 (left): trapping incidence"),
    ("patterns", "Figure 3 (right): trapping onsets by pattern × dimension"),
    ("lengths", "Figure 4: success per context length"),
    (
        "belief",
        (
            "Belief accuracy against the ground truth: precision (cluster bootstrap 95%; a claim about an "
            "invented entity counts false), recall over the goal's facts (bootstrap 95%), stale claims and "
            "their steps, invented entities; PoS: the Sentinel's audit on false updates (Wilson 95%); "
            "– where nothing was scored (no claim read as a fact, or no goal fact)"
        ),
    ),
)


def text(tables: Tables) -> str:
    """All tables as plain text, each under its title; an empty table says so."""
    out = []
    with pd.option_context("display.width", 250, "display.max_columns", 60, "display.max_colwidth", 60):
        for name, title in SECTIONS:
            frame = getattr(tables, name)
            body = (
                "(none)"
                if frame.empty
                else frame.to_string(
                    index=name == "paper_layout", na_rep="–", float_format=lambda v: f"{v:.4g}"
                )
            )
            out.append(f"== {title}\n{body}\n")
    return "\n".join(out)


def write_figures(tables: Tables, out: Path) -> tuple[list[Path], list[str]]:
    """Every figure the data allows, as PNGs in `out`; returns (written paths, reasons for the ones skipped)."""
    jobs = {
        "ablations.png": lambda p: ablation_plot(tables.paper, tables.table1, p),
        "tokens_per_role.png": lambda p: tokens_plot(tables.tokens, p),
        "figure3_trapping.png": lambda p: figure3(tables.incidence, tables.patterns, p),
        "figure4_lengths.png": lambda p: figure4(tables.lengths, p),
        "belief_accuracy.png": lambda p: belief_plot(tables.belief_steps, p),
    }
    written, skipped = [], []
    for name, draw in jobs.items():
        try:
            written.append(draw(out / name))
        except ValueError as why:  # a figure with no data says why instead of drawing an empty frame
            skipped.append(f"{name}: {why}")
    return written, skipped
