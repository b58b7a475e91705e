"""Print the paper's Table 1 (and Table 2) beside this project's runs.

python scripts/tables.py [--results results] [--spec ../shared/spec] [--backbone qwen=Qwen3.7-Plus] [--csv out.csv]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from pos_bench.analysis.tables import DEFAULT_BACKBONES, load_paper, load_runs, side_by_side, token_table

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--results", type=Path, default=REPO / "results")
    parser.add_argument("--spec", type=Path, default=REPO.parent / "shared" / "spec")
    parser.add_argument("--backbone", action="append", default=[], help="model=Paper backbone")
    parser.add_argument("--csv", type=Path, help="also write Table 1 here")
    args = parser.parse_args()
    backbones = dict(DEFAULT_BACKBONES, **dict(item.split("=", 1) for item in args.backbone))
    paper_csv = args.spec / "paper_results.csv"
    if not paper_csv.exists():
        raise SystemExit(f"paper_results.csv not found at {paper_csv}; pass --spec DIR")
    runs = load_runs(args.results)
    table = side_by_side(load_paper(paper_csv), runs, backbones)
    with pd.option_context("display.width", 250, "display.max_columns", 50):
        print("Table 1: success / accuracy (%), paper vs ours\n")
        print(table.to_string(na_rep="–"))
        tokens_csv = args.spec / "paper_tokens.csv"
        if tokens_csv.exists():
            print("\nTable 2: tokens per episode (thousands)\n")
            print(token_table(pd.read_csv(tokens_csv), runs).to_string(na_rep="–"))
    if args.csv:
        table.to_csv(args.csv)


if __name__ == "__main__":
    main()
