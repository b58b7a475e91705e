"""Write the figures: ablations, tokens per role, Figure 3 (trapping incidence; pattern × dimension),
Figure 4 (success per LOCA length) and belief accuracy per step, from the paper's numbers and this project's runs.

python scripts/plots.py [RUN_DIR_OR_RESULTS_ROOT ...] [--spec ../shared/spec] [--out results/figures]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pos_bench.analysis.collect import collect, write_figures

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="*", type=Path, default=[REPO / "results"])
    parser.add_argument("--spec", type=Path, default=REPO.parent / "shared" / "spec")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "figures")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    written, skipped = write_figures(collect(args.runs, args.spec), args.out)
    for path in written:
        print(path)
    for reason in skipped:
        print(f"skipped: {reason}")


if __name__ == "__main__":
    main()
