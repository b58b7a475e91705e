"""Verify the ALFWorld evaluation data (SPEC-BENCH §8): 134 games with the §2.1 per-type counts.

    .venv/bin/python scripts/check_alfworld_data.py [DATA_DIR]

DATA_DIR is resolved like `bench.data_dir` (a data tree, a folder holding the staged tarball, or the
tarball itself); without it the usual search applies. Exits 1 when the counts differ.
"""

from __future__ import annotations

import collections
import sys

from pos_bench.benchmarks.alfworld.data import find_data_root, select_games

EXPECTED = {"clean": 31, "heat": 23, "cool": 21, "pick_and_place": 24, "look_at_obj": 18, "pick_two": 17}


def main() -> int:
    root = find_data_root(sys.argv[1] if len(sys.argv) > 1 else None)
    counts = collections.Counter(game.task_type for game in select_games(root))
    print(f"data root: {root}")
    print(f"{'task type':16} {'found':>6} {'expected':>9}")
    for kind, expected in EXPECTED.items():
        mark = "" if counts[kind] == expected else "  <-- differs"
        print(f"{kind:16} {counts[kind]:6d} {expected:9d}{mark}")
    total = sum(counts.values())
    print(f"{'total':16} {total:6d} {sum(EXPECTED.values()):9d}")
    return 0 if dict(counts) == EXPECTED else 1


if __name__ == "__main__":
    sys.exit(main())
