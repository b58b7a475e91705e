"""The analysis and the report read a sweep one transcript at a time (issue 44): with every episode's
`events.jsonl` made large, the memory they take at their peak stays far below the transcripts' total, where
reading them all at once takes more than that total."""

from __future__ import annotations

import json
import shutil
import tracemalloc

from pos_bench import events
from pos_bench.analysis.collect import collect
from pos_bench.report.page import render

BULK = 40
"""Extra call events per transcript, each with a reply of `REPLY` characters."""
REPLY = 50_000


def fattened(fixture, tmp_path):
    """A copy of the PoS fixture run whose transcripts each hold `BULK` large call events more."""
    folder = tmp_path / "toy" / "pos" / "scripted" / "fat"
    shutil.copytree(fixture, folder)
    total = 0
    for path in sorted(folder.glob("episodes/*/events.jsonl")):
        lines = path.read_text().splitlines()
        call = json.loads(next(line for line in lines if json.loads(line).get("kind") == "call"))
        extra = [json.dumps({**call, "reply": f"{i} " + "y" * REPLY}) for i in range(BULK)]
        path.write_text("\n".join([lines[0], *extra, *lines[1:]]) + "\n")
        total += path.stat().st_size
    return folder, total


def peak(work) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_tables_and_report_hold_one_transcript_at_a_time(fixture_runs, tmp_path):
    folder, total = fattened(fixture_runs["toy_pos"], tmp_path)
    episodes = sorted(folder.glob("episodes/*/events.jsonl"))
    assert len(episodes) >= 6 and total > 6 * BULK * REPLY
    everything = peak(lambda: [list(events.read(p)) for p in episodes])
    assert everything > total  # the control: all transcripts at once take more than their size
    tables = peak(lambda: collect([folder], None))
    report = peak(lambda: render([folder], spec=None, with_figures=False))
    print(f"peaks: all at once {everything:,}, tables {tables:,}, report {report:,}, transcripts {total:,}")
    assert tables < total / 3 and report < total / 3, (tables, report, total)
