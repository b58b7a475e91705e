"""Write the ablation figure and the tokens-per-role figure from the paper's numbers and this project's runs.

python scripts/plots.py [--results results] [--spec ../shared/spec] [--out results/figures]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pos_bench.analysis.plots import ablation_plot, tokens_plot
from pos_bench.analysis.tables import load_paper, load_runs

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--results", type=Path, default=REPO / "results")
    parser.add_argument("--spec", type=Path, default=REPO.parent / "shared" / "spec")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "figures")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    runs = load_runs(args.results)
    print(ablation_plot(load_paper(args.spec / "paper_results.csv"), runs, args.out / "ablations.png"))
    if not runs.empty:
        print(tokens_plot(runs, args.out / "tokens_per_role.png"))


if __name__ == "__main__":
    main()
