"""A run folder moved to another results root resumes there under its fingerprint, and the move is recorded in
`run.json` `places`, not refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from pos_bench.runner.places import Place, moved, places
from tests.conftest import REPO


def play(root, limit: int) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "pos_bench",
        "bench=toy",
        f"bench.limit={limit}",
        "method=raw",
        "model=scripted",
        f"results_root={root}",
        "runner.progress=false",
    ]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)


def test_a_run_folder_moved_to_another_results_root_resumes_there(tmp_path):
    first = play(tmp_path / "A", 2)
    assert first.returncode == 0, first.stderr
    (old,) = (tmp_path / "A" / "toy" / "raw" / "scripted").glob("*/run.json")
    fingerprint = json.loads(old.read_text())["identity"]["fingerprint"]
    stamps = {p.parent.name: p.stat().st_mtime_ns for p in old.parent.glob("episodes/*/result.json")}
    # the run folder alone (B has no index.json), renamed on the way
    moved_to = tmp_path / "B" / "toy" / "raw" / "scripted" / "from-the-lab"
    moved_to.parent.mkdir(parents=True)
    shutil.move(old.parent, moved_to)
    shutil.rmtree(tmp_path / "A")
    second = play(tmp_path / "B", 4)
    assert second.returncode == 0, second.stderr
    assert [p.name for p in moved_to.parent.iterdir() if p.is_dir()] == [moved_to.name]
    rows = [json.loads(line) for line in (moved_to / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == [f"toy/00{i}" for i in range(4)]
    assert {
        p.parent.name: p.stat().st_mtime_ns
        for p in moved_to.glob("episodes/*/result.json")
        if p.parent.name in stamps
    } == stamps
    meta = json.loads((moved_to / "run.json").read_text())
    assert meta["identity"]["fingerprint"] == fingerprint
    assert [p["folder"] for p in meta["places"]] == [
        str(old.parent),
        str(moved_to),
    ]
    assert "last written from another folder" in second.stdout
    index = json.loads((moved_to.parent / "index.json").read_text())
    assert [e["folder"] for e in index] == [moved_to.name]


def test_a_new_host_adds_a_place_and_the_same_one_does_not(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    there = Place(host="lab-box", folder="/data/runs/r1", since="2026-12-01T00:00:00Z")
    (run_dir / "run.json").write_text(json.dumps({"places": [vars(there)]}))
    now = Place(host="laptop", folder=str(run_dir), since="2026-12-04T00:00:00Z")
    history = places(run_dir, now)
    assert [p["host"] for p in history] == ["lab-box", "laptop"]
    assert "another machine (lab-box:/data/runs/r1)" in moved(history)
    (run_dir / "run.json").write_text(json.dumps({"places": history}))
    assert places(run_dir, now) == history and places(tmp_path / "absent", now) == [vars(now)]
