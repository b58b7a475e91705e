"""Measure how long bench=clindiag takes to list a large case tree before its first episode (issue 27).

Builds a synthetic tree in upstream naming (`rare<N>` folders beside PMID-like ones, no manifest) in a temporary
folder, then lists it with `ClinDiagBenchmark(...).tasks()` for `bench.subset=all` and `rare`, and prints the CPU
seconds (process user + system) and wall seconds of each listing.

    python scripts/clindiag_list_speed.py [--cases 2021] [--data DIR]   # --data: list a real copy instead
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from pos_bench.benchmarks.clindiag.benchmark import ClinDiagBenchmark
from pos_bench.benchmarks.clindiag.data import ANSWER, INITIAL, SECTION_SOURCES

FILES = sorted({INITIAL, ANSWER, *(name for sources in SECTION_SOURCES.values() for name, _ in sources)})


def build(root: Path, cases: int) -> Path:
    """`cases` folders, one in ten `rare<N>`, each with every per-file-layout file (small JSON)."""
    for i in range(cases):
        folder = root / "benchmark_dataset" / (f"rare{i // 10}" if i % 10 == 0 else str(20_000_000 + i))
        folder.mkdir(parents=True)
        for name in FILES:
            (folder / name).write_text(json.dumps({"text": f"case {i} {name}"}), encoding="utf-8")
    return root


def timed(tree: Path, subset: str) -> tuple[int, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    n = len(ClinDiagBenchmark(str(tree), subset=subset).tasks())
    return n, time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=2021, help="cases in the tree (upstream has 2,021)")
    parser.add_argument("--data", help="list this copy of the cases (a tree, archive or folder) instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="clindiag-list-") as folder:
        tree = Path(args.data) if args.data else build(Path(folder), args.cases)
        for subset in ("all", "rare", "challenging"):
            n, cpu, wall = timed(tree, subset)
            print(f"bench.subset={subset}: {n} cases listed in {cpu:.2f} CPU s ({wall:.2f} s wall)")


if __name__ == "__main__":
    main()
