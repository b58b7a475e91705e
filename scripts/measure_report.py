"""Measure the HTML report on a PoS run at ALFWorld scale: 134 scripted toy episodes in which PoS is trapped,
recovers and has updates repaired and rejected (the test fixtures' script). Prints build seconds and size.
`--transcript-mb 90` instead grows one episode's transcript to that size (long prompts and replies) and
checks the page stays under 10 MB and the build under 0.3 GB of peak memory (issue 30).

python scripts/measure_report.py [--episodes 134] [--transcript-mb MB] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the fixture script lives in tests/

from pos_bench.report.page import render
from pos_bench.transcript import find_episode
from tests.analysis.fixture_runs import toy_run


def grow_transcript(folder: Path, task_id: str, megabytes: float) -> int:
    """Append `call` events with 1 MB prompts and replies to `task_id`'s events.jsonl until it holds
    `megabytes` MB (text no report could show whole); returns its size in bytes."""
    path = find_episode(folder, task_id) / "events.jsonl"
    with path.open("a", encoding="utf-8") as f:
        n = 0
        while path.stat().st_size < megabytes * 1e6:
            big = f"observation {n} " + "lorem ipsum " * 80_000
            event = {
                "kind": "call",
                "role": "agent",
                "prompt": {"messages": [{"role": "user", "content": big}]},
                "reply": big[::-1],
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
            f.write(json.dumps(event) + "\n")
            f.flush()
            n += 1
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=134)
    parser.add_argument(
        "--keep", type=Path, help="write the run and report here instead of a temporary folder"
    )
    parser.add_argument("--transcript-mb", type=float, help="grow one episode's transcript to this many MB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        started = time.perf_counter()
        folder = toy_run(root, "pos", 1 if args.transcript_mb else args.episodes, skill=0.75)
        played = time.perf_counter() - started
        if args.transcript_mb:
            grown = grow_transcript(folder, "toy/000", args.transcript_mb)
            print(f"transcript of toy/000 grown to {grown / 1e6:.1f} MB")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
        started = time.perf_counter()
        html = render([folder])
        built = time.perf_counter() - started
        out = root / "report.html"
        out.write_text(html, encoding="utf-8")
        size = out.stat().st_size
        print(f"run: {1 if args.transcript_mb else args.episodes} PoS episodes played in {played:.1f} s")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # kB → GB
        print(f"report: built in {built:.2f} s, {size / 1e6:.2f} MB ({out if args.keep else 'temporary'})")
        print(f"peak memory of the process: {peak:.3f} GB (before the build: {before:.3f} GB)")
        if args.transcript_mb:
            if size >= 10e6 or peak >= 0.3:
                raise SystemExit(
                    "over budget: a report of a long transcript must be < 10 MB and build in < 0.3 GB"
                )
            return
        if built >= 10 or size >= 20e6:
            raise SystemExit("over budget: the report must build in < 10 s and be < 20 MB")


if __name__ == "__main__":
    main()
