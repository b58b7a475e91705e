"""python -m pos_bench.export RUN_DIR OUT: a run's episodes and steps as parquet (`OUT/episodes.parquet`,
`OUT/steps.parquet`; see `pos_bench.export.parquet`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pos_bench.export.parquet import __doc__ as PARQUET_DOC
from pos_bench.export.parquet import export


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m pos_bench.export",
        description=PARQUET_DOC,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    if not args.run_dir.is_dir():
        raise SystemExit(f"no such run folder: {args.run_dir}")
    for split, path in export(args.run_dir, args.out).items():
        print(f"{split}: {path}")


if __name__ == "__main__":
    main()
