"""python -m pos_bench.report RUN_DIR [RUN_DIR ...] -o report.html [--spec DIR] [--no-figures]

Each RUN_DIR is a run folder or a results root above run folders. The output is one HTML file with its data
embedded; it opens offline, and works on runs still in progress or with errors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pos_bench.events import DamagedFile
from pos_bench.report.page import MAX_MB, render

DEFAULT_SPEC = Path(__file__).resolve().parents[2].parent / "shared" / "spec"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("-o", "--output", type=Path, default=Path("report.html"))
    parser.add_argument(
        "--spec",
        type=Path,
        default=DEFAULT_SPEC,
        help="folder with paper_results.csv and paper_tokens.csv (skipped when absent)",
    )
    parser.add_argument(
        "--no-figures", action="store_true", help="leave the PNG figures out (faster, smaller)"
    )
    parser.add_argument(
        "--max-mb",
        type=float,
        default=MAX_MB,
        help="megabytes of episode steps embedded (the episodes past it keep their row and transcript link)",
    )
    args = parser.parse_args()
    missing = [str(p) for p in args.runs if not p.exists()]
    if missing:
        raise SystemExit(f"no such run folder: {', '.join(missing)}")
    try:
        html = render(
            args.runs,
            spec=args.spec if args.spec.is_dir() else None,
            with_figures=not args.no_figures,
            max_mb=args.max_mb,
        )
    except DamagedFile as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    args.output.write_text(html, encoding="utf-8")
    print(f"{args.output} ({args.output.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
