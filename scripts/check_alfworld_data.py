"""Report the ALFWorld games a data tree holds, per split and task type (SPEC-BENCH §2.1, §8).

    .venv/bin/python scripts/check_alfworld_data.py [DATA_DIR]

DATA_DIR is resolved like `bench.data_dir` (a data tree, a folder holding the staged tarball, or the
tarball itself); without it the usual search applies. Every split found is counted after the
`AlfredTWEnv` filter and set beside the published counts (valid_unseen 134 with its per-type counts,
valid_seen 140, train 3,553). Exits 1 when no split is found or a found split's counts differ.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

from pos_bench.benchmarks.alfworld.data import SPLITS, TASK_TYPES, find_data_root, select_games

PUBLISHED_TYPES = {
    "clean": 31,
    "heat": 23,
    "cool": 21,
    "pick_and_place": 24,
    "look_at_obj": 18,
    "pick_two": 17,
}
"""valid_unseen per task type (SPEC-BENCH §2.1)."""
PUBLISHED_TOTALS = {"valid_unseen": 134, "valid_seen": 140, "train": 3553}


def count(data_dir: str | None, split: str) -> tuple[Path, collections.Counter] | None:
    try:
        root = find_data_root(data_dir, split)
    except FileNotFoundError:
        return None
    return root, collections.Counter(game.task_type for game in select_games(root, split))


def report(split: str, root: Path, counts: collections.Counter) -> bool:
    """Print one split's table; True when it matches what is published for it."""
    expected_types = PUBLISHED_TYPES if split == "valid_unseen" else {}
    print(f"\n{split} (data root: {root})")
    print(f"{'task type':16} {'found':>6} {'published':>10}")
    ok = True
    for kind in dict.fromkeys(TASK_TYPES.values()):
        expected = expected_types.get(kind)
        differs = expected is not None and counts[kind] != expected
        ok &= not differs
        shown = "" if expected is None else str(expected)
        print(f"{kind:16} {counts[kind]:6d} {shown:>10}{'  <-- differs' if differs else ''}")
    total, published = sum(counts.values()), PUBLISHED_TOTALS[split]
    ok &= total == published
    print(f"{'total':16} {total:6d} {published:10d}{'' if total == published else '  <-- differs'}")
    return ok


def main() -> int:
    data_dir = sys.argv[1] if len(sys.argv) > 1 else None
    found = {split: c for split in SPLITS if (c := count(data_dir, split)) is not None}
    missing = [s for s in SPLITS if s not in found]
    if missing:
        print("splits not found: " + ", ".join(missing))
    results = [report(split, *found[split]) for split in found]
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
