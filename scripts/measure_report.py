"""Measure the HTML report on a PoS run at ALFWorld scale: 134 scripted toy episodes in which PoS is trapped,
recovers and has updates repaired and rejected (the test fixtures' script). Prints build seconds and size.

python scripts/measure_report.py [--episodes 134] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the fixture script lives in tests/

from pos_bench.report.page import render
from tests.analysis.fixture_runs import toy_run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=134)
    parser.add_argument(
        "--keep", type=Path, help="write the run and report here instead of a temporary folder"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        started = time.perf_counter()
        folder = toy_run(root, "pos", args.episodes, skill=0.75)
        played = time.perf_counter() - started
        started = time.perf_counter()
        html = render([folder])
        built = time.perf_counter() - started
        out = root / "report.html"
        out.write_text(html, encoding="utf-8")
        size = out.stat().st_size
        print(f"run: {args.episodes} PoS episodes played in {played:.1f} s")
        print(f"report: built in {built:.2f} s, {size / 1e6:.2f} MB ({out if args.keep else 'temporary'})")
        if built >= 10 or size >= 20e6:
            raise SystemExit("over budget: the report must build in < 10 s and be < 20 MB")


if __name__ == "__main__":
    main()
