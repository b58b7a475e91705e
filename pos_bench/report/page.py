"""Run folders → one self-contained HTML file: the runs index and Table 1 at the top, figures, and every
episode step by step, with the PoS belief timeline and a second pane for another run of the same task.

Rendering is Jinja2 with autoescape on: every table cell is escaped by the template, and the episode data
is embedded as gzip-compressed JSON in base64 (an alphabet with no markup characters) and drawn by the page's
script with `textContent` only, so no text from a model or a benchmark can become markup. Nothing is loaded
from the network: figures are inline PNGs, the script is inline, and a Content-Security-Policy forbids the rest.

At size (a sweep of 1,000+ episodes) the page stays usable: each episode's steps are a packed block of their
own (its texts interned within it), inflated by the browser only when the episode is opened, so opening the page
decodes the small index alone; and the blocks embedded stop at `max_mb` (45 MB), the episodes past it keeping
their row and a link to their `events.jsonl`. The blocks are packed by `blocks`, one episode's steps in memory
at a time per core.
"""

from __future__ import annotations

import base64
import math
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

from pos_bench.analysis.collect import Tables, collect, write_figures
from pos_bench.analysis.runs import Run, episode_folder
from pos_bench.analysis.trials import strips
from pos_bench.report.blocks import Blocks, pack

TOP_TABLES = (
    ("index", "Runs"),
    ("table1", "Table 1 — ours: success with n, Wilson 95% and cluster-bootstrap 95% intervals"),
    (
        "gains",
        "Gain of PoS over the strongest baseline (absolute points; relative % of the baseline's score)",
    ),
    ("ablations", "Ablation drops (PoS − variant, points)"),
    (
        "paired",
        (
            "Paired comparisons on shared tasks (exact McNemar p; Holm across the table; MDE at 80% power; the "
            "noise floor beside each difference, a gain only past it)"
        ),
    ),
    ("trials", "Repeated trials — pass@k, pass^k, flip rate, noise floor per run"),
    ("tokens", "Table 2 — tokens per episode (thousands) per role, Peak, Dependency (×10⁶)"),
    ("incidence", "Figure 3 data — trapping incidence"),
    ("patterns", "Figure 3 data — trapping onsets by pattern × dimension"),
    ("lengths", "Figure 4 data — success per context length"),
    (
        "belief",
        (
            "Belief accuracy against the ground truth (precision — a claim about an invented entity counts "
            "false —, recall, staleness, invented; PoS audit; – where nothing was scored)"
        ),
    ),
)


def cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table_view(frame: pd.DataFrame) -> dict[str, Any]:
    return {
        "columns": [str(c) for c in frame.columns],
        "rows": [[cell(v) for v in row] for row in frame.itertuples(index=False)],
    }


MAX_MB = 45.0
"""Megabytes of packed episode steps one report embeds (the page stays under 50 MB with its tables)."""


def episode_payload(run: Run, blocks: Blocks) -> list[dict[str, Any]]:
    out = []
    for row in run.episodes.to_dict("records"):
        path = episode_folder(run.folder, row["task_id"], int(row.get("trial") or 0)) / "events.jsonl"
        error = row.get("error")
        unplayed = row.get("unplayed")
        out.append(
            {
                "task": row["task_id"],
                "trial": int(row.get("trial") or 0),
                # refused / overflow: the model never got to act; not a failure of the method
                "status": unplayed if isinstance(unplayed, str) else row["status"],
                "success": bool(row["success"]),
                "steps": int(row.get("steps") or 0),
                "error": None
                if error is None or (isinstance(error, float) and math.isnan(error))
                else str(error),
                "file": path.resolve().as_uri(),
                "block": blocks.add(path),  # packed by `Blocks.pack`, then numbered by `Blocks.index`
            }
        )
    return out


def strip_table(runs: Iterable[Run]) -> pd.DataFrame:
    """Per run with repeated trials and per task: its trials as a ✓/✗ strip and whether they flip."""
    rows = [
        {
            "run": run.name,
            "task": task,
            "trials": strip,
            "flips": "yes" if len(set(strip) - {"·"}) > 1 else "",
        }
        for run in runs
        for task, strip in strips(run).items()
        if len(strip) > 1
    ]
    return pd.DataFrame(rows)


def figures(tables: Tables) -> list[dict[str, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        written, skipped = write_figures(tables, Path(tmp))
        images = [
            {"name": p.stem, "src": "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode()}
            for p in written
        ]
    return images + [{"name": reason, "src": ""} for reason in skipped]


def render(
    paths: Iterable[Path], *, spec: Path | None = None, with_figures: bool = True, max_mb: float = MAX_MB
) -> str:
    tables = collect(paths, spec)
    blocks = Blocks(max_mb * 1e6)
    runs = [
        {
            "id": i,
            "name": r.name,
            "bench": r.bench,
            "method": r.method,
            "model": r.model,
            "flags": list(r.flags),
            "episodes": episode_payload(r, blocks),
        }
        for i, r in enumerate(tables.runs)
    ]
    blocks.pack()
    for run in runs:
        for episode in run["episodes"]:
            episode["block"] = blocks.index(episode["block"])
    env = Environment(
        loader=PackageLoader("pos_bench.report", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "j2"), default=True),
    )
    template = env.get_template("report.html.j2")
    return template.render(
        tables=[(title, table_view(getattr(tables, name))) for name, title in TOP_TABLES]
        + [("Trials per task (✓ success, ✗ failure, in trial order)", table_view(strip_table(tables.runs)))],
        figures=figures(tables) if with_figures else [],
        runs=runs,
        payload=pack({"runs": runs}),
        blocks=blocks.items,
        left_out=blocks.left_out,
        max_mb=max_mb,
    )
