"""Print Table 1 (paper beside ours: n, Wilson and cluster-bootstrap 95% intervals, flags), the gain over the
strongest baseline, ablation drops, paired comparisons (McNemar, Holm, MDE), Table 2, the runs index and belief
accuracy against the ground truth per run.

python scripts/tables.py [RUN_DIR_OR_RESULTS_ROOT ...] [--spec ../shared/spec] [--backbone qwen=Qwen3.7-Plus]
                         [--csv-dir DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pos_bench.analysis.collect import collect, text
from pos_bench.events import DamagedFile

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="*", type=Path, default=[REPO / "results"])
    parser.add_argument("--spec", type=Path, default=REPO.parent / "shared" / "spec")
    parser.add_argument("--backbone", action="append", default=[], help="model=Paper backbone")
    parser.add_argument("--csv-dir", type=Path, help="also write every table as CSV here")
    parser.add_argument("--trials", type=int, help="read only the first K trials of each task (default: all)")
    args = parser.parse_args()
    try:
        tables = collect(
            args.runs, args.spec, dict(item.split("=", 1) for item in args.backbone), trials=args.trials
        )
    except DamagedFile as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print(text(tables))
    if args.csv_dir:
        args.csv_dir.mkdir(parents=True, exist_ok=True)
        for name, frame in tables.frames().items():
            frame.to_csv(args.csv_dir / f"{name}.csv", index=False)


if __name__ == "__main__":
    main()
